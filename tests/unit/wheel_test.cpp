// TimingWheel against a reference model, plus the edge cases named in issue 2.
//
// The model is a std::map ordered by (effective deadline, insertion sequence), which is
// the order the wheel promises (timing_wheel.h).  Random runs take a seed; a failure
// prints it, and CAESIUM_SEED=<seed> replays just that seed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "tests/unit/test_seed.h"
#include "wheel/timing_wheel.h"

using caesium::Rng;
using caesium::wheel::Expired;
using caesium::wheel::Handle;
using caesium::wheel::TimingWheel;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kEpochMs = 1'800'000'000'000;  // ~2027 in Unix-epoch milliseconds
constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kYearMs = 365LL * 24 * kHourMs;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

// Polls with a callback that may REQUIRE: the wheel's callback must not throw (it would
// terminate), so a failed assertion is caught here and rethrown once the poll returns.
template <class F>
size_t guarded_poll(TimingWheel& w, int64_t now_ms, F&& body) {
  std::exception_ptr failure;
  const size_t n = w.poll(now_ms, [&](const Expired& e) {
    if (failure) return;
    try {
      body(e);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  return n;
}

uint64_t handle_key(Handle h) { return (uint64_t{h.index} << 32) | h.generation; }

// The reference: what should be pending, and in which order it should fire.
class Model {
 public:
  struct Timer {
    Handle handle;
    int64_t deadline_ms;
    uint64_t payload;
  };
  using Key = std::pair<int64_t, uint64_t>;  // (effective deadline, insertion sequence)

  explicit Model(int64_t start_ms) : now_ms_(start_ms) {}

  void insert(Handle h, int64_t deadline_ms, uint64_t payload) {
    const Key key{std::max(deadline_ms, now_ms_), seq_++};
    by_key_[key] = Timer{h, deadline_ms, payload};
    by_handle_[handle_key(h)] = key;
  }
  bool cancel(Handle h) {
    auto it = by_handle_.find(handle_key(h));
    if (it == by_handle_.end()) return false;
    by_key_.erase(it->second);
    by_handle_.erase(it);
    return true;
  }
  bool reschedule(Handle h, int64_t deadline_ms) {
    auto it = by_handle_.find(handle_key(h));
    if (it == by_handle_.end()) return false;
    const uint64_t payload = by_key_.at(it->second).payload;
    cancel(h);
    insert(h, deadline_ms, payload);
    return true;
  }
  // Starts a poll: returns the sequence boundary (timers inserted from now on belong to
  // the next poll).  REQUIRES: now_ms >= now().
  uint64_t begin_poll(int64_t now_ms) {
    now_ms_ = now_ms;
    return seq_;
  }
  // The next timer this poll must fire, removed from the model.
  std::optional<Timer> pop_due(uint64_t boundary) {
    if (by_key_.empty()) return std::nullopt;
    auto it = by_key_.begin();
    if (it->first.first > now_ms_ || it->first.second >= boundary) return std::nullopt;
    const Timer t = it->second;
    by_handle_.erase(handle_key(t.handle));
    by_key_.erase(it);
    return t;
  }
  std::optional<int64_t> earliest() const {
    if (by_key_.empty()) return std::nullopt;
    return by_key_.begin()->first.first;
  }
  bool has(Handle h) const { return by_handle_.count(handle_key(h)) != 0; }
  size_t size() const { return by_key_.size(); }
  int64_t now() const { return now_ms_; }

 private:
  std::map<Key, Timer> by_key_;
  std::map<uint64_t, Key> by_handle_;
  uint64_t seq_ = 0;
  int64_t now_ms_;
};

// One seeded random run.  `exact` runs never remove timers except by firing, so
// next_deadline() must be exact throughout.  `churn` runs crowd deadlines into a few
// buckets and cancel a lot, so that tombstones pile up and buckets get compacted.
struct Run {
  Rng rng;
  bool exact;
  bool churn;
  bool vector_form;
  TimingWheel wheel;
  Model model;
  std::vector<Handle> handles;  // every handle issued, stale ones included
  std::vector<int64_t> deadlines;  // recent deadlines, to make ties
  uint64_t next_payload = 1;

  static int64_t pick_start(Rng& r) {
    switch (r.below(5)) {
      case 0: return 0;
      case 1: return kEpochMs + r.between(0, kYearMs);
      case 2: return -r.between(0, 1LL << 40);
      case 3: return kMax - r.between(0, 1LL << 36);
      default: return kMin + r.between(0, 1LL << 20);
    }
  }

  explicit Run(uint64_t seed)
      : rng(seed), exact(rng.chance(0.15)), churn(!exact && rng.chance(0.3)),
        vector_form(rng.chance(0.2)), wheel(pick_start(rng)), model(wheel.now()),
        cluster_ms(sat_add(wheel.now(), rng.between(70'000, 5'000'000))) {}

  int64_t cluster_ms;  // where churn runs crowd their deadlines

  int64_t pick_deadline(int64_t now) {
    if (churn && rng.chance(0.7)) return sat_add(cluster_ms, rng.between(0, 40));
    if (!deadlines.empty() && rng.chance(0.15)) return deadlines[rng.below(deadlines.size())];
    int64_t d;
    switch (rng.below(10)) {
      case 0: d = sat_add(now, -rng.between(1, 5000)); break;       // past
      case 1: d = now; break;
      case 2: case 3: d = sat_add(now, rng.between(1, 300)); break;  // level 0/1
      case 4: case 5: d = sat_add(now, rng.between(1, 200'000)); break;
      case 6: d = sat_add(now, rng.between(1, kHourMs)); break;
      case 7: d = sat_add(now, rng.between(1, 40 * kYearMs)); break;  // years
      case 8: d = static_cast<int64_t>(rng.next_u64()); break;         // anywhere in int64
      default: d = rng.chance(0.5) ? kMax - rng.between(0, 3) : sat_add(now, rng.between(1, 1 << 20));
    }
    deadlines.push_back(d);
    if (deadlines.size() > 64) deadlines.erase(deadlines.begin());
    return d;
  }

  int64_t pick_poll_time(int64_t now) {
    if (churn && rng.chance(0.8)) return sat_add(now, rng.between(0, 3));
    switch (rng.below(12)) {
      case 0: return now;
      case 1: case 2: return sat_add(now, 1);
      case 3: case 4: return sat_add(now, rng.between(2, 300));
      case 5: return sat_add(now, rng.between(300, 300'000));
      case 6: return sat_add(now, rng.between(1, 50 * kYearMs));  // huge jump
      case 7: return rng.chance(0.1) ? kMax : sat_add(now, rng.between(1, 1LL << 50));
      case 8: return sat_add(now, -rng.between(1, 1000));  // backwards: a no-op
      default: {
        const auto nd = wheel.next_deadline();
        return nd ? std::max(*nd, now) : sat_add(now, 10);
      }
    }
  }

  Handle random_handle() {
    if (handles.empty() || rng.chance(0.02)) return Handle{};  // never issued
    if (churn) {  // mostly pending ones, so that cancels land
      for (int tries = 0; tries < 4; ++tries) {
        const Handle h = handles[rng.below(handles.size())];
        if (model.has(h)) return h;
      }
    }
    return handles[handles.size() - 1 - rng.below(std::min<size_t>(handles.size(), 200))];
  }

  void do_insert() {
    const int64_t d = pick_deadline(wheel.now());
    const uint64_t payload = next_payload++;
    const Handle h = wheel.insert(d, payload);
    REQUIRE_FALSE(model.has(h));  // a fresh handle never aliases a pending one
    model.insert(h, d, payload);
    handles.push_back(h);
  }

  void do_cancel(Handle h) {
    const bool expect = model.cancel(h);
    REQUIRE(wheel.cancel(h) == expect);
  }

  void do_reschedule(Handle h) {
    const int64_t d = pick_deadline(wheel.now());
    const bool expect = model.reschedule(h, d);
    REQUIRE(wheel.reschedule(h, d) == expect);
  }

  // One random mutation; also what callbacks do in the middle of a poll.
  void mutate() {
    const uint64_t r = rng.below(10);
    if (exact || r < (churn ? 4 : 5)) {
      do_insert();
    } else if (r < 8) {
      do_cancel(random_handle());
    } else {
      do_reschedule(random_handle());
    }
  }

  void do_poll() {
    const int64_t before = wheel.now();
    const int64_t t = pick_poll_time(before);
    if (t < before) {
      REQUIRE(guarded_poll(wheel, t, [](const Expired&) { FAIL("a backwards poll fired a timer"); }) == 0);
      REQUIRE(wheel.now() == before);
      return;
    }
    const uint64_t boundary = model.begin_poll(t);
    size_t delivered = 0;
    auto check = [&](const Expired& e) {
      const auto want = model.pop_due(boundary);
      REQUIRE(want.has_value());
      REQUIRE(e.handle == want->handle);
      REQUIRE(e.deadline_ms == want->deadline_ms);
      REQUIRE(e.payload == want->payload);
      REQUIRE(e.deadline_ms <= t);  // never early
      ++delivered;
    };
    size_t fired;
    if (vector_form) {
      std::vector<Expired> out;
      fired = wheel.poll(t, out);
      REQUIRE(out.size() == fired);
      for (const Expired& e : out) check(e);
    } else {
      fired = guarded_poll(wheel, t, [&](const Expired& e) {
        REQUIRE(wheel.now() == t);
        check(e);
        REQUIRE_FALSE(wheel.cancel(e.handle));  // it has fired
        REQUIRE(wheel.poll(t, [](const Expired&) {}) == 0);  // no reentrant poll
        const int actions = static_cast<int>(rng.below(3));
        for (int i = 0; i < actions; ++i) mutate();
      });
    }
    REQUIRE(fired == delivered);
    // At most one tick late: nothing due by t is left behind, except what callbacks
    // added during this poll (which belongs to the next one).
    REQUIRE_FALSE(model.pop_due(boundary).has_value());
    REQUIRE(wheel.now() == t);
  }

  void check_state(bool audit) {
    REQUIRE(wheel.size() == model.size());
    if (audit) {  // the O(slab + buckets) audit; not after every single mutation
      const auto st = wheel.check_invariants();
      INFO((st.ok() ? std::string() : st.error().message));
      REQUIRE(st.ok());
    }
    const auto nd = wheel.next_deadline();
    const auto earliest = model.earliest();
    REQUIRE(nd.has_value() == earliest.has_value());
    if (!nd) return;
    REQUIRE(*nd <= *earliest);  // never later than the true earliest
    if (*earliest <= wheel.now()) {
      REQUIRE(*nd == wheel.now());
    } else {
      REQUIRE(*nd > wheel.now());  // never asks for a busy loop
    }
    if (exact) REQUIRE(*nd == *earliest);
  }

  void step(int i) {
    const bool poll = rng.chance(churn ? 0.1 : 0.35);
    if (poll) {
      do_poll();
    } else {
      mutate();
    }
    check_state(poll || i % 8 == 0);
  }
};

std::vector<uint64_t> seeds_to_run(uint64_t first, uint64_t count) {
  if (const char* env = std::getenv("CAESIUM_SEED")) return {std::strtoull(env, nullptr, 0)};
  std::vector<uint64_t> seeds;
  for (uint64_t i = 0; i < count; ++i) seeds.push_back(first + i);
  return seeds;
}

std::vector<Expired> poll_all(TimingWheel& w, int64_t now_ms) {
  std::vector<Expired> out;
  w.poll(now_ms, out);
  return out;
}

std::vector<uint64_t> payloads(const std::vector<Expired>& v) {
  std::vector<uint64_t> p;
  for (const auto& e : v) p.push_back(e.payload);
  return p;
}

}  // namespace

TEST_CASE("wheel matches the reference model over random operation sequences", "[wheel][property]") {
  for (const uint64_t seed : seeds_to_run(1, caesium::test::seed_count(1500, 300))) {
    INFO("seed " << seed << "  (replay: CAESIUM_SEED=" << seed << ")");
    Run run(seed);
    CAPTURE(run.exact, run.churn, run.vector_form);
    const int steps = run.churn ? 1200 : 400;
    for (int i = 0; i < steps; ++i) run.step(i);
    // Drain: a poll at the end of time fires everything still pending, in order.
    const uint64_t boundary = run.model.begin_poll(kMax);
    std::vector<Expired> out;
    run.wheel.poll(kMax, out);
    for (const Expired& e : out) {
      const auto want = run.model.pop_due(boundary);
      REQUIRE(want.has_value());
      REQUIRE(e.handle == want->handle);
    }
    REQUIRE(run.model.size() == 0);
    REQUIRE(run.wheel.size() == 0);
    REQUIRE_FALSE(run.wheel.next_deadline().has_value());
  }
}

TEST_CASE("deadlines already past fire on the next poll, in insertion order", "[wheel]") {
  TimingWheel w(1000);
  w.insert(999, 1);
  w.insert(5, 2);
  w.insert(1000, 3);
  w.insert(kMin, 4);
  CHECK(w.next_deadline() == 1000);  // due now
  const auto out = poll_all(w, 1000);  // a poll at the same time still fires them
  CHECK(payloads(out) == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(out[1].deadline_ms == 5);  // reported as given
  CHECK(w.size() == 0);
}

TEST_CASE("equal deadlines keep insertion order across cascades", "[wheel]") {
  for (const int64_t start : {int64_t{0}, kEpochMs, int64_t{-77}}) {
    INFO("start " << start);
    TimingWheel w(start);
    const int64_t d = start + 70'000 + 13;  // starts at level 2
    w.insert(d, 1);
    w.insert(d + 1, 100);
    w.insert(d, 2);
    poll_all(w, d - 300);  // the first two now sit at level 1 ...
    w.insert(d, 3);
    poll_all(w, d - 5);  // ... then level 0
    w.insert(d, 4);
    w.insert(d - 5, 0);  // overdue: fires first
    const auto out = poll_all(w, d + 1);
    CHECK(payloads(out) == std::vector<uint64_t>{0, 1, 2, 3, 4, 100});
  }
}

TEST_CASE("a reschedule orders as a new insertion", "[wheel]") {
  TimingWheel w(0);
  const Handle a = w.insert(50, 1);
  w.insert(50, 2);
  CHECK(w.reschedule(a, 50));
  CHECK(payloads(poll_all(w, 50)) == std::vector<uint64_t>{2, 1});
}

TEST_CASE("never early, at most one tick late, when polled every millisecond", "[wheel]") {
  Rng rng(11);
  TimingWheel w(kEpochMs);
  std::map<uint64_t, int64_t> deadline_of;
  for (uint64_t p = 0; p < 5000; ++p) {
    const int64_t d = kEpochMs + rng.between(1, 70'000);
    deadline_of[p] = d;
    w.insert(d, p);
  }
  size_t fired = 0;
  for (int64_t t = kEpochMs + 1; t <= kEpochMs + 70'000; ++t) {
    guarded_poll(w, t, [&](const Expired& e) {
      REQUIRE(e.deadline_ms == deadline_of.at(e.payload));
      REQUIRE(e.deadline_ms == t);  // polled every tick: fired exactly at its deadline
      ++fired;
    });
  }
  CHECK(fired == 5000);
}

TEST_CASE("huge deadlines and huge jumps", "[wheel]") {
  TimingWheel w(kEpochMs);
  w.insert(kMax, 1);
  w.insert(kMax - 1, 2);
  w.insert(kEpochMs + 100 * kYearMs, 3);
  w.insert(kEpochMs + 30 * kYearMs + 17, 4);
  w.insert(kEpochMs + 1, 5);
  CHECK(w.next_deadline() == kEpochMs + 1);
  CHECK(payloads(poll_all(w, kEpochMs + 10 * kYearMs)) == std::vector<uint64_t>{5});
  CHECK(w.next_deadline() == kEpochMs + 30 * kYearMs + 17);  // exact: nothing was cancelled
  CHECK(payloads(poll_all(w, kEpochMs + 30 * kYearMs + 16)).empty());
  CHECK(payloads(poll_all(w, kEpochMs + 30 * kYearMs + 17)) == std::vector<uint64_t>{4});
  CHECK(payloads(poll_all(w, kMax - 2)) == std::vector<uint64_t>{3});
  CHECK(w.next_deadline() == kMax - 1);
  CHECK(payloads(poll_all(w, kMax)) == std::vector<uint64_t>{2, 1});
  CHECK(w.check_invariants().ok());
  // At the end of time, everything is overdue at once.
  w.insert(kMax, 6);
  CHECK(w.next_deadline() == kMax);
  CHECK(payloads(poll_all(w, kMax)) == std::vector<uint64_t>{6});
}

TEST_CASE("negative and monotonic-from-zero times work like any other", "[wheel]") {
  TimingWheel w(-1000);
  w.insert(-1, 1);
  w.insert(0, 2);
  w.insert(-999, 3);
  w.insert(1, 4);
  CHECK(payloads(poll_all(w, 0)) == std::vector<uint64_t>{3, 1, 2});
  CHECK(payloads(poll_all(w, 1)) == std::vector<uint64_t>{4});
}

TEST_CASE("time never goes backwards", "[wheel]") {
  TimingWheel w(500);
  w.insert(400, 1);
  CHECK(w.poll(499, [](const Expired&) {}) == 0);
  CHECK(w.now() == 500);
  CHECK(w.size() == 1);
  CHECK(w.poll(500, [](const Expired&) {}) == 1);
}

TEST_CASE("handles are generational", "[wheel]") {
  TimingWheel w(0);
  const Handle a = w.insert(10, 1);
  CHECK(w.cancel(a));
  CHECK_FALSE(w.cancel(a));  // cancelled twice
  const Handle b = w.insert(20, 2);
  CHECK(b.index == a.index);  // the slot is reused ...
  CHECK_FALSE(w.cancel(a));   // ... and the old handle cannot touch the new timer
  CHECK_FALSE(w.reschedule(a, 5));
  CHECK(w.pending(b));
  CHECK_FALSE(w.cancel(Handle{}));
  CHECK_FALSE(w.cancel(Handle{0, 0}));
  CHECK_FALSE(w.cancel(Handle{12345, 1}));
  const auto out = poll_all(w, 20);
  REQUIRE(out.size() == 1);
  CHECK(out[0].handle == b);
  CHECK_FALSE(w.pending(b));
  CHECK_FALSE(w.reschedule(b, 100));  // a fired timer is not revived
  CHECK_FALSE(w.cancel(b));
  CHECK(w.size() == 0);
  CHECK_FALSE(w.next_deadline().has_value());
}

TEST_CASE("cancel from inside a poll callback", "[wheel]") {
  TimingWheel w(0);
  const Handle first = w.insert(10, 1);
  const Handle due_later_in_poll = w.insert(10, 2);
  const Handle due_in_next_slot = w.insert(12, 3);
  const Handle future = w.insert(5000, 4);
  std::vector<uint64_t> seen;
  w.poll(20, [&](const Expired& e) {
    seen.push_back(e.payload);
    if (e.payload == 1) {
      CHECK_FALSE(w.cancel(first));  // itself: already fired
      CHECK(w.cancel(due_later_in_poll));
      CHECK(w.cancel(due_in_next_slot));
      CHECK(w.cancel(future));
    }
  });
  CHECK(seen == std::vector<uint64_t>{1});
  CHECK(w.size() == 0);
  CHECK(w.check_invariants().ok());
  CHECK(poll_all(w, 10'000).empty());
}

TEST_CASE("insert and reschedule from inside a poll callback", "[wheel]") {
  TimingWheel w(0);
  const Handle later = w.insert(15, 2);
  const Handle moved = w.insert(16, 3);
  w.insert(10, 1);
  std::vector<uint64_t> seen;
  w.poll(20, [&](const Expired& e) {
    seen.push_back(e.payload);
    if (e.payload == 1) {
      w.insert(5, 10);    // past: next poll, not this one
      w.insert(20, 11);   // due at the poll's now: next poll too
      w.insert(18, 12);   // between the firing time and now: next poll as well
      w.insert(21, 13);   // future: fires when due
      CHECK(w.reschedule(moved, 19));  // re-inserted during the poll: next poll
      CHECK(w.pending(later));
    }
    if (e.payload == 2) w.insert(10, 14);  // a re-arm at "now" cannot loop forever
  });
  CHECK(seen == std::vector<uint64_t>{1, 2});
  CHECK(w.next_deadline() == 20);
  CHECK(payloads(poll_all(w, 20)) == std::vector<uint64_t>{10, 11, 12, 3, 14});
  CHECK(payloads(poll_all(w, 21)) == std::vector<uint64_t>{13});
}

TEST_CASE("next_deadline is a never-late bound that refines without spinning", "[wheel]") {
  TimingWheel w(0);
  CHECK_FALSE(w.next_deadline().has_value());
  const Handle a = w.insert(100'000, 1);  // level 2
  w.insert(100'500, 2);                   // same level-2 bucket
  CHECK(w.next_deadline() == 100'000);
  CHECK(w.cancel(a));
  const auto bound = w.next_deadline();
  REQUIRE(bound.has_value());
  CHECK(*bound <= 100'500);
  CHECK(*bound > 0);
  // Follow next_deadline like a driver: it reaches the timer exactly, with a bounded
  // number of polls that fire nothing.
  int empty_polls = 0;
  std::vector<int64_t> fired_at;
  while (auto nd = w.next_deadline()) {
    if (w.poll(*nd, [&](const Expired&) { fired_at.push_back(*nd); }) == 0) ++empty_polls;
    REQUIRE(empty_polls <= TimingWheel::kLevels);
  }
  CHECK(fired_at == std::vector<int64_t>{100'500});
}

TEST_CASE("memory stays within 48 bytes per pending timer", "[wheel]") {
  Rng rng(3);
  {  // a small wheel stays small: the simulator runs one per node
    TimingWheel small(0);
    for (int i = 0; i < 100; ++i) small.insert(rng.between(1, kHourMs), 0);
    CHECK(small.memory_bytes() < 80 * 1024);
  }
  TimingWheel w(kEpochMs);
  const int n = 1 << 20;
  for (int i = 0; i < n; ++i) w.insert(kEpochMs + rng.between(1, kHourMs), static_cast<uint64_t>(i));
  const double per_timer = static_cast<double>(w.memory_bytes()) / static_cast<double>(w.size());
  INFO("bytes per timer " << per_timer);
  CHECK(per_timer <= 48.0);
  // Cancelling half at random leaves tombstones; compaction keeps them bounded.
  std::vector<Handle> hs;
  TimingWheel w2(0);
  for (int i = 0; i < 100'000; ++i) hs.push_back(w2.insert(rng.between(1, kHourMs), 0));
  rng.shuffle(hs.begin(), hs.end());
  for (int i = 0; i < 50'000; ++i) REQUIRE(w2.cancel(hs[static_cast<size_t>(i)]));
  CHECK(w2.check_invariants().ok());
}

TEST_CASE("reserve preallocates the slab without changing behaviour", "[wheel]") {
  TimingWheel w(0);
  w.reserve(200'000);
  const size_t reserved = w.memory_bytes();
  CHECK(reserved >= 200'000 * 32);
  for (uint64_t i = 0; i < 1000; ++i) w.insert(static_cast<int64_t>(1000 - i), i);
  CHECK(w.memory_bytes() - reserved < 64 * 1024);  // only bucket arrays grew
  CHECK(w.check_invariants().ok());
  w.reserve(10);  // never shrinks
  CHECK(w.memory_bytes() >= reserved);
  const auto out = poll_all(w, 1000);
  REQUIRE(out.size() == 1000);
  CHECK(out.front().payload == 999);
  CHECK(out.back().payload == 0);
}
