#include "model_io.h"

#include <algorithm>
#include <cstring>

namespace trtet_triton {

TRITONSERVER_Error* get_int(const Json& value, const std::string& what, std::int64_t& out) {
  // The server writes 64-bit integers as JSON strings, 32-bit ones as numbers.
  if (value.is_number_integer()) {
    out = value.get<std::int64_t>();
    return nullptr;
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    std::size_t used = 0;
    try {
      out = std::stoll(text, &used);
    } catch (...) {
      used = 0;
    }
    if (used == text.size() && !text.empty()) return nullptr;
  }
  return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s is not an integer: %s", what.c_str(), value.dump().c_str()));
}

std::string io_text(const std::vector<IoSpec>& specs) {
  std::string text;
  for (const IoSpec& spec : specs) {
    if (!text.empty()) text += ", ";
    text += spec.name + " " + spec.type->config + " " + dims_text(spec.config_dims);
    if (spec.dynamic()) text += " (dynamic, within " + dims_text(spec.dims) + ")";
  }
  return text;
}

std::string IoSpec::check_shape(const std::int64_t* shape, const std::uint32_t rank) const {
  return check_request_shape(dims, config_dims, dynamic(), shape, rank);
}

// The program's inputs or outputs from the method's metadata.
TRITONSERVER_Error* read_io(const etr::MethodMeta& meta, bool inputs, const std::vector<Dynamism>& dynamism,
                            std::vector<IoSpec>& out) {
  const std::size_t count = inputs ? meta.num_inputs() : meta.num_outputs();
  const char* kind = inputs ? "input" : "output";
  if (dynamism.size() != count) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("the program's method has %zu %ss in its metadata and %zu in its "
                                                        "execution plan", count, kind, dynamism.size()));
  }
  for (std::size_t i = 0; i < count; ++i) {
    auto tag = inputs ? meta.input_tag(i) : meta.output_tag(i);
    if (!tag.ok() || *tag != etr::Tag::Tensor) {
      return error(TRITONSERVER_ERROR_UNSUPPORTED,
                   format("the program's %s %zu is not a tensor; the backend serves tensor inputs and outputs only", kind, i));
    }
    auto info = inputs ? meta.input_tensor_meta(i) : meta.output_tensor_meta(i);
    if (!info.ok()) return error(TRITONSERVER_ERROR_INTERNAL, executorch_failure(format("reading %s %zu's metadata", kind, i), info.error()));
    IoSpec spec;
    spec.name = info->name().empty() ? format("%s_%zu", kind, i) : std::string(info->name());
    spec.type = data_type_of(info->scalar_type());
    if (spec.type == nullptr) {
      return error(TRITONSERVER_ERROR_UNSUPPORTED, format("the program's %s %zu (%s) has a dtype (%d) Triton cannot carry",
                                                          kind, i, spec.name.c_str(), static_cast<int>(info->scalar_type())));
    }
    spec.planned = info->is_memory_planned();
    spec.dynamism = dynamism[i];
    std::uint64_t elements = 1;
    for (auto d : info->sizes()) {
      spec.dims.push_back(d);
      elements *= static_cast<std::uint64_t>(d);
    }
    spec.bytes = static_cast<std::size_t>(elements) * spec.type->size;
    spec.config_dims = spec.dims;
    if (spec.dynamic()) std::fill(spec.config_dims.begin(), spec.config_dims.end(), -1);
    out.push_back(std::move(spec));
  }
  return nullptr;
}

// The config's inputs or outputs against the program's: the same count, names (by position where the
// program's are generated), data types and dims; or, where the config gives none and auto-complete is
// on, the program's written into it.
TRITONSERVER_Error* check_batchable(const std::vector<IoSpec>& inputs, const std::vector<IoSpec>& outputs,
                                    const std::int64_t max_batch) {
  for (const auto* list : {&inputs, &outputs}) {
    const char* kind = list == &inputs ? "input" : "output";
    for (const IoSpec& spec : *list) {
      std::string why;
      if (!spec.dynamic()) {
        why = "static " + dims_text(spec.dims);
      } else if (spec.dims.empty()) {
        why = "a scalar";
      } else if (spec.dims[0] < max_batch) {
        why = format("dynamic with dim 0 bounded by %lld", static_cast<long long>(spec.dims[0]));
      }
      if (!why.empty()) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("max_batch_size is %lld: the backend batches requests along dim 0 of every input and output, "
                            "so each must be dynamic with a bound of at least %lld there; %s '%s' is %s (set "
                            "max_batch_size 0 to serve the program's shapes as they are)",
                            static_cast<long long>(max_batch), static_cast<long long>(max_batch), kind,
                            spec.name.c_str(), why.c_str()));
      }
    }
  }
  return nullptr;
}

TRITONSERVER_Error* check_io(Json& config, const char* key, std::vector<IoSpec>& program, bool autocomplete,
                             bool& changed, const bool batched) {
  // Batched, the config speaks of dims past dim 0 (the spec's dims and config_dims keep it).
  const std::size_t skip = batched ? 1 : 0;
  auto past_batch = [skip](const std::vector<std::int64_t>& dims) {
    return std::vector<std::int64_t>(dims.begin() + static_cast<std::ptrdiff_t>(std::min(skip, dims.size())), dims.end());
  };
  const char* kind = std::strcmp(key, "input") == 0 ? "input" : "output";
  auto it = config.find(key);
  const bool given = it != config.end() && it->is_array() && !it->empty();
  if (!given) {
    if (!autocomplete) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("the config gives no %ss and auto-complete is off; the program has %zu: %s", kind,
                          program.size(), program.empty() ? "" : program[0].name.c_str()));
    }
    Json list = Json::array();
    for (const IoSpec& spec : program) {
      Json dims = Json::array();
      for (auto d : past_batch(spec.config_dims)) dims.push_back(d);  // -1 where the program's tensor is dynamic
      list.push_back({{"name", spec.name}, {"data_type", spec.type->config}, {"dims", dims}});
    }
    config[key] = list;
    changed = true;
    return nullptr;
  }
  if (it->size() != program.size()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("the config gives %zu %ss; the program's method has %zu",
                                                        it->size(), kind, program.size()));
  }
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Json& entry = (*it)[i];
    IoSpec& spec = program[i];
    const std::string name = entry.value("name", std::string());
    const bool generated = spec.name == format("%s_%zu", kind, i);
    if (!generated && name != spec.name) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s %zu is '%s' in the config and '%s' in the program", kind,
                                                          i, name.c_str(), spec.name.c_str()));
    }
    if (name.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s %zu of the config has no name", kind, i));
    spec.name = name;  // the config's name, where the program's is generated
    const std::string type = entry.value("data_type", std::string());
    if (type != spec.type->config) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s '%s' is %s in the config; the program takes %s", kind,
                                                          name.c_str(), type.c_str(), spec.type->config));
    }
    std::vector<std::int64_t> dims;
    if (entry.contains("dims") && entry["dims"].is_array()) {
      for (const Json& d : entry["dims"]) {
        std::int64_t v = 0;
        TRTET_TRITON_RETURN_IF_ERROR(get_int(d, format("a dim of %s '%s'", kind, name.c_str()), v));
        dims.push_back(v);
      }
    }
    const std::vector<std::int64_t> bound = past_batch(spec.dims);
    if (!spec.dynamic() && dims != spec.dims) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("%s '%s' has dims %s in the config; the program's are %s (a static tensor: the backend serves "
                          "the program's shape as it is)",
                          kind, name.c_str(), dims_text(dims).c_str(), dims_text(spec.dims).c_str()));
    }
    if (spec.dynamic()) {
      // The config may narrow a dynamic tensor: each dim -1 (any size up to the bound) or a size within it.
      bool within = dims.size() == bound.size();
      for (std::size_t d = 0; within && d < dims.size(); ++d) within = dims[d] == -1 || (dims[d] >= 0 && dims[d] <= bound[d]);
      if (!within) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("%s '%s' has dims %s in the config; the program's tensor is dynamic with %zu dims bounded by "
                            "%s%s: each dim is -1 (any size up to the bound) or a size within it",
                            kind, name.c_str(), dims_text(dims).c_str(), bound.size(), dims_text(bound).c_str(),
                            batched ? " past dim 0 (max_batch_size > 0: the config leaves the batch dim out)" : ""));
      }
      spec.config_dims = dims;
      if (batched) spec.config_dims.insert(spec.config_dims.begin(), -1);
    }
  }
  return nullptr;
}

}  // namespace trtet_triton
