// libFuzzer target: entry decoders — the binary store value and the JSON API body.
//
// Every input goes to both:
//   - decode_entry: must not crash; whatever it accepts is valid, re-encodes to exactly
//     the input bytes, and survives a JSON round trip unchanged;
//   - json::parse (no exceptions) then entry_from_json: must not crash or throw; an
//     accepted entry is valid and round-trips through the binary encoding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "entry_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

using namespace caesium::schedule;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto e = decode_entry(bytes); e.ok()) {
    check(validate(*e).ok(), "decoded entry is invalid");
    check(encode_entry(*e) == bytes, "re-encoding differs from the input");
    auto back = entry_from_json(entry_to_json(*e), e->entity, e->name, e->created_utc_ms, e->origin);
    check(back.ok(), "JSON form of a decoded entry is rejected");
    check(*back == *e, "JSON round trip changed the entry");
  } else {
    check(!e.error().message.empty(), "decode error without a message");
  }
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    auto e = entry_from_json(j, "fuzz", "entry", 1'767'225'600'000, "n1");
    if (e.ok()) {
      check(validate(*e).ok(), "JSON entry is invalid");
      auto round = decode_entry(encode_entry(*e));
      check(round.ok() && *round == *e, "binary round trip of a JSON entry failed");
    } else {
      check(!e.error().message.empty() && !e.error().field.empty(), "JSON error without message or field");
    }
  }
  return 0;
}
