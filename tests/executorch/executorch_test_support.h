// Shared by the ExecuTorch backend's suites: the runtime set up once, ExecuTorch's log captured,
// an engine factory that records what init() asked for, the build-time programs, and a direct
// init() harness for the error paths.
#pragma once

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/core/memory_allocator.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_factory.h"

namespace trtet_test {

namespace ex = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;

/// runtime_init() once, and ExecuTorch's log routed through capture (and still printed).
void ensure_executorch_runtime();

/// Everything ExecuTorch logged (ET_LOG, from the runtime and the backend) since clear_log().
std::string captured_log();
void clear_log();
/// "ExecuTorch error <name>; log: <captured_log()>": an ExecuTorch error with what was logged.
std::string error_with_log(etr::Error error);

/// Path of a program built at build time (tests/executorch/programs → build/.../programs/<name>.pte).
std::string program_path(const std::string& name);
/// Whether the build could make the programs (flatc and program.fbs found); the reason otherwise.
bool have_test_programs();

/// What the recording factory saw for one init().
struct SeenRequest {
  std::string spec;  ///< the engine bytes, as text (a test-engine spec)
  int device = -1;
  std::optional<std::uint64_t> budget;
  std::optional<std::string> runtime_library;
  std::optional<bool> allow_engine_host_code;
  std::string method_name;
  std::size_t io_bindings = 0;
};

/// Installs an engine factory for its scope: builds test engines from the blob's spec
/// (make_test_engine) and records each request and the last engine built.
class RecordingFactory {
 public:
  RecordingFactory();
  ~RecordingFactory() = default;
  RecordingFactory(const RecordingFactory&) = delete;             // installs once
  RecordingFactory& operator=(const RecordingFactory&) = delete;  // likewise

  std::vector<SeenRequest> requests() const;
  /// The engine of the last successful build (owned by its session; valid while that method lives).
  ex::engine::Engine* last_engine() const { return last_engine_.load(); }

 private:
  struct State {
    mutable std::mutex mutex;
    std::vector<SeenRequest> requests;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::atomic<ex::engine::Engine*> last_engine_{nullptr};
  ex::ScopedEngineFactory scope_;
};

/// Calls TensorRTBackend's init() directly, as ExecuTorch's Method does, with a runtime allocator
/// of its own, and destroys what init() returned.
class InitHarness {
 public:
  explicit InitHarness(std::size_t arena_bytes = 1 << 20);
  ~InitHarness();
  InitHarness(const InitHarness&) = delete;             // owns a handle
  InitHarness& operator=(const InitHarness&) = delete;  // likewise

  /// init() on `blob` with `specs` ({key, value} text pairs) and load-time `options`.
  etr::Error init(const std::vector<std::uint8_t>& blob,
                  const std::vector<std::pair<std::string, std::string>>& specs = {},
                  std::vector<etr::BackendOption> options = {});
  /// Whether the last init() freed the processed buffer before returning.
  bool freed_by_init() const { return freed_by_init_; }
  etr::DelegateHandle* handle() const { return handle_; }
  etr::BackendInterface& backend() const { return *backend_; }

 private:
  etr::BackendInterface* backend_ = nullptr;
  std::vector<std::uint8_t> arena_;
  std::unique_ptr<etr::MemoryAllocator> allocator_;
  etr::DelegateHandle* handle_ = nullptr;
  int frees_ = 0;
  bool freed_by_init_ = false;
};

/// Program and Method directly, with the application's own memory (as an embedded runner does):
/// planned buffers in host memory from the program's memory plan.
struct DirectMethod {
  std::unique_ptr<::executorch::extension::FileDataLoader> loader;
  std::unique_ptr<etr::Program> program;
  std::vector<std::uint8_t> method_pool = std::vector<std::uint8_t>(1 << 20);
  std::vector<std::vector<std::uint8_t>> planned;
  std::vector<etr::Span<std::uint8_t>> spans;
  std::unique_ptr<etr::MemoryAllocator> method_allocator;
  std::unique_ptr<etr::HierarchicalAllocator> planned_allocator;
  std::unique_ptr<etr::MemoryManager> memory;

  /// Loads build-time program `name` (program_path()), verifying its flatbuffer.
  etr::Error load_program(const std::string& name);
  /// Loads "forward" with `options` as its load-time backend options.
  etr::Result<etr::Method> load_method(const etr::LoadBackendOptionsMap* options = nullptr);
};

/// A processed blob binding `inputs` then `outputs` by name (no dtype or shape), with `spec` as its
/// engine bytes.
std::vector<std::uint8_t> blob_with_io(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                       const std::string& spec);
/// A processed blob with elementwise bindings (x, y -> out) and `spec` as its engine bytes.
std::vector<std::uint8_t> elementwise_blob(const std::string& spec);

/// Compile specs (key, value) as a program's delegate carries them.
using Entries = std::vector<std::pair<std::string, std::string>>;

/// Compile specs whose values live as long as the list.
struct Specs {
  explicit Specs(Entries entries) : values(std::move(entries)) {
    for (auto& [key, value] : values) {
      etr::CompileSpec spec{};
      spec.key = key.c_str();
      spec.value.buffer = value.data();
      spec.value.nbytes = value.size();
      specs.push_back(spec);
    }
  }
  Specs(const Specs&) = delete;  // the specs point into `values`
  Specs& operator=(const Specs&) = delete;
  etr::ArrayRef<etr::CompileSpec> ref() const { return etr::ArrayRef<etr::CompileSpec>(specs.data(), specs.size()); }
  Entries values;
  std::vector<etr::CompileSpec> specs;
};

/// A load-time option of an int or a string value.
etr::BackendOption int_option(const char* key, int value);
etr::BackendOption string_option(const char* key, const char* value);
etr::BackendOption bool_option(const char* key, bool value);

/// The elementwise engine's result with its default coefficients: out = 2x - 0.5y.
inline float elementwise_expected(float x, float y) { return 2.0f * x - 0.5f * y; }

/// `count` inputs for the elementwise programs; `call` shifts them (0: no shift), so that an
/// output left over from another call shows.
inline void fill_elementwise_inputs(std::vector<float>& x, std::vector<float>& y, std::size_t count, int call = 0) {
  x.resize(count);
  y.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    x[i] = 0.25f * static_cast<float>((i + 7 * static_cast<std::size_t>(call)) % 97);
    y[i] = 1.0f + static_cast<float>((i + static_cast<std::size_t>(call)) % 13) + static_cast<float>(call);
  }
}

}  // namespace trtet_test
