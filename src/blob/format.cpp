#include "blob/format.h"

namespace torch_tensorrt::executorch_backend::blob {

std::string_view to_string(AliasKind kind) noexcept {
  switch (kind) {
    case AliasKind::kKvCacheUpdate: return kAliasKindKvCacheUpdateName;
    case AliasKind::kUser: return kAliasKindUserName;
  }
  return "unknown";
}

std::optional<AliasKind> alias_kind_from_string(std::string_view name) noexcept {
  if (name == kAliasKindKvCacheUpdateName) return AliasKind::kKvCacheUpdate;
  if (name == kAliasKindUserName) return AliasKind::kUser;
  return std::nullopt;
}

bool operator==(const IoBinding& a, const IoBinding& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.is_input == b.is_input;
}
bool operator!=(const IoBinding& a, const IoBinding& b) { return !(a == b); }

bool operator==(const AliasedIo& a, const AliasedIo& b) {
  return a.output == b.output && a.input == b.input && a.kind == b.kind;
}
bool operator!=(const AliasedIo& a, const AliasedIo& b) { return !(a == b); }

bool operator==(const Metadata& a, const Metadata& b) {
  return a.io_bindings == b.io_bindings && a.aliased_io == b.aliased_io &&
         a.hardware_compatible == b.hardware_compatible && a.device_id == b.device_id &&
         a.serialized_metadata == b.serialized_metadata && a.target_platform == b.target_platform;
}
bool operator!=(const Metadata& a, const Metadata& b) { return !(a == b); }

}  // namespace torch_tensorrt::executorch_backend::blob
