// libFuzzer target (docs/SECURITY.md): a model's config as the Triton backend reads it at load
// (triton/src/parameters.cpp and model_io.cpp, in the order model.cpp takes them: the parameters,
// max_batch_size, the batching rule, then the inputs and outputs against a fixed program's). The
// input is the config's JSON, as Triton hands it over; what the JSON parser rejects never reaches the
// backend and is skipped. Exceptions are caught as the entry points catch them (backend.cpp).
// Beyond "no crash, no leak, no UB":
//   - a refusal says why, starts with the backend's name, carries no raw control character, is valid
//     UTF-8 (Note [untrusted text in messages]) and stays within the message limit;
//   - an accepted config's dims for every dynamic tensor are -1 or within the program's bound, and
//     a static tensor's are the program's;
//   - the parameters it accepted are within their documented ranges.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/escape.h"
#include "errors.h"
#include "fake_server.h"
#include "model_io.h"
#include "parameters.h"

namespace {

using trtet_triton::IoSpec;
using trtet_triton::Json;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "config_fuzz: %s\n", what.c_str());
  std::abort();
}

IoSpec spec(const char* name, std::vector<std::int64_t> dims, bool dynamic) {
  IoSpec s;
  s.name = name;
  s.type = trtet_triton::data_type_of(::executorch::aten::ScalarType::Float);
  s.dims = dims;
  s.dynamism = dynamic ? trtet_triton::Dynamism::kDynamicBound : trtet_triton::Dynamism::kStatic;
  s.config_dims = dims;
  if (dynamic) s.config_dims.assign(dims.size(), -1);
  s.bytes = 4;
  for (auto d : dims) s.bytes *= static_cast<std::size_t>(d);
  return s;
}

// The program the configs are read against: a static input, a dynamic one of a generated name, a
// dynamic output.
void program(std::vector<IoSpec>& inputs, std::vector<IoSpec>& outputs) {
  inputs = {spec("x", {2, 3}, false), spec("input_1", {8, 64}, true)};
  outputs = {spec("out", {8, 64}, true)};
}

// Checks a refusal and deletes it.
void check_refusal(TRITONSERVER_Error* e) {
  const std::string message = TRITONSERVER_ErrorMessage(e);
  TRITONSERVER_ErrorDelete(e);
  const std::string prefix = std::string(trtet_triton::kBackend) + ": ";
  if (message.size() <= prefix.size() || message.compare(0, prefix.size(), prefix) != 0) {
    fail("a refusal without the backend's name or a reason: '" + message.substr(0, 200) + "'");
  }
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) fail("a raw control character in a refusal: '" + message.substr(0, 200) + "'");
  }
  if (!torch_tensorrt::executorch_backend::is_valid_utf8(message)) {
    fail("a refusal that is not valid UTF-8: '" + torch_tensorrt::executorch_backend::escape_for_message(message, 200) + "'");
  }
  if (message.size() > trtet_triton::kMessageLimit + 3) fail("a refusal of " + std::to_string(message.size()) + " bytes");
}

TRITONSERVER_Error* read(Json& config, const bool autocomplete, trtet_triton::Parameters& params,
                         std::vector<IoSpec>& inputs, std::vector<IoSpec>& outputs, std::int64_t& max_batch) {
  TRTET_TRITON_RETURN_IF_ERROR(trtet_triton::parse_parameters(config, "m", params));
  if (config.contains("max_batch_size")) {
    TRTET_TRITON_RETURN_IF_ERROR(trtet_triton::get_int(config["max_batch_size"], "max_batch_size", max_batch));
  }
  if (max_batch < 0) return trtet_triton::error(TRITONSERVER_ERROR_INVALID_ARG, "max_batch_size below 0");
  if (max_batch > 0) TRTET_TRITON_RETURN_IF_ERROR(trtet_triton::check_batchable(inputs, outputs, max_batch));
  bool changed = false;
  TRTET_TRITON_RETURN_IF_ERROR(trtet_triton::check_io(config, "input", inputs, autocomplete, changed, max_batch > 0));
  return trtet_triton::check_io(config, "output", outputs, autocomplete, changed, max_batch > 0);
}

void check_accepted(const std::vector<IoSpec>& specs, const bool batched) {
  for (const IoSpec& s : specs) {
    if (s.config_dims.size() != s.dims.size()) fail("accepted '" + s.name + "' with another rank than the program's");
    for (std::size_t d = 0; d < s.dims.size(); ++d) {
      const std::int64_t c = s.config_dims[d];
      if (!s.dynamic() && c != s.dims[d]) fail("accepted a static tensor '" + s.name + "' of another shape");
      if (s.dynamic() && !(c == -1 || (c >= 0 && c <= s.dims[d]) || (batched && d == 0))) {
        fail("accepted dim " + std::to_string(c) + " of '" + s.name + "' outside its bound " + std::to_string(s.dims[d]));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses auto-complete; the rest is the config's JSON.
  const bool autocomplete = (data[0] & 1) != 0;
  Json config = Json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return 0;
  trtet_triton::Parameters params;
  std::vector<IoSpec> inputs, outputs;
  program(inputs, outputs);
  std::int64_t max_batch = 0;
  TRITONSERVER_Error* e = nullptr;
  try {
    e = read(config, autocomplete, params, inputs, outputs, max_batch);
  } catch (const std::exception& ex) {  // as TRITONBACKEND_ModelInitialize catches them
    e = trtet_triton::error(TRITONSERVER_ERROR_INTERNAL, std::string("loading the model: ") + ex.what());
  }
  if (e != nullptr) {
    check_refusal(e);
  } else {
    check_accepted(inputs, max_batch > 0);
    check_accepted(outputs, max_batch > 0);
    if (params.sms.has_value() && (*params.sms < 1 || *params.sms > 65536)) fail("accepted sms out of range");
    if (params.gpu_time_every > 1000000) fail("accepted gpu_time_every above 1000000");
    if (params.method.size() > 4096) fail("accepted a method name above 4096 bytes");
  }
  if (fake_server::live_errors() != 0) fail("an error was not deleted");
  return 0;
}
