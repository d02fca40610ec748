#include "sim/report.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

#include "base/time.h"

namespace caesium::sim {

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  assert(!sorted.empty());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

void Report::add_summary(const std::string& prefix, std::vector<int64_t> samples) {
  figures[prefix + ".count"] += static_cast<double>(samples.size());
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (int64_t s : samples) sum += static_cast<double>(s);
  figures[prefix + ".mean"] = sum / static_cast<double>(samples.size());
  figures[prefix + ".p50"] = static_cast<double>(percentile(samples, 50));
  figures[prefix + ".p99"] = static_cast<double>(percentile(samples, 99));
  figures[prefix + ".max"] = static_cast<double>(samples.back());
}

nlohmann::json Report::to_json() const {
  nlohmann::json j;
  j["scenario"] = scenario;
  j["seed"] = seed;
  j["replay"] = replay;
  j["virtual_ms"] = virtual_ms;
  j["events"] = events;
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(trace_hash));
  j["trace_hash"] = hash;
  j["passed"] = passed();
  j["figures"] = nlohmann::json::object();
  for (const auto& [name, value] : figures) j["figures"][name] = value;
  j["violations"] = nlohmann::json::array();
  for (const auto& v : violations) {
    j["violations"].push_back({{"invariant", v.invariant},
                               {"detail", v.detail},
                               {"time_ms", v.time_ms},
                               {"node", v.node}});
  }
  j["expect_failures"] = expect_failures;
  return j;
}

namespace {

std::string format_value(double v) {
  char buf[48];
  if (std::floor(v) == v && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

}  // namespace

std::string Report::to_text() const {
  std::string out;
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(trace_hash));
  out += "scenario   " + scenario + "\n";
  out += "seed       " + std::to_string(seed) + "\n";
  out += "virtual    " + format_duration_ms(virtual_ms) + "\n";
  out += "events     " + std::to_string(events) + "\n";
  out += "trace hash " + std::string(hash) + "\n";
  std::string area;
  for (const auto& [name, value] : figures) {
    const std::string this_area = name.substr(0, name.find('.'));
    if (this_area != area) {
      area = this_area;
      out += "\n[" + area + "]\n";
    }
    out += "  " + name;
    out += std::string(name.size() < 52 ? 52 - name.size() : 1, ' ');
    out += format_value(value) + "\n";
  }
  if (!violations.empty()) {
    out += "\nINVARIANT VIOLATIONS (" + std::to_string(violations.size()) + ")\n";
    for (const auto& v : violations) {
      out += "  [" + v.invariant + "]";
      if (v.time_ms >= 0) out += " at " + format_duration_ms(v.time_ms);
      if (!v.node.empty()) out += " on " + v.node;
      out += ": " + v.detail + "\n";
    }
  }
  if (!expect_failures.empty()) {
    out += "\nEXPECTATIONS NOT MET (" + std::to_string(expect_failures.size()) + ")\n";
    for (const auto& e : expect_failures) out += "  " + e + "\n";
  }
  out += passed() ? "\nPASS\n" : "\nFAIL  replay: " + replay + "\n";
  return out;
}

}  // namespace caesium::sim
