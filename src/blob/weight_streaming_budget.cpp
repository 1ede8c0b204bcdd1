#include "blob/weight_streaming_budget.h"

#include <limits>
#include <string>

namespace torch_tensorrt::executorch_backend::blob {
namespace {

const char* source_name(BudgetSource source) {
  return source == BudgetSource::kCompileSpec ? "compile spec" : "load-time option";
}

ErrorCode error_code(BudgetSource source) {
  return source == BudgetSource::kCompileSpec ? ErrorCode::kInvalidProgram : ErrorCode::kInvalidArgument;
}

/// `text` for a message: at most 64 bytes, bytes outside printable ASCII as \xNN.
std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace

Result<uint64_t> parse_weight_streaming_budget(std::string_view text, BudgetSource source) {
  const char* from = source_name(source);
  const ErrorCode code = error_code(source);
  if (text.empty()) {
    return make_error(code, "weight_streaming_budget %s is empty (expected a non-negative decimal byte count)", from);
  }
  if (text.front() == '-') {
    return make_error(code, "weight_streaming_budget %s \"%s\" is negative", from, quote(text).c_str());
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t value = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') {
      if (i == 0) {
        return make_error(code, "weight_streaming_budget %s \"%s\" is not a decimal number", from,
                          quote(text).c_str());
      }
      return make_error(code, "weight_streaming_budget %s \"%s\" has trailing characters after the number", from,
                        quote(text).c_str());
    }
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) {
      return make_error(code, "weight_streaming_budget %s \"%s\" overflows (the largest budget is %llu bytes)", from,
                        quote(text).c_str(), static_cast<unsigned long long>(kMax));
    }
    value = value * 10 + digit;
  }
  return value;
}

Result<uint64_t> parse_weight_streaming_budget(int64_t value) {
  if (value < 0) {
    return make_error(ErrorCode::kInvalidArgument, "weight_streaming_budget load-time option %lld is negative",
                      static_cast<long long>(value));
  }
  return static_cast<uint64_t>(value);
}

}  // namespace torch_tensorrt::executorch_backend::blob
