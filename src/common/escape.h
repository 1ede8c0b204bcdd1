// Quoting untrusted text (binding names, option values, file contents) in messages: a message must
// not carry terminal control sequences from a program or a file, nor be unbounded.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace torch_tensorrt::executorch_backend {

/// `text` with every byte below 0x20, 0x7f, '\\' and the bytes of UTF-8's C1 controls (U+0080..U+009F,
/// 0xC2 0x80..0x9F) written as \xNN, cut after `limit` bytes of input with "..." appended. Printable
/// ASCII and other UTF-8 pass as they are. Never throws but std::bad_alloc.
inline std::string escape_for_message(std::string_view text, std::size_t limit = 256) {
  std::string out;
  const std::size_t shown = text.size() < limit ? text.size() : limit;
  out.reserve(shown + 8);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool c1_lead = byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                         static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    const bool c1_tail = byte >= 0x80 && byte <= 0x9F && i > 0 && static_cast<unsigned char>(text[i - 1]) == 0xC2;
    if (byte < 0x20 || byte == 0x7f || byte == '\\' || c1_lead || c1_tail) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    } else {
      out += static_cast<char>(byte);
    }
  }
  if (shown < text.size()) out += "...";
  return out;
}

/// True when `text` holds a byte escape_for_message() would escape other than '\\': a C0 control,
/// DEL or a UTF-8 C1 control.
inline bool has_control_characters(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) return true;
    if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      return true;
    }
  }
  return false;
}

}  // namespace torch_tensorrt::executorch_backend
