// libFuzzer target: the daemon's TOML configuration (docs/config.md).
//
// Any text either parses to a configuration or fails with a message that names the file;
// it never crashes, hangs or throws.  A configuration that parses must also yield Node
// options without trouble.  Includes resolve against a directory that does not exist,
// so the fuzzer cannot make the parser read real files through relative paths.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "node/daemon/config/config.h"
#include "node/wire/frame.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "config_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/nonexistent-caesium-fuzz/node.toml";
  auto config = caesium::daemon::parse_config(text, path);
  if (!config.ok()) {
    check(config.error().message.find("node.toml") != std::string::npos, "error does not name the file");
    return 0;
  }
  caesium::wire::Key k{};
  auto options = caesium::daemon::node_options(*config, caesium::wire::Keyring::single(k));
  (void)options;
  return 0;
}
