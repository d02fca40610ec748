// The BullMQ anchor of `caesium-bench cluster --anchor bullmq` (run through run.sh, which
// starts the Redis server it talks to): the same burst Caesium is given — N one-shot jobs,
// job i due at T0 + i·window/N — as BullMQ delayed jobs on one Redis, processed by one
// worker process with the given concurrency.  It measures what the benchmark measures of
// Caesium and prints one JSON object:
//   executed, duplicates (a job processed twice), misses (never processed before the
//   deadline), early (processed before its due time), occurrences_per_s (executed /
//   (last first-processing - T0), the span at least the window), lateness p50/p99/max
//   (first processing - due), add_per_s (the load's rate), and CPU per occurrence: this
//   process's user + system time plus the Redis server's, from the end of the load to the
//   last job, over the jobs processed.
// With --rate R (caesium-bench cluster --sustained / --find-capacity): R jobs fall due every
// second for --duration-ms, job i due at T0 + floor(i / R) s + (i % R) · 1000 / R ms, added
// by a producer in this process 1 s + 2 s ahead of each second while the worker processes
// the earlier ones (bench/cluster_sustained.cpp does the same to Caesium).  It prints
// executed, duplicates, misses, early, fired_per_s (first processings within [T0, T0 +
// duration) / duration), lateness p50/p99/max, writer_lag_ms (how far past its own lead
// point the producer finished a second's jobs) and CPU per occurrence (this process and
// the Redis server, from the first add to the last job).
// Usage: node anchor.mjs --socket PATH --redis-pid PID [--jobs 100000] [--window-ms 1000]
//        [--concurrency 200] [--rate R --duration-ms 60000]
import { readFileSync } from "node:fs";
import { Queue, Worker } from "bullmq";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  return v;
}

const socket = arg("socket");
const redisPid = Number(arg("redis-pid", "0"));
const jobs = Number(arg("jobs", "100000"));
const windowMs = Number(arg("window-ms", "1000"));
const concurrency = Number(arg("concurrency", "200"));
const rate = Number(arg("rate", "0"));
const durationMs = Number(arg("duration-ms", "60000"));
if (!socket || !(jobs > 0) || !(windowMs > 0) || !(concurrency > 0) || !(rate >= 0) ||
    !(durationMs >= 1000) || durationMs % 1000 !== 0) {
  console.error("usage: node anchor.mjs --socket PATH --redis-pid PID [--jobs N] [--window-ms MS] [--concurrency N]" +
                " [--rate R --duration-ms MS (whole seconds)]");
  process.exit(2);
}

// CPU seconds of a process from /proc/PID/stat (utime + stime, in clock ticks of 1/100 s).
function processCpuS(pid) {
  if (!pid) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const selfCpuS = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

function pct(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const connection = { path: socket, maxRetriesPerRequest: null };
const queue = new Queue("anchor", { connection });
await queue.obliterate({ force: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const SYSTEM = "BullMQ 5.81.5 on one Redis (redis-server on a loopback Unix socket, no persistence), one worker process";

// The worker both modes measure with: for jobs 0..total-1, each one's first processing
// (lateness = then - due; onFirst(then) is called), duplicates and early runs; allDone
// resolves once every job ran.
function recordingWorker(total, onFirst) {
  const r = { first: new Float64Array(total).fill(-1), processed: 0, executed: 0, duplicates: 0, early: 0 };
  let done;
  r.allDone = new Promise((resolve) => (done = resolve));
  r.worker = new Worker(
    "anchor",
    async (job) => {
      const now = Date.now();
      const { i, due } = job.data;
      ++r.processed;
      if (now < due) ++r.early;
      if (r.first[i] >= 0) {
        ++r.duplicates;
      } else {
        r.first[i] = now - due;
        ++r.executed;
        onFirst(now);
        if (r.executed === total) done();
      }
    },
    { connection, concurrency },
  );
  r.lateSorted = () => {
    const late = [];
    for (let i = 0; i < total; ++i) if (r.first[i] >= 0) late.push(r.first[i]);
    return late.sort((a, b) => a - b);
  };
  return r;
}

if (rate > 0) {
  const seconds = durationMs / 1000;
  const total = rate * seconds;
  const leadMs = 2000;
  const t0 = Math.ceil((Date.now() + leadMs + 2000) / 1000) * 1000 + 1000;
  const dueOf = (i) => t0 + Math.floor(i / rate) * 1000 + Math.floor(((i % rate) * 1000) / rate);
  let inWindow = 0, writerLag = 0;
  const rec = recordingWorker(total, (now) => {
    if (now < t0 + durationMs) ++inWindow;
  });
  const cpuStart = selfCpuS() + processCpuS(redisPid);
  for (let k = 0; k < seconds; ++k) {
    const deadline = t0 + k * 1000 - leadMs;  // second k added by then
    await sleep(deadline - 1000 - Date.now());
    for (let from = k * rate; from < (k + 1) * rate; from += 1000) {
      const out = [];
      for (let i = from; i < Math.min((k + 1) * rate, from + 1000); ++i) {
        const due = dueOf(i);
        out.push({ name: "j", data: { i, due }, opts: { delay: Math.max(0, due - Date.now()), removeOnComplete: true } });
      }
      await queue.addBulk(out);
    }
    writerLag = Math.max(writerLag, Date.now() - deadline);
  }
  const giveUp = t0 + durationMs + 32_000;
  await Promise.race([rec.allDone, sleep(giveUp - Date.now())]);
  const cpuS = selfCpuS() + processCpuS(redisPid) - cpuStart;
  await sleep(1000);  // late duplicates, if any, get a chance to show
  await rec.worker.close();
  await queue.close();
  const late = rec.lateSorted();
  const { executed, duplicates, early } = rec;
  console.log(
    JSON.stringify({
      system: SYSTEM,
      mode: "sustained",
      rate,
      duration_ms: durationMs,
      concurrency,
      executed,
      executions: rec.processed,
      duplicates,
      misses: total - executed,
      early,
      fired_per_s: inWindow / seconds,
      lateness_p50_ms: pct(late, 0.5),
      lateness_p99_ms: pct(late, 0.99),
      lateness_max_ms: late.length ? late[late.length - 1] : 0,
      writer_lag_ms: Math.max(0, writerLag),
      cpu_us_per_occurrence: executed > 0 ? (cpuS * 1e6) / executed : 0,
    }),
  );
  process.exit(0);
}

// Calibration: how fast jobs are added (delayed far ahead, then removed), so T0 leaves
// the load time to finish before the first job is due.
const chunk = 1000;
const batch = (from, to, t0) => {
  const out = [];
  for (let i = from; i < to; ++i) {
    const due = t0 + Math.floor((i * windowMs) / jobs);
    out.push({ name: "j", data: { i, due }, opts: { delay: Math.max(0, due - Date.now()), removeOnComplete: true } });
  }
  return out;
};
let started = Date.now();
await queue.addBulk(batch(0, Math.min(chunk, jobs), Date.now() + 3_600_000));
const addPerSEstimate = Math.min(chunk, jobs) / Math.max(0.001, (Date.now() - started) / 1000);
await queue.obliterate({ force: true });

const leadMs = 2000 + Math.ceil((jobs / addPerSEstimate) * 1000 * 1.5);
const t0 = Date.now() + leadMs;
started = Date.now();
for (let from = 0; from < jobs; from += chunk) await queue.addBulk(batch(from, Math.min(jobs, from + chunk), t0));
const loadS = (Date.now() - started) / 1000;
if (Date.now() > t0) console.error(`anchor: the load ended ${Date.now() - t0} ms after T0; lateness includes it`);

let lastFirst = t0;
const cpuStart = selfCpuS() + processCpuS(redisPid);
const rec = recordingWorker(jobs, (now) => {
  if (now > lastFirst) lastFirst = now;
});
const deadline = t0 + windowMs + 60_000;
await Promise.race([rec.allDone, sleep(deadline - Date.now())]);
await sleep(1000);  // late duplicates, if any, get a chance to show
const cpuS = selfCpuS() + processCpuS(redisPid) - cpuStart;
await rec.worker.close();
await queue.close();
const { executed, duplicates, early } = rec;
const late = rec.lateSorted();
const spanS = Math.max(windowMs, lastFirst - t0) / 1000;
console.log(
  JSON.stringify({
    system: SYSTEM,
    jobs,
    window_ms: windowMs,
    concurrency,
    executed,
    executions: rec.processed,
    duplicates,
    misses: jobs - executed,
    early,
    occurrences_per_s: executed / spanS,
    lateness_p50_ms: pct(late, 0.5),
    lateness_p99_ms: pct(late, 0.99),
    lateness_max_ms: late.length ? late[late.length - 1] : 0,
    add_per_s: jobs / loadS,
    cpu_us_per_occurrence: executed > 0 ? (cpuS * 1e6) / executed : 0,
  }),
);
process.exit(0);
