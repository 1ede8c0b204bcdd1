#include "backend/options.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>
#include <variant>

#include "common/environment.h"
#include "common/escape.h"

namespace torch_tensorrt::executorch_backend {
namespace {

namespace et = ::executorch::runtime;
using Text = std::array<char, et::kMaxOptionValueLength>;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
/// The largest staging budget in MiB: its byte count fits in 64 bits.
constexpr std::uint64_t kMostMb = (std::uint64_t{1} << 44) - 1;
constexpr std::uint64_t kMostInt = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
constexpr std::uint64_t kMostInt64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

Status fill_use_cuda_graphs(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.session.use_cuda_graphs = v.flag;
  return Status::Ok();
}
Status fill_graph_cache_size(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.session.graph_cache_size = static_cast<std::size_t>(v.number);
  return Status::Ok();
}
Status fill_staging_budget(DelegateOptions& o, const OptionValue& v, ErrorCode code) {
  if (v.number > std::numeric_limits<std::size_t>::max() / kMiB) {
    return make_error(code, "staging_budget_mb is %llu MiB, more than this platform can address",
                      static_cast<unsigned long long>(v.number));
  }
  o.session.staging_budget_bytes = static_cast<std::size_t>(v.number * kMiB);
  return Status::Ok();
}
Status fill_program_cap(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.max_program_staging_budget_mb = v.number;
  return Status::Ok();
}
Status fill_weight_streaming(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.weight_streaming_budget = v.number;
  return Status::Ok();
}
Status fill_runtime(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.tensorrt_runtime = std::string(v.text);
  return Status::Ok();
}
Status fill_host_code(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.allow_engine_host_code = v.flag;
  return Status::Ok();
}
Status fill_metadata_cap(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.blob_limits.max_metadata_bytes = static_cast<std::size_t>(v.number);
  return Status::Ok();
}
Status fill_gpu_every(DelegateOptions& o, const OptionValue& v, ErrorCode) {
  o.profiling_gpu_every = static_cast<std::uint32_t>(v.number);
  return Status::Ok();
}
std::uint64_t read_program_cap(const DelegateOptions& o) { return o.max_program_staging_budget_mb; }
std::uint64_t read_metadata_cap(const DelegateOptions& o) { return o.blob_limits.max_metadata_bytes; }
std::uint64_t read_gpu_every(const DelegateOptions& o) { return o.profiling_gpu_every; }

constexpr unsigned kSpecOrLoad = kFromCompileSpec | kFromLoadOption;
constexpr unsigned kLoadOrSet = kFromLoadOption | kFromSetOption;

// Note [options schema]: every option is one row; nothing else parses an option. The names of the
// environment variables the TensorRT adapter reads are checked against tensorrt/runtime_search.h by
// tests/executorch/options_test.cpp.
const OptionSpec kTable[] = {
    {"use_cuda_graphs", kSpecOrLoad, OptionType::kBool, "", 0, 1, "false", "SessionOptions::use_cuda_graphs",
     nullptr, "replays each call shape's CUDA graph (docs/DESIGN.md, delegate graphs)", &fill_use_cuda_graphs,
     nullptr,
     "The delegate captures each call signature's engine enqueue into a CUDA graph on its second call and replays "
     "it afterwards, on the caller's stream and inside its green context."},
    {"cuda_graph_cache_size", kFromLoadOption, OptionType::kWholeNumber, "graphs", 0, kMostInt, "16",
     "SessionOptions::graph_cache_size", nullptr, "the most CUDA graphs a method keeps (0: none)",
     &fill_graph_cache_size, nullptr,
     "Graphs kept per loaded engine. When the cache is full, a new signature reuses the graph of the least recently "
     "used one: the graph is updated in place, never destroyed inside a call."},
    {"staging_budget_mb", kSpecOrLoad, OptionType::kWholeNumber, "MiB", 0, kMostMb, "0",
     "SessionOptions::staging_budget_bytes (x 2^20)", nullptr,
     "pinned host and device staging per method (0: no budget); a compile spec may ask for at most "
     "max_program_staging_budget_mb",
     &fill_staging_budget, nullptr,
     "Staging for host I/O, made when the program loads, so that the first calls do not grow it (page-locking new "
     "host memory takes milliseconds). Each binding takes twice its largest size over the optimization profiles "
     "(device and pinned host staging), in order, while the total fits. A binding that does not fit grows on "
     "demand, with one warning. Leave it at 0 when all I/O is on the device (docs/DESIGN.md, \"Staging\"). The "
     "application's own load option is not capped and wins over the program's compile spec."},
    {"max_program_staging_budget_mb", kLoadOrSet, OptionType::kWholeNumber, "MiB", 0, kMostMb, "256",
     "DelegateOptions::max_program_staging_budget_mb", nullptr,
     "the most a program's staging_budget_mb compile spec may ask for", &fill_program_cap, &read_program_cap,
     "A program's compile spec asking for more is refused (InvalidProgram), and the message names both options. The "
     "application's own staging_budget_mb is not capped."},
    {"weight_streaming_budget", kSpecOrLoad, OptionType::kWholeNumber, "bytes", 0, kMostInt64,
     "unset (TensorRT's automatic budget for a streaming engine)", "EngineRequest::weight_streaming_budget", nullptr,
     "GPU memory for an engine's streamable weights", &fill_weight_streaming, nullptr,
     "The budget for an engine built for weight streaming. A load option wins over the compile spec. The budget is "
     "ignored, with a warning, for an engine built without weight streaming."},
    {"tensorrt_runtime", kFromLoadOption | kFromEnvironment, OptionType::kText, "", 0, 0,
     "unset (the variable, else the adapter's search order)", "EngineRequest::runtime_library",
     "TRTET_TENSORRT_RUNTIME",
     "which TensorRT runtime library to load: a search order such as \"lean,dispatch\" (full, lean, dispatch) or a "
     "library's path",
     &fill_runtime, nullptr,
     "A comma list of full, lean and dispatch, tried in that order, or a library's path. The default is full, then "
     "lean, with dispatch added where engine host code is allowed. A trusted choice: the library is loaded. "
     "Triton's model configs may not set it."},
    {"allow_engine_host_code", kFromLoadOption | kFromEnvironment, OptionType::kBool, "", 0, 1,
     "unset (the variable, else false)", "EngineRequest::allow_engine_host_code", "TRTET_ALLOW_ENGINE_HOST_CODE",
     "true lets engines run native code they carry (docs/SECURITY.md)", &fill_host_code, nullptr,
     "Lets engines run the native code they carry (the dispatch runtime's embedded lean runtimes, plugins). This is "
     "the application's choice alone, never a program's, and Triton's model configs may not set it. "
     "TRTET_ALLOW_ENGINE_HOST_CODE takes 1, or 0 or empty; any other value is an error."},
    {"max_blob_metadata_bytes", kLoadOrSet, OptionType::kWholeNumber, "bytes", 1, 4294967295u, "1048576",
     "ParseLimits::max_metadata_bytes", nullptr, "the most bytes of metadata a blob may carry", &fill_metadata_cap,
     &read_metadata_cap,
     "Checked before the metadata is parsed (Note [Metadata limits] in src/blob/parse.h)."},
    {"profiling_gpu_every", kLoadOrSet, OptionType::kWholeNumber, "calls", 1, 1000000, "1",
     "DelegateTimer::set_gpu_every", nullptr, "times the GPU of every N-th traced call only (1: every call)",
     &fill_gpu_every, &read_gpu_every,
     "With an EventTracer attached, the GPU is timed on the first call and on every N-th call after it. Every call "
     "still logs its host event, which says gpu_timed=1 or 0. Timing a call costs the host two CUDA timing events, "
     "about 3 us, so on short calls N = 100 keeps one GPU time per 100 calls at little more than the cost of the "
     "host events (docs/PROFILING.md)."},
    {"copy_workers", kFromEnvironment, OptionType::kWholeNumber, "threads", 0, 64,
     "the hardware threads less one, at most 7 (at most 11 for a copy of 16 MiB or more)", "HostCopyPool::shared()",
     kCopyWorkersVariable,
     "the threads of the process's host copy pool (read once; a bad value is warned about and the default used)",
     nullptr, nullptr,
     "Pageable host tensors are copied through pinned staging by one pool of worker threads per process, shared by "
     "every model: one thread per hardware thread but one, at most 7, so with the calling thread 8 threads copy; "
     "a copy of 16 MiB or more also gets the pool's wide workers, up to 11 threads besides the caller. "
     "The variable is read once, when the pool starts, and sets the whole pool: N threads for every copy, no wide "
     "workers. 0 leaves every copy to the calling thread (docs/PERFORMANCE.md, \"The copy pool's size\")."},
    {"small_copies", kFromEnvironment, OptionType::kText, "", 0, 0, "kernel", "staging::kernel_copies_on_current_device()",
     kSmallCopiesVariable,
     "\"engines\" moves every host transfer with the copy engines; \"kernel\" moves chunks of at most 64 KiB with "
     "a copy kernel where the call's stream is a partition's (read once; a bad value is warned about and the "
     "default used)",
     nullptr, nullptr,
     "Host I/O moves between pinned memory and the device in chunks. Where the call's stream runs on a green "
     "context, a chunk of at most 64 KiB (a pinned tensor of at most 64 KiB the device can read at its address, or "
     "a chunk of the pageable path's staging) goes through a copy kernel on that stream, on the partition's own "
     "SMs, because the copy engines are the whole GPU's and a small transfer can wait behind another model's large "
     "ones (docs/PERFORMANCE.md, \"Small copies\"). On any other stream the copy engines take every transfer: "
     "there the kernel would wait for SMs that other work holds. \"engines\" keeps every transfer on the copy "
     "engines everywhere: for a platform where the GPU should not read host memory itself, such as confidential "
     "computing. Either value in any case."},
    {"cuda_allocator", kFromEnvironment, OptionType::kText, "", 0, 0, "registered",
     "detail::register_cuda_allocator()", kCudaAllocatorVariable,
     "\"off\" registers no CUDA device allocator with ExecuTorch (read as the library loads)", nullptr, nullptr,
     "Use it in a process whose ExecuTorch registry must not get this library's allocator (docs/DESIGN.md, "
     "\"Device-planned programs\")."},
    {"debug", kFromEnvironment, OptionType::kText, "", 0, 0, "off", "log(kDebug)", kDebugVariable,
     "debug logging: on for any value but empty, 0, false, off and no (any case)", nullptr, nullptr,
     "The library's debug lines and TensorRT's info messages are printed only with it set; errors and warnings "
     "always are."},
};

const char* source_name(unsigned source) {
  switch (source) {
    case kFromCompileSpec: return "compile spec";
    case kFromSetOption: return "set_option option";
    default: return "load-time option";
  }
}

/// " (meaning; default D)" for messages.
std::string about(const OptionSpec& row) {
  return std::string(" (") + row.meaning + "; default " + row.default_text + ")";
}

std::string range_text(const OptionSpec& row) {
  char text[160];
  std::snprintf(text, sizeof(text), "a whole number of %s from %llu to %llu", row.unit,
                static_cast<unsigned long long>(row.min), static_cast<unsigned long long>(row.max));
  return text;
}

Result<OptionValue> number_from_text(const OptionSpec& row, std::string_view text, unsigned source, ErrorCode code) {
  const std::string shown = escape_for_message(text, 64);
  const char* from = source_name(source);
  if (text.empty()) {
    return make_error(code, "%s \"%s\" is empty; it takes %s%s", from, row.key, range_text(row).c_str(),
                      about(row).c_str());
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return make_error(code, "%s \"%s\" is \"%s\"; it takes %s, in decimal digits only%s", from, row.key,
                        shown.c_str(), range_text(row).c_str(), about(row).c_str());
    }
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (row.max - digit) / 10) {
      return make_error(code, "%s \"%s\" is \"%s\", more than %llu %s, the largest it takes", from, row.key,
                        shown.c_str(), static_cast<unsigned long long>(row.max), row.unit);
    }
    value = value * 10 + digit;
  }
  if (value < row.min) {
    return make_error(code, "%s \"%s\" is \"%s\"; it takes %s%s", from, row.key, shown.c_str(),
                      range_text(row).c_str(), about(row).c_str());
  }
  OptionValue out;
  out.number = value;
  return out;
}

Result<OptionValue> bool_from_text(const OptionSpec& row, std::string_view text, unsigned source, ErrorCode code) {
  OptionValue out;
  if (text == "1" || text == "true" || text == "True") {
    out.flag = true;
  } else if (text == "0" || text == "false" || text == "False") {
    out.flag = false;
  } else {
    return make_error(code, "%s \"%s\" is \"%s\"; it takes 1, 0, true or false", source_name(source), row.key,
                      escape_for_message(text, 64).c_str());
  }
  return out;
}

/// A compile spec's value: exactly its bytes (not NUL-terminated).
Result<OptionValue> from_compile_spec(const OptionSpec& row, const et::CompileSpec& spec) {
  const std::string_view text(static_cast<const char*>(spec.value.buffer),
                              spec.value.buffer != nullptr ? spec.value.nbytes : 0);
  if (row.type == OptionType::kBool) return bool_from_text(row, text, kFromCompileSpec, ErrorCode::kInvalidProgram);
  return number_from_text(row, text, kFromCompileSpec, ErrorCode::kInvalidProgram);
}

/// A load-time or set_option option's value.
Result<OptionValue> from_backend_option(const OptionSpec& row, const et::BackendOption& option, unsigned source) {
  const char* from = source_name(source);
  constexpr ErrorCode code = ErrorCode::kInvalidArgument;
  const bool* flag = std::get_if<bool>(&option.value);
  const int* number = std::get_if<int>(&option.value);
  const Text* text = std::get_if<Text>(&option.value);
  const std::string_view view = text != nullptr ? std::string_view(text->data(), strnlen(text->data(), text->size()))
                                                : std::string_view();
  OptionValue out;
  switch (row.type) {
    case OptionType::kBool:
      if (flag != nullptr) {
        out.flag = *flag;
        return out;
      }
      if (number != nullptr && (*number == 0 || *number == 1)) {
        out.flag = *number == 1;
        return out;
      }
      if (number != nullptr) {
        return make_error(code, "%s \"%s\" is %d; it takes a bool (or the int 0 or 1)%s", from, row.key, *number,
                          about(row).c_str());
      }
      return make_error(code, "%s \"%s\" is the string \"%s\"; it takes a bool (or the int 0 or 1)%s", from, row.key,
                        escape_for_message(view, 64).c_str(), about(row).c_str());
    case OptionType::kWholeNumber:
      if (flag != nullptr) {
        return make_error(code, "%s \"%s\" is a bool; it takes %s, as an int or a string of decimal digits%s", from,
                          row.key, range_text(row).c_str(), about(row).c_str());
      }
      if (number != nullptr) {
        if (*number < 0) {
          return make_error(code, "%s \"%s\" is %d, a negative number; it takes %s%s", from, row.key, *number,
                            range_text(row).c_str(), about(row).c_str());
        }
        const auto value = static_cast<std::uint64_t>(*number);
        if (value < row.min || value > row.max) {
          return make_error(code, "%s \"%s\" is %d; it takes %s%s", from, row.key, *number, range_text(row).c_str(),
                            about(row).c_str());
        }
        out.number = value;
        return out;
      }
      return number_from_text(row, view, source, code);
    case OptionType::kText:
      if (text == nullptr) {
        return make_error(code, "%s \"%s\" is %s; it takes a string: %s", from, row.key,
                          flag != nullptr ? "a bool" : "an int", row.meaning);
      }
      if (view.empty()) return make_error(code, "%s \"%s\" is empty; it takes a string: %s", from, row.key, row.meaning);
      out.text = view;
      return out;
  }
  return make_error(ErrorCode::kInternal, "option \"%s\" has no type", row.key);
}

std::mutex g_defaults_mutex;
DelegateOptions g_defaults;  // guarded by g_defaults_mutex

DelegateOptions process_defaults() {
  std::lock_guard<std::mutex> lock(g_defaults_mutex);
  return g_defaults;
}

std::string keys_with(unsigned source) {
  std::string keys;
  for (const OptionSpec& row : kTable) {
    if ((row.sources & source) == 0) continue;
    if (!keys.empty()) keys += ", ";
    keys += row.key;
  }
  return keys;
}

const char* sources_text(unsigned sources) {
  switch (sources & (kFromCompileSpec | kFromLoadOption | kFromSetOption)) {
    case kFromCompileSpec | kFromLoadOption: return "a load-time option or a compile spec";
    case kFromLoadOption | kFromSetOption: return "a load-time option or set_option";
    case kFromLoadOption: return "a load-time option";
    default: return "an environment variable";
  }
}

Result<const OptionSpec*> row_for(const et::BackendOption& option, unsigned source) {
  const std::string_view key(option.key, strnlen(option.key, sizeof(option.key)));
  const OptionSpec* row = find_option(key);
  if (row == nullptr) {
    return make_error(ErrorCode::kInvalidArgument,
                      "%s \"%s\" is not an option of TensorRTBackend; this way it takes %s (docs/OPTIONS.md)",
                      source_name(source), escape_for_message(key, 64).c_str(), keys_with(source).c_str());
  }
  if ((row->sources & source) == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "%s \"%s\" is not taken this way (it is %s); this way it takes %s (docs/OPTIONS.md)",
                      source_name(source), row->key, sources_text(row->sources), keys_with(source).c_str());
  }
  return row;
}

}  // namespace

et::Span<const OptionSpec> option_table() noexcept {
  return et::Span<const OptionSpec>(kTable, sizeof(kTable) / sizeof(kTable[0]));
}

const OptionSpec* find_option(std::string_view key) noexcept {
  for (const OptionSpec& row : kTable) {
    if (key == row.key) return &row;
  }
  return nullptr;
}

std::string load_option_keys() { return keys_with(kFromLoadOption); }

Result<DelegateOptions> resolve_delegate_options(et::ArrayRef<et::CompileSpec> compile_specs,
                                                 et::Span<const et::BackendOption> load_options) {
  DelegateOptions options = process_defaults();
  std::optional<std::uint64_t> baked_staging_mb;
  for (const OptionSpec& row : kTable) {
    if ((row.sources & kFromCompileSpec) == 0) continue;
    bool seen = false;
    for (const et::CompileSpec& spec : compile_specs) {
      if (spec.key == nullptr || std::strcmp(spec.key, row.key) != 0) continue;
      TRTET_CHECK_OR_RETURN(!seen, kInvalidProgram, "compile spec \"%s\" appears more than once", row.key);
      seen = true;
      TRTET_ASSIGN_OR_RETURN(const OptionValue value, from_compile_spec(row, spec));
      TRTET_RETURN_IF_ERROR(row.fill(options, value, ErrorCode::kInvalidProgram));
      if (row.fill == &fill_staging_budget) baked_staging_mb = value.number;
    }
  }
  bool staging_given = false;
  for (const et::BackendOption& option : load_options) {
    TRTET_ASSIGN_OR_RETURN(const OptionSpec* row, row_for(option, kFromLoadOption));
    TRTET_ASSIGN_OR_RETURN(const OptionValue value, from_backend_option(*row, option, kFromLoadOption));
    TRTET_RETURN_IF_ERROR(row->fill(options, value, ErrorCode::kInvalidArgument));
    if (row->fill == &fill_staging_budget) staging_given = true;
  }
  // Note [program's staging budget]: the budget pins host and device memory at load, so the
  // program's compile spec may ask for at most the application's cap; the application's own
  // load-time option staging_budget_mb is not capped, and overrides the compile spec.
  if (baked_staging_mb.has_value() && !staging_given && *baked_staging_mb > options.max_program_staging_budget_mb) {
    return make_error(ErrorCode::kInvalidProgram,
                      "compile spec \"staging_budget_mb\" asks for %llu MiB of pinned staging, more than the %llu "
                      "MiB "
                      "a program may ask for; the application may allow it with the load-time backend option "
                      "max_program_staging_budget_mb, or set the budget itself with the load-time option "
                      "staging_budget_mb",
                      static_cast<unsigned long long>(*baked_staging_mb),
                      static_cast<unsigned long long>(options.max_program_staging_budget_mb));
  }
  return options;
}

Status set_process_options(et::Span<const et::BackendOption> options) {
  std::lock_guard<std::mutex> lock(g_defaults_mutex);
  DelegateOptions updated = g_defaults;
  for (const et::BackendOption& option : options) {
    TRTET_ASSIGN_OR_RETURN(const OptionSpec* row, row_for(option, kFromSetOption));
    TRTET_ASSIGN_OR_RETURN(const OptionValue value, from_backend_option(*row, option, kFromSetOption));
    TRTET_RETURN_IF_ERROR(row->fill(updated, value, ErrorCode::kInvalidArgument));
  }
  g_defaults = std::move(updated);
  return Status::Ok();
}

Status get_process_options(et::Span<et::BackendOption> options) {
  const DelegateOptions current = process_defaults();
  for (et::BackendOption& option : options) {
    TRTET_ASSIGN_OR_RETURN(const OptionSpec* row, row_for(option, kFromSetOption));
    const std::uint64_t value = row->read(current);
    if (value <= kMostInt) {
      option.value = static_cast<int>(value);
    } else {
      Text text{};
      std::snprintf(text.data(), text.size(), "%llu", static_cast<unsigned long long>(value));
      option.value = text;
    }
  }
  return Status::Ok();
}

void reset_process_options() noexcept {
  std::lock_guard<std::mutex> lock(g_defaults_mutex);
  g_defaults = DelegateOptions();
}

}  // namespace torch_tensorrt::executorch_backend
