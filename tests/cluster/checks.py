"""Assertions over fire records (harness.Record) that every scenario shares.

Each check raises harness.TestFailure with the offending records listed, so a failure
says what ran where, not just that a count was wrong.
"""

from collections import defaultdict

from harness import TestFailure, utc


def by_occurrence(records):
    """{(entry, scheduled_ms): [records]}"""
    out = defaultdict(list)
    for r in records:
        out[(r.entry, r.scheduled_ms)].append(r)
    return out


def expected_instants(period_ms, from_ms, to_ms):
    """Scheduled instants of an every-period_ms cron entry in [from_ms, to_ms]."""
    first = (from_ms + period_ms - 1) // period_ms * period_ms
    return list(range(first, to_ms + 1, period_ms))


def amo_at_most_once(records, entry):
    """An at-most-once entry never ran twice for one scheduled instant."""
    bad = {k: v for k, v in by_occurrence(records).items() if k[0] == entry and len(v) > 1}
    if bad:
        lines = ["%s ran more than once (at-most-once violated):" % entry]
        for k in sorted(bad):
            lines += ["  " + repr(r) for r in bad[k]]
        raise TestFailure("\n".join(lines))


def runs_of(records, entry, scheduled_ms):
    return [r for r in records if r.entry == entry and r.scheduled_ms == scheduled_ms]


def each_ran(records, entry, instants, exactly_once=False, what=""):
    """Every instant in `instants` has a run of entry (exactly one with exactly_once)."""
    missing = [t for t in instants if not runs_of(records, entry, t)]
    if missing:
        raise TestFailure("%s: no run for %d of %d occurrences%s: %s" % (
            entry, len(missing), len(instants), (" (" + what + ")") if what else "",
            ", ".join(utc(t) for t in missing)))
    if exactly_once:
        amo_at_most_once([r for r in records if r.scheduled_ms in set(instants)], entry)


def none_ran(records, entry, instants, what):
    ran = [r for r in records if r.entry == entry and r.scheduled_ms in set(instants)]
    if ran:
        raise TestFailure("%s: ran %s, which it must not:\n%s" % (
            entry, what, "\n".join("  " + repr(r) for r in ran)))


def duplicates_are_flagged(records):
    """A client can always tell a duplicate: per occurrence, at most one run is a first
    attempt without the possible_duplicate flag."""
    for k, rs in sorted(by_occurrence(records).items()):
        plain = [r for r in rs if r.attempt == 1 and not r.duplicate]
        if len(plain) > 1:
            raise TestFailure("%s@%s ran %d times as an unflagged first attempt:\n%s" % (
                k[0], utc(k[1]), len(plain), "\n".join("  " + repr(r) for r in plain)))


def never_early(records, slack_ms=0):
    """No handler ran before its scheduled instant (same machine, so one clock)."""
    early = [r for r in records if r.wall_ms + slack_ms < r.scheduled_ms]
    if early:
        raise TestFailure("ran before the scheduled instant:\n" + "\n".join("  " + repr(r) for r in early))


def run_invariants(records, amo_entry="t/amo"):
    """What holds in every scenario: at-most-once never twice, every second run of an
    occurrence flagged possible_duplicate, nothing early."""
    amo_at_most_once(records, amo_entry)
    duplicates_are_flagged(records)
    never_early(records)
