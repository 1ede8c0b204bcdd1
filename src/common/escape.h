// Quoting untrusted text (binding names, option values, file contents) in messages: a message must
// not carry terminal control sequences from a program or a file, nor be unbounded, and it must be
// valid UTF-8, since the messages end up in JSON (Triton's repository index and error bodies) whose
// readers refuse anything else.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace torch_tensorrt::executorch_backend {

/// The length of the well-formed UTF-8 sequence at text[at] (Unicode's table of well-formed byte
/// sequences: no overlong forms, no surrogates, nothing above U+10FFFF), or 0 when the bytes there
/// are not one.
inline std::size_t utf8_sequence_at(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const std::size_t left = text.size() - at;
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the byte after the lead
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (left < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

/// True when all of `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_at(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

/// `text` as valid UTF-8 with no control character: every byte below 0x20, 0x7f, '\\', the UTF-8 C1
/// controls (U+0080..U+009F) and every byte that is not part of a well-formed UTF-8 sequence written
/// as \xNN; cut after at most `limit` bytes of input (never inside a character) with "..." appended.
/// Printable ASCII and well-formed UTF-8 pass as they are. Never throws but std::bad_alloc.
inline std::string escape_for_message(std::string_view text, std::size_t limit = 256) {
  std::string out;
  out.reserve((text.size() < limit ? text.size() : limit) + 8);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence_at(text, i);
    const std::size_t taken = length == 0 ? 1 : length;
    if (taken > limit - (i < limit ? i : limit)) break;  // the next character would pass the limit
    const bool c1 = length == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if (length == 0 || byte < 0x20 || byte == 0x7f || byte == '\\' || c1) {
      for (std::size_t k = 0; k < taken; ++k) {
        char escaped[5];
        std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned char>(text[i + k]));
        out += escaped;
      }
    } else {
      out.append(text.data() + i, taken);
    }
    i += taken;
  }
  if (i < text.size()) out += "...";
  return out;
}

}  // namespace torch_tensorrt::executorch_backend
