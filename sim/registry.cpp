#include "sim/registry.h"

#include <map>

#include "sim/echo_process.h"
#include "sim/node_process.h"

namespace caesium::sim {

namespace {
std::map<std::string, ProcessKind>& kinds() {
  static std::map<std::string, ProcessKind> k;
  return k;
}
}  // namespace

void register_process_kind(ProcessKind kind) {
  std::string name = kind.name;
  kinds()[name] = std::move(kind);
}

void register_builtin_process_kinds() {
  if (kinds().count("echo") == 0) register_process_kind(echo_process_kind());
  register_node_process_kind();
}

const ProcessKind* find_process_kind(const std::string& name) {
  auto it = kinds().find(name);
  return it == kinds().end() ? nullptr : &it->second;
}

std::vector<std::string> process_kind_names() {
  std::vector<std::string> out;
  for (const auto& [name, kind] : kinds()) out.push_back(name);
  return out;
}

}  // namespace caesium::sim
