// What a worker runs, and what it reports back.  Produced by the scheduler, run by the
// driver (the daemon's executors, or the simulator's handler model).
#pragma once

#include <cstdint>
#include <string>

namespace caesium::schedule {

// Every invocation carries enough for the handler to tell a duplicate (docs/design.md §6).
struct Invocation {
  uint64_t id = 0;  // unique within this process lifetime; echoed in InvocationResult
  std::string handler;
  std::string volume;
  std::string entity;
  std::string entry;  // the entry's name
  int64_t scheduled_utc_ms = 0;
  std::string fire_id;  // unique per attempt
  uint32_t attempt = 1;
  uint32_t run = 1;  // which run of the occurrence: > 1 for a retry after failed runs
  bool possible_duplicate = false;
  uint64_t sequence = 0;  // 1-based count of this entry's occurrences (Chronos X-Sequence-Number)
  std::string payload;
  int64_t timeout_ms = 0;  // the entry's timeout (0: the handler's own)
};

struct InvocationResult {
  uint64_t id = 0;
  bool ok = false;
  std::string detail;  // exit status, HTTP status, error text
  bool timed_out = false;  // stopped at its timeout (a failure)
  bool replaced = false;   // stopped by SchedulerHost::cancel (overlap = replace; not a failure)
};

}  // namespace caesium::schedule
