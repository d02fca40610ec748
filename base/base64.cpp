#include "base/base64.h"

#include <sodium.h>

#include <cstring>

namespace caesium {

std::string base64_encode(std::string_view bytes) {
  std::string out(sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return Error("base64 length must be a multiple of 4");
  std::string out(text.size() / 4 * 3, '\0');
  size_t len = 0;
  const char* end = nullptr;
  // With `end` given, libsodium stops at the first character it cannot use and leaves
  // judging the rest to us: that is what lets the error say where.
  const int rc = sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                                   text.size(), nullptr, &len, &end, sodium_base64_VARIANT_ORIGINAL);
  const size_t stop = static_cast<size_t>(end - text.data());
  if (stop < text.size() && text[stop] != '=') {
    return Error("invalid base64 character at position " + std::to_string(stop + 1));
  }
  if (rc != 0 || stop != text.size()) return Error("invalid base64 padding at position " + std::to_string(stop + 1));
  out.resize(len);
  return out;
}

}  // namespace caesium
