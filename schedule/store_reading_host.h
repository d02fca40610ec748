// StoreReadingHost: a SchedulerHost that reads entries from one VolumeStore and sends,
// writes and runs nothing; every peer looks alive with 8 idle slots.  For benchmarks and
// tests of the scheduler's index (what it holds per entry), not for firing.
#pragma once

#include <optional>
#include <string>

#include "schedule/scheduler.h"
#include "schedule/store.h"

namespace caesium::schedule {

class StoreReadingHost : public SchedulerHost {
 public:
  explicit StoreReadingHost(const VolumeStore& store) : store_(store) {}
  void send(const std::string&, FireMessage, bool) override {}
  void store_put(const std::string&, const std::string&, std::string) override {}
  void store_put_lazy(const std::string&, const std::string&, std::string) override {}
  void local_put(const std::string&, std::string) override {}
  void local_erase(const std::string&) override {}
  void invoke(Invocation) override {}
  uint64_t write_mark() const override { return 0; }
  void invoke_after(Invocation, uint64_t) override {}
  void emit(const FireEvent&) override {}
  PeerView peer(const std::string&) const override { return PeerView{true, false, true, true, 1, 0, 8}; }
  std::optional<std::string> store_get(const std::string&, const std::string& key) const override {
    auto r = store_.find(key);
    if (!r || !r->value) return std::nullopt;
    return std::string(*r->value);
  }

 private:
  const VolumeStore& store_;
};

}  // namespace caesium::schedule
