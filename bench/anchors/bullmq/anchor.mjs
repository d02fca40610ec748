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
// Usage: node anchor.mjs --socket PATH --redis-pid PID [--jobs 100000] [--window-ms 1000]
//        [--concurrency 200]
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
if (!socket || !(jobs > 0) || !(windowMs > 0) || !(concurrency > 0)) {
  console.error("usage: node anchor.mjs --socket PATH --redis-pid PID [--jobs N] [--window-ms MS] [--concurrency N]");
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

const first = new Float64Array(jobs).fill(-1);
let processed = 0;
let executed = 0;
let duplicates = 0;
let early = 0;
let lastFirst = t0;
const cpuStart = selfCpuS() + processCpuS(redisPid);
let done;
const allDone = new Promise((resolve) => (done = resolve));
const worker = new Worker(
  "anchor",
  async (job) => {
    const now = Date.now();
    const { i, due } = job.data;
    ++processed;
    if (now < due) ++early;
    if (first[i] >= 0) {
      ++duplicates;
    } else {
      first[i] = now - due;
      ++executed;
      if (now > lastFirst) lastFirst = now;
      if (executed === jobs) done();
    }
  },
  { connection, concurrency },
);
const deadline = t0 + windowMs + 60_000;
await Promise.race([allDone, new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
await new Promise((r) => setTimeout(r, 1000));  // late duplicates, if any, get a chance to show
const cpuS = selfCpuS() + processCpuS(redisPid) - cpuStart;
await worker.close();
await queue.close();

const late = [];
for (let i = 0; i < jobs; ++i) if (first[i] >= 0) late.push(first[i]);
late.sort((a, b) => a - b);
const spanS = Math.max(windowMs, lastFirst - t0) / 1000;
console.log(
  JSON.stringify({
    system: "BullMQ 5.81.5 on one Redis (redis-server on a loopback Unix socket, no persistence), one worker process",
    jobs,
    window_ms: windowMs,
    concurrency,
    executed,
    executions: processed,
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
