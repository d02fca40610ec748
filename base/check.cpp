#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace caesium {

void assertion_failed(const char* condition, const char* file, int line) {
  // The one place base/ writes to the console: the process is about to abort.
  std::fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, condition);  // sans-io-exception
  std::abort();
}

}  // namespace caesium
