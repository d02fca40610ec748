// glibc malloc tunables for Caesium's long-lived processes.
//
// glibc reads GLIBC_TUNABLES once, when a process starts, so a process that wants one
// runs itself again with it added (`caesium node`: a larger per-thread cache, see
// docs/operations.md; `caesium sim`: huge pages).  An operator's own GLIBC_TUNABLES
// wins: a tunable it already names is never overridden, and a process it names in
// full is not run again.  The re-run process puts the environment back as it was, so
// the handlers a node starts inherit the operator's environment, not ours.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace caesium::daemon {

// `current` (GLIBC_TUNABLES, or nullptr when unset) with each of `wanted`'s
// colon-separated name=value settings appended whose name `current` does not set.
// nullopt when there is nothing to add.
std::optional<std::string> merge_glibc_tunables(const char* current, std::string_view wanted);

// Runs this program again (/proc/self/exe, same pid) with `wanted` merged into
// GLIBC_TUNABLES; `argv` starts at the subcommand ("node", "sim"), as commands get it.
// Returns when there is nothing to add, when this process is the re-run one (after
// restoring the environment), or when the exec failed (the process then carries on
// with glibc's defaults).  Call it first, before any thread starts.
void rerun_with_glibc_tunables(std::string_view wanted, int argc, char** argv);

}  // namespace caesium::daemon
