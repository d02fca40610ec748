#include "node/daemon/runtime/glibc_tunables.h"

#include <errno.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace caesium::daemon {
namespace {

// Set in the re-run process's environment: "1" when GLIBC_TUNABLES was unset before
// we set it, "0" when kPrevious holds its earlier value.
constexpr const char* kMarker = "CAESIUM_GLIBC_TUNABLES_ADDED";
constexpr const char* kPrevious = "CAESIUM_GLIBC_TUNABLES_PREVIOUS";

bool names(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t colon = list.find(':');
    const std::string_view item = list.substr(0, colon);
    if (item.substr(0, item.find('=')) == name) return true;
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return false;
}

void restore(const char* previous) {
  if (previous != nullptr) {
    setenv("GLIBC_TUNABLES", previous, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace

std::optional<std::string> merge_glibc_tunables(const char* current, std::string_view wanted) {
  const std::string_view have = current != nullptr ? current : "";
  std::string merged(have);
  bool added = false;
  while (!wanted.empty()) {
    const size_t colon = wanted.find(':');
    const std::string_view item = wanted.substr(0, colon);
    const std::string_view name = item.substr(0, item.find('='));
    if (!name.empty() && !names(have, name)) {
      if (!merged.empty()) merged += ':';
      merged += item;
      added = true;
    }
    if (colon == std::string_view::npos) break;
    wanted.remove_prefix(colon + 1);
  }
  if (!added) return std::nullopt;
  return merged;
}

void rerun_with_glibc_tunables(std::string_view wanted, int argc, char** argv) {
  if (const char* marker = std::getenv(kMarker)) {
    // The re-run process: glibc has read the tunables; put the environment back.
    const bool was_unset = std::string_view(marker) == "1";
    restore(was_unset ? nullptr : std::getenv(kPrevious));
    unsetenv(kPrevious);
    unsetenv(kMarker);
    return;
  }
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> merged = merge_glibc_tunables(current, wanted);
  if (!merged) return;
  const std::optional<std::string> previous = current != nullptr ? std::optional<std::string>(current) : std::nullopt;
  if (previous) setenv(kPrevious, previous->c_str(), 1);
  setenv(kMarker, previous ? "0" : "1", 1);
  if (setenv("GLIBC_TUNABLES", merged->c_str(), 1) == 0) {
    std::vector<char*> args;
    args.push_back(program_invocation_name);  // main's argv[0]; argv here starts at the subcommand
    for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
  }
  // Still here: the exec (or setenv) failed; carry on as we were.
  restore(previous ? previous->c_str() : nullptr);
  unsetenv(kPrevious);
  unsetenv(kMarker);
}

}  // namespace caesium::daemon
