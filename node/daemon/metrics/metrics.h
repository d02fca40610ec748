// Prometheus metrics for GET /metrics (text exposition format 0.0.4).  docs/api.md lists
// every metric.
//
// Occurrence-level counts come from the Node's fire events: the runtime observes them as
// they happen (Node::set_fire_observer) and hands each to FireMetrics::on_fire.
// Everything else is read when the page is rendered: the Node's counters and views, the
// daemon's storage and transport metrics, the API's counters.  All counts are this
// node's, since it started; sum over nodes in Prometheus for the cluster.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "node/core/node.h"
#include "node/daemon/api/api.h"
#include "node/daemon/http/http_server.h"
#include "node/daemon/metrics/runtime_metrics.h"

namespace caesium::daemon {

class FireMetrics {
 public:
  // Fire lateness buckets (upper bounds, ms): how long after an occurrence's fire time
  // (scheduled + jitter) its owner dispatched the first attempt.
  static constexpr std::array<int64_t, 15> kLatenessBoundsMs = {1,   2,    5,    10,   20,    50,    100,  250,
                                                                500, 1000, 2500, 5000, 10000, 30000, 60000};

  struct Counts {
    // [semantics: 0 at_least_once, 1 at_most_once][path: quorum, degraded, takeover]
    std::array<std::array<uint64_t, 3>, 2> fired{};
    uint64_t due = 0, granted = 0, dispatched = 0, redispatched = 0;
    uint64_t withheld = 0, missed = 0, lost = 0, skipped = 0, skipped_overlap = 0;
    uint64_t accepted = 0, completed_ok = 0, completed_failed = 0;
    uint64_t retries = 0;         // retries this node scheduled as owner (kRetryScheduled)
    uint64_t duplicate_runs = 0;  // attempts > 1 that a worker accepted (so ran)
    std::array<uint64_t, kLatenessBoundsMs.size() + 1> lateness{};  // not cumulative; last = above
    uint64_t lateness_count = 0;
    int64_t lateness_sum_ms = 0;
  };

  // Counts one fire event.
  void on_fire(const schedule::FireEvent& f);
  const Counts& counts() const { return counts_; }

 private:
  Counts counts_;
};

// What one rendering reads.  Everything but `node` is optional (nullptr = left out).
struct MetricsInputs {
  const node::Node* node = nullptr;
  const FireMetrics* fire = nullptr;
  const DaemonMetrics* daemon = nullptr;
  const ApiCounters* api = nullptr;
  const HttpServerStats* http = nullptr;
};

// The /metrics page.  Families are in a fixed order and label sets sorted, so the same
// state renders the same text.  REQUIRES: in.node != nullptr.
std::string render_metrics(const MetricsInputs& in);

// Schedule entries in a store: its records before the occurrence records ("~occ/..."
// sorts after every entity), counted by key shape.  O(entries + other entity records);
// render_metrics calls it once per volume per scrape.
size_t count_entries(const schedule::VolumeStore& store);

// "alive", "suspect", "dead", "left".
const char* member_state_label(gossip::MemberState state);

// Writes the Prometheus text format: "# HELP", "# TYPE", then samples.  Label values
// are escaped (backslash, double quote, newline).
class PromWriter {
 public:
  void family(const std::string& name, const char* type, const std::string& help);
  void sample(const std::string& name, const std::map<std::string, std::string>& labels, double value);
  void sample(const std::string& name, double value) { sample(name, {}, value); }
  // A histogram from non-cumulative bucket counts with upper bounds in `unit_per_second`
  // units (1000 for ms, 1e6 for us); the last count is the +Inf bucket.
  template <size_t N>
  void histogram(const std::string& name, const std::string& help, const std::array<int64_t, N>& bounds,
                 const std::array<uint64_t, N + 1>& counts, uint64_t count, double sum, double unit_per_second) {
    family(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < N; ++i) {
      cumulative += counts[i];
      sample(name + "_bucket", {{"le", format_value(static_cast<double>(bounds[i]) / unit_per_second)}},
             static_cast<double>(cumulative));
    }
    sample(name + "_bucket", {{"le", "+Inf"}}, static_cast<double>(count));
    sample(name + "_sum", sum / unit_per_second);
    sample(name + "_count", static_cast<double>(count));
  }
  const std::string& text() const { return out_; }
  static std::string format_value(double v);

 private:
  std::string out_;
};

}  // namespace caesium::daemon
