#include "sim/random_faults.h"

#include <algorithm>
#include <cmath>

namespace caesium::sim {

RandomFaultDriver::RandomFaultDriver(World& world, const RandomFaults& spec,
                                     int64_t default_stop_ms, uint64_t seed)
    : world_(world), spec_(spec), stop_ms_(spec.stop_ms < 0 ? default_stop_ms : spec.stop_ms),
      rng_(seed) {}

void RandomFaultDriver::schedule() {
  plan("crash", spec_.crash_rate, &RandomFaultDriver::crash);
  plan("partition", spec_.partition_rate, &RandomFaultDriver::partition);
  plan("cut", spec_.cut_rate, &RandomFaultDriver::cut);
  plan("oneway", spec_.oneway_rate, &RandomFaultDriver::oneway);
  plan("slow", spec_.slow_rate, &RandomFaultDriver::slow);
  plan("skew", spec_.skew_rate, &RandomFaultDriver::skew);
}

void RandomFaultDriver::plan(const char*, double rate_per_hour, void (RandomFaultDriver::*apply)()) {
  if (rate_per_hour <= 0) return;
  const double mean_gap_ms = static_cast<double>(kMsPerHour) / rate_per_hour;
  double t = static_cast<double>(spec_.start_ms);
  for (;;) {
    t += -std::log1p(-rng_.unit()) * mean_gap_ms;
    if (t >= static_cast<double>(stop_ms_)) break;
    world_.at(static_cast<int64_t>(t), [this, apply] { (this->*apply)(); });
  }
}

void RandomFaultDriver::log(FaultSpec::Kind kind, std::vector<uint32_t> nodes, const std::function<void(FaultSpec&)>& fill) {
  if (log_ == nullptr) return;
  FaultSpec f;
  f.kind = kind;
  f.at_ms = world_.now_ms();
  f.where = "random";
  if (kind == FaultSpec::Kind::kCut || kind == FaultSpec::Kind::kOneway || kind == FaultSpec::Kind::kHeal) {
    f.pairs.emplace_back(world_.spec(nodes.at(0)).id, world_.spec(nodes.at(1)).id);
  } else {
    for (uint32_t n : nodes) f.nodes.push_back(world_.spec(n).id);
  }
  if (fill) fill(f);
  log_->push_back(std::move(f));
}

size_t RandomFaultDriver::down_count() const {
  size_t down = 0;
  for (uint32_t i = 0; i < world_.node_count(); ++i) down += world_.is_up(i) ? 0 : 1;
  return down;
}

void RandomFaultDriver::crash() {
  const size_t n = world_.node_count();
  const size_t max_down = spec_.max_down < 0 ? (n - 1) / 2 : static_cast<size_t>(spec_.max_down);
  const auto node = static_cast<uint32_t>(rng_.below(n));
  if (!world_.is_up(node) || down_count() + 1 > max_down) {
    ++skipped_;
    return;
  }
  count("crash");
  world_.crash(node);
  log(FaultSpec::Kind::kCrash, {node});
  const bool wipe = rng_.chance(spec_.wipe_probability);
  const uint32_t gen = world_.generation(node);
  world_.at(world_.now_ms() + hold_ms(), [this, node, wipe, gen] {
    if (world_.is_up(node) || world_.generation(node) != gen) return;  // restarted meanwhile
    world_.restart(node, wipe);
    log(FaultSpec::Kind::kRestart, {node}, [wipe](FaultSpec& f) { f.wipe_disk = wipe; });
  });
}

void RandomFaultDriver::partition() {
  const size_t n = world_.node_count();
  if (n < 2) return;
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  rng_.shuffle(order.begin(), order.end());
  const size_t cut_at = 1 + rng_.below(n - 1);
  std::vector<std::vector<uint32_t>> groups(2);
  for (size_t i = 0; i < n; ++i) groups[i < cut_at ? 0 : 1].push_back(order[i]);
  for (auto& g : groups) std::sort(g.begin(), g.end());
  count("partition");
  world_.partition(groups);
  log(FaultSpec::Kind::kPartition, {}, [&](FaultSpec& f) {
    for (const auto& g : groups) {
      f.groups.emplace_back();
      for (uint32_t member : g) f.groups.back().push_back(world_.spec(member).id);
    }
  });
  const uint64_t token = ++partition_token_;
  world_.at(world_.now_ms() + hold_ms(), [this, token] {
    if (token != partition_token_) return;
    world_.partition({});
    log(FaultSpec::Kind::kPartition, {});
  });
}

std::pair<uint32_t, uint32_t> RandomFaultDriver::random_pair() {
  const size_t n = world_.node_count();
  const auto a = static_cast<uint32_t>(rng_.below(n));
  auto b = static_cast<uint32_t>(rng_.below(n - 1));
  if (b >= a) ++b;
  return {a, b};
}

void RandomFaultDriver::cut() {
  // A non-transitive cut needs a third node to route around.
  if (world_.node_count() < 3) return;
  const auto [a, b] = random_pair();
  count("cut");
  world_.cut(a, b);
  log(FaultSpec::Kind::kCut, {a, b});
  world_.at(world_.now_ms() + hold_ms(), [this, x = a, y = b] {
    world_.heal_pair(x, y);
    log(FaultSpec::Kind::kHeal, {x, y});
  });
}

void RandomFaultDriver::oneway() {
  if (world_.node_count() < 2) return;
  const auto [a, b] = random_pair();
  count("oneway");
  world_.oneway(a, b);
  log(FaultSpec::Kind::kOneway, {a, b});
  world_.at(world_.now_ms() + hold_ms(), [this, x = a, y = b] {
    world_.heal_pair(x, y);
    log(FaultSpec::Kind::kHeal, {x, y});
  });
}

void RandomFaultDriver::slow() {
  const auto node = static_cast<uint32_t>(rng_.below(world_.node_count()));
  count("slow");
  const int64_t hold = hold_ms();
  world_.set_slow(node, spec_.slow_delay_ms, hold);
  log(FaultSpec::Kind::kSlow, {node}, [&](FaultSpec& f) {
    f.delay_ms = spec_.slow_delay_ms;
    f.for_ms = hold;
  });
}

void RandomFaultDriver::skew() {
  const auto node = static_cast<uint32_t>(rng_.below(world_.node_count()));
  // The World's bound (options) clamps drift; offsets are drawn inside it here.
  const int64_t bound = world_.max_skew_ms();
  count("skew");
  // (Drawn drift first, as the call this replaced evaluated its arguments: seeds keep
  // their skews.)
  const double drift = (rng_.unit() * 2 - 1) * 1e-4;
  const int64_t offset = rng_.between(-bound, bound);
  world_.set_skew(node, offset, drift);
  log(FaultSpec::Kind::kSkew, {node}, [&](FaultSpec& f) {
    f.offset_ms = offset;
    f.drift = drift;
  });
}

void RandomFaultDriver::write_figures(Report& report) const {
  for (const auto& [kind, n] : applied_) report.set("random_faults." + kind, static_cast<double>(n));
  report.set("random_faults.skipped", static_cast<double>(skipped_));
}

}  // namespace caesium::sim
