#!/usr/bin/env python3
"""Runs one real-process cluster scenario (docs/testing.md lists them).

  python3 tests/cluster/run.py --bin build/release/node/caesium SCENARIO [--keep] [--timeout S]

Exit status: 0 passed, 1 failed (what the run saw is printed: timeline, log tails, fire
records), 77 skipped (the reason is printed; ctest shows it as skipped).  --keep leaves
the run's directory (configs, logs, records, data) in $TMPDIR for a look afterwards.
Every process and network namespace the run made is removed on every path: pass, fail,
Ctrl-C, SIGTERM or the --timeout alarm.  Nodes die with this process even on SIGKILL.
"""

import argparse
import importlib
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Run, TestFailure, TestSkip  # noqa: E402

# scenario name -> (module, function)
SCENARIOS = {
    "smoke": ("scenario_smoke", "smoke"),
    "example": ("scenario_smoke", "example_cluster"),
    "master_kill": ("scenario_master_kill", "master_kill"),
    "restart": ("scenario_restart", "restart"),
    "partition": ("scenario_partition", "partition"),
    "hostile": ("scenario_hostile", "hostile"),
    "full_restart": ("scenario_full_restart", "full_restart"),
    "reconfig": ("scenario_reconfig", "reconfig"),
    "forbid": ("scenario_forbid", "forbid"),
    "paused": ("scenario_paused", "paused"),
}


class Interrupted(BaseException):
    pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--bin", required=True, help="the caesium binary")
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--timeout", type=int, default=240, help="seconds before the run gives up (cleanly)")
    p.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), help="the repository (for examples/)")
    args = p.parse_args()
    if not os.access(args.bin, os.X_OK):
        print("no caesium binary at %s" % args.bin, file=sys.stderr)
        return 2

    def interrupt(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(s, interrupt)
    signal.alarm(args.timeout)

    module, fn = SCENARIOS[args.scenario]
    run = Run(args.scenario, args.bin, keep=args.keep)
    run.source_dir = args.source_dir
    started = time.monotonic()
    status = 1
    try:
        getattr(importlib.import_module(module), fn)(run)
        status = 0
    except TestSkip as e:
        print("SKIP %s: %s" % (args.scenario, e))
        status = 77
    except TestFailure as e:
        print("\nFAIL %s: %s" % (args.scenario, e))
        run.report()
    except Interrupted as e:
        why = "timed out after %d s" % args.timeout if str(e) == "SIGALRM" else "interrupted by %s" % e
        print("\nFAIL %s: %s" % (args.scenario, why))
        traceback.print_exc()
        run.report()
    except Exception:
        print("\nFAIL %s: the harness raised" % args.scenario)
        traceback.print_exc()
        run.report()
    finally:
        signal.alarm(0)
        # A second signal during cleanup must not leave namespaces behind.
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        run.cleanup()
    if status == 0:
        print("PASS %s in %.1f s" % (args.scenario, time.monotonic() - started))
    if args.keep:
        print("run directory kept: %s" % run.dir)
    return status


if __name__ == "__main__":
    sys.exit(main())
