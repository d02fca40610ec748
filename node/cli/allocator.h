// The allocator a binary runs on: "mimalloc 2.0.9" when it was linked with mimalloc
// (CAESIUM_MIMALLOC, docs/operations.md, *Memory allocator*), else "glibc malloc".
// Only the binaries' main files include it: they alone are compiled with the define.
#pragma once

#include <string>

#ifdef CAESIUM_MIMALLOC
#include <mimalloc.h>
#endif

namespace caesium::cli {
namespace {

std::string allocator_name() {
#ifdef CAESIUM_MIMALLOC
  const int v = mi_version();  // 209 for 2.0.9
  return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
#else
  return "glibc malloc";
#endif
}

}  // namespace
}  // namespace caesium::cli
