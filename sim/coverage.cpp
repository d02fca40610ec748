#include "sim/coverage.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "schedule/marks.h"

namespace caesium::sim {

std::vector<uint64_t> mark_counts() {
  std::vector<uint64_t> out(schedule::kMarkCount);
  for (size_t i = 0; i < out.size(); ++i) out[i] = schedule::mark_hits(schedule::mark_at(i));
  return out;
}

std::string format_marks_hit(const std::vector<uint64_t>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size() && i < schedule::kMarkCount; ++i) {
    if (counts[i] == 0) continue;
    out += std::string(schedule::mark_name(schedule::mark_at(i))) + " " + std::to_string(counts[i]) + "\n";
  }
  return out;
}

std::vector<std::string> marks_never_hit(const std::vector<uint64_t>& counts) {
  std::vector<std::string> out;
  for (size_t i = 0; i < schedule::kMarkCount; ++i) {
    if (i >= counts.size() || counts[i] == 0) out.emplace_back(schedule::mark_name(schedule::mark_at(i)));
  }
  return out;
}

std::string format_mark_list() {
  std::string out;
  for (size_t i = 0; i < schedule::kMarkCount; ++i) {
    std::string name(schedule::mark_name(schedule::mark_at(i)));
    name.resize(std::max<size_t>(name.size() + 2, 32), ' ');
    out += name + std::string(schedule::mark_description(schedule::mark_at(i))) + "\n";
  }
  return out;
}

Result<std::set<std::string>> read_marks_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Error("marks directory '" + dir + "' does not exist", "dir");
  std::set<std::string> hit;
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().extension() == ".marks") files.push_back(f.path());
  }
  if (ec) return Error("cannot read marks directory '" + dir + "': " + ec.message(), "dir");
  for (const auto& path : files) {
    std::ifstream in(path);
    if (!in) return Error("cannot read " + path.string(), "file");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string name;
      if (words >> name) hit.insert(name);
    }
  }
  return hit;
}

std::vector<std::string> marks_missing(const std::set<std::string>& hit) {
  std::vector<std::string> out;
  for (size_t i = 0; i < schedule::kMarkCount; ++i) {
    std::string name(schedule::mark_name(schedule::mark_at(i)));
    if (!hit.count(name)) out.push_back(std::move(name));
  }
  return out;
}

}  // namespace caesium::sim
