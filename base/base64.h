// Base64 (RFC 4648 §4: the standard alphabet, with padding), the one codec for every
// place bytes travel as text: key files, binary payloads in the API and to http handlers.
// libsodium's constant-time codec underneath, so a key never leaks through timing.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace caesium {

std::string base64_encode(std::string_view bytes);

// Strict: the length is a multiple of 4, padding only at the end, no whitespace, and no
// non-zero bits left over.  Errors name the 1-based position of the first bad character.
Result<std::string> base64_decode(std::string_view text);

}  // namespace caesium
