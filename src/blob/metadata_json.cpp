#include "blob/metadata_json.h"

#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <utility>

namespace torch_tensorrt::executorch_backend::blob {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// JSON key spellings, in the writer's order.
constexpr const char* kIoBindings = "io_bindings";
constexpr const char* kAliasedIo = "aliased_io";
constexpr const char* kHardwareCompatible = "hardware_compatible";
constexpr const char* kDeviceId = "device_id";
constexpr const char* kSerializedMetadata = "serialized_metadata";
constexpr const char* kTargetPlatform = "target_platform";
constexpr const char* kName = "name";
constexpr const char* kDtype = "dtype";
constexpr const char* kShape = "shape";
constexpr const char* kIsInput = "is_input";
constexpr const char* kOutput = "output";
constexpr const char* kInput = "input";
constexpr const char* kKind = "kind";

/// The JSON type of `value` in words, telling integers from floats.
const char* type_of(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "other";
  }
}

Status wrong_type(const std::string& where, const char* expected, const Json& value) {
  return make_error(ErrorCode::kInvalidProgram, "metadata: %s must be %s, got %s", where.c_str(), expected,
                    type_of(value));
}

Status missing_key(const std::string& where) {
  return make_error(ErrorCode::kInvalidProgram, "metadata: %s is missing", where.c_str());
}

std::string member(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

std::string element(const std::string& where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

/// The member `key` of `object`, or nullptr when absent.
const Json* find(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<std::string> read_string(const Json& object, const char* key, const std::string& where,
                                const char* fallback) {
  const std::string path = member(where, key);
  const Json* value = find(object, key);
  if (value == nullptr) {
    if (fallback == nullptr) return missing_key(path);
    return std::string(fallback);
  }
  if (!value->is_string()) return wrong_type(path, "a string", *value);
  return value->get_ref<const std::string&>();
}

Result<bool> read_bool(const Json& object, const char* key, const std::string& where, bool fallback) {
  const Json* value = find(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return wrong_type(member(where, key), "a boolean", *value);
  return value->get<bool>();
}

Result<int64_t> read_integer(const Json& value, const std::string& where) {
  if (value.is_number_unsigned()) {
    const auto unsigned_value = value.get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return make_error(ErrorCode::kInvalidProgram, "metadata: %s is out of the int64 range", where.c_str());
    }
    return static_cast<int64_t>(unsigned_value);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return wrong_type(where, "an integer", value);
}

Result<std::vector<int64_t>> read_shape(const Json& object, const std::string& where) {
  const std::string path = member(where, kShape);
  const Json* value = find(object, kShape);
  std::vector<int64_t> shape;
  if (value == nullptr) return shape;
  if (!value->is_array()) return wrong_type(path, "an array", *value);
  shape.reserve(value->size());
  for (size_t i = 0; i < value->size(); ++i) {
    TRTET_ASSIGN_OR_RETURN(const int64_t dim, read_integer((*value)[i], element(path, i)));
    shape.push_back(dim);
  }
  return shape;
}

Result<IoBinding> read_binding(const Json& value, const std::string& where) {
  if (!value.is_object()) return wrong_type(where, "an object", value);
  IoBinding binding;
  TRTET_ASSIGN_OR_RETURN(binding.name, read_string(value, kName, where, nullptr));
  TRTET_ASSIGN_OR_RETURN(binding.dtype, read_string(value, kDtype, where, ""));
  TRTET_ASSIGN_OR_RETURN(binding.shape, read_shape(value, where));
  TRTET_ASSIGN_OR_RETURN(binding.is_input, read_bool(value, kIsInput, where, /*fallback=*/true));
  return binding;
}

Result<AliasedIo> read_alias(const Json& value, const std::string& where) {
  if (!value.is_object()) return wrong_type(where, "an object", value);
  AliasedIo alias;
  TRTET_ASSIGN_OR_RETURN(alias.output, read_string(value, kOutput, where, nullptr));
  TRTET_ASSIGN_OR_RETURN(alias.input, read_string(value, kInput, where, nullptr));
  TRTET_ASSIGN_OR_RETURN(const std::string kind,
                         read_string(value, kKind, where, kAliasKindKvCacheUpdateName.data()));
  const std::optional<AliasKind> parsed = alias_kind_from_string(kind);
  if (!parsed) {
    return make_error(ErrorCode::kInvalidProgram,
                      "metadata: %s.kind \"%s\" is not an alias kind (expected \"kv_cache_update\" or \"user\")",
                      where.c_str(), kind.c_str());
  }
  alias.kind = *parsed;
  return alias;
}

/// Reads the array at `key` (absent: empty) element by element with `read`.
template <typename T, typename ReadFn>
Result<std::vector<T>> read_array(const Json& object, const char* key, ReadFn read) {
  const Json* value = find(object, key);
  std::vector<T> items;
  if (value == nullptr) return items;
  if (!value->is_array()) return wrong_type(key, "an array", *value);
  items.reserve(value->size());
  for (size_t i = 0; i < value->size(); ++i) {
    TRTET_ASSIGN_OR_RETURN(T item, read((*value)[i], element(key, i)));
    items.push_back(std::move(item));
  }
  return items;
}

Result<Metadata> read_metadata(const Json& root) {
  if (!root.is_object()) return wrong_type("the top-level value", "an object", root);
  Metadata metadata;
  TRTET_ASSIGN_OR_RETURN(metadata.io_bindings, read_array<IoBinding>(root, kIoBindings, read_binding));
  TRTET_ASSIGN_OR_RETURN(metadata.aliased_io, read_array<AliasedIo>(root, kAliasedIo, read_alias));
  TRTET_ASSIGN_OR_RETURN(metadata.hardware_compatible, read_bool(root, kHardwareCompatible, "", false));
  if (const Json* device_id = find(root, kDeviceId)) {
    TRTET_ASSIGN_OR_RETURN(metadata.device_id, read_integer(*device_id, kDeviceId));
  }
  TRTET_ASSIGN_OR_RETURN(metadata.serialized_metadata, read_string(root, kSerializedMetadata, "", ""));
  TRTET_ASSIGN_OR_RETURN(metadata.target_platform, read_string(root, kTargetPlatform, "", ""));
  return metadata;
}

/// The first offset at which `text`'s arrays and objects nest deeper than `max_depth` (brackets
/// inside strings do not count), or npos. Linear, allocates nothing: it runs before the parser,
/// whose cost grows with the nesting.
size_t too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

/// `text` with bytes outside printable ASCII replaced by '?', for messages that quote input.
std::string printable(std::string text) {
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text;
}

}  // namespace

Result<Metadata> metadata_from_json(std::string_view text) {
  // Python's json.loads, which Torch-TensorRT's reader uses, rejects a leading BOM; nlohmann skips it.
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return make_error(ErrorCode::kInvalidProgram, "metadata is not valid JSON: it begins with a UTF-8 byte-order mark");
  }
  // nlohmann stops at a NUL byte as if the input ended there; in JSON a raw NUL is never valid.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidProgram, "metadata is not valid JSON: NUL byte at offset %zu", nul);
  }
  if (const size_t deep = too_deep_at(text, kMaxMetadataDepth); deep != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidProgram, "metadata: JSON nested more than %d deep (at offset %zu)",
                      kMaxMetadataDepth, deep);
  }
  try {
    const Json root = Json::parse(text.begin(), text.end());
    return read_metadata(root);
  } catch (const Json::parse_error& e) {
    return make_error(ErrorCode::kInvalidProgram, "metadata is not valid JSON: %s", printable(e.what()).c_str());
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kMemoryAllocationFailed, "metadata: out of memory decoding %zu bytes of JSON",
                      text.size());
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidProgram, "metadata: %s", printable(e.what()).c_str());
  }
}

std::string metadata_to_json(const Metadata& metadata) {
  OrderedJson bindings = OrderedJson::array();
  for (const IoBinding& binding : metadata.io_bindings) {
    OrderedJson entry = OrderedJson::object();
    entry[kName] = binding.name;
    entry[kDtype] = binding.dtype;
    entry[kShape] = binding.shape;
    entry[kIsInput] = binding.is_input;
    bindings.push_back(std::move(entry));
  }
  OrderedJson aliases = OrderedJson::array();
  for (const AliasedIo& alias : metadata.aliased_io) {
    OrderedJson entry = OrderedJson::object();
    entry[kOutput] = alias.output;
    entry[kInput] = alias.input;
    entry[kKind] = std::string(to_string(alias.kind));
    aliases.push_back(std::move(entry));
  }
  OrderedJson root = OrderedJson::object();
  root[kIoBindings] = std::move(bindings);
  root[kAliasedIo] = std::move(aliases);
  root[kHardwareCompatible] = metadata.hardware_compatible;
  root[kDeviceId] = metadata.device_id;
  root[kSerializedMetadata] = metadata.serialized_metadata;
  root[kTargetPlatform] = metadata.target_platform;
  // Compact (no indent, "," and ":" separators) and ASCII-only, as Python's json.dumps writes it.
  return root.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
}

}  // namespace torch_tensorrt::executorch_backend::blob
