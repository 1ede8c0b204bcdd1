// A downstream application built against the INSTALLED package (scripts/test): it compiles the
// seed's usage against the installed headers, and brings its own engine through the public engine
// API (Engine.h), the way README tells users to.
//
//  1. CudaStreamGuard selects and restores a stream; split_device refuses an empty request before
//     touching a device (Error.h's one vocabulary, through GreenContext.h's older names too).
//     The SLO controller (SloController.h) decides on a two-plan ladder.
//  2. Its engine: a trivial one written here, with no kernels of its own (enqueue copies its input
//     to its output with cudaMemcpyAsync on the delegate's stream), installed with
//     set_engine_factory().
//  3. With the ExecuTorch backend in the package: it writes a TR01 processed blob by hand, loads it
//     through the registered "TensorRTBackend" (ExecuTorch's get_backend_class, init), checks that
//     init built the engine through this factory with the blob's bytes and bindings, and executes.
//     Without a GPU the method loads (the engine is made, the session cannot start) and execute
//     reports AccessFailed; with one, the output is the input. A factory error reaches init as
//     ExecuTorch's error for its code, and with no factory init says NotSupported.
#include <torch_tensorrt/executorch/Engine.h>
#include <torch_tensorrt/executorch/Error.h>
#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/SloController.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/core/portable_type/tensor.h>
#include <executorch/runtime/core/portable_type/tensor_impl.h>
#endif

namespace et = torch_tensorrt::executorch_backend;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what);
    ++failures;
  }
}

constexpr char kEngineBytes[] = "consumer copy engine v1";
constexpr int kElements = 4;

/// y = x for float32[4]: no kernels of its own; the copy runs on the stream the delegate hands it.
class CopyEngine final : public et::engine::Engine {
 public:
  explicit CopyEngine(int device) : device_(device) {
    io_[0].name = "x";
    io_[0].is_input = true;
    io_[1].name = "y";
    for (et::engine::IoDesc& io : io_) {
      io.dtype = et::DataType::kFloat32;
      io.min_shape = io.max_shape = et::Shape{kElements};
    }
  }

  int io_count() const noexcept override { return 2; }
  const et::engine::IoDesc& io(int index) const noexcept override { return io_[static_cast<std::size_t>(index)]; }
  const std::vector<et::engine::Alias>& aliases() const noexcept override { return aliases_; }
  int device() const noexcept override { return device_; }

  et::Status set_input_shape(int index, const et::Shape& shape) override {
    if (index != 0 || shape != et::Shape{kElements}) {
      return et::Status(et::ErrorCode::kInvalidArgument, "copy engine: x is float32[4], not " + shape.to_string());
    }
    return et::Status::Ok();
  }
  et::Result<int> infer_shapes() override { return 0; }
  et::Result<et::Shape> output_shape(int index) const override {
    if (index != 1) return et::Error(et::ErrorCode::kInvalidArgument, "copy engine: binding 1 is its output");
    return et::Shape{kElements};
  }
  et::Status set_tensor_address(int index, void* address) override {
    addresses_[static_cast<std::size_t>(index)] = address;
    return et::Status::Ok();
  }
  et::Status enqueue(cudaStream_t stream) override {
    const cudaError_t error = cudaMemcpyAsync(addresses_[1], addresses_[0], kElements * sizeof(float),
                                              cudaMemcpyDeviceToDevice, stream);
    if (error != cudaSuccess) return et::Status(et::ErrorCode::kInternal, cudaGetErrorString(error));
    return et::Status::Ok();
  }

 private:
  int device_;
  std::array<et::engine::IoDesc, 2> io_;
  std::vector<et::engine::Alias> aliases_;
  std::array<void*, 2> addresses_{};
};

/// What the factory saw, for the checks after init.
struct Seen {
  int calls = 0;
  std::string engine_bytes;
  std::vector<std::string> bindings;
  std::string method;
  int device = -1;
};

et::EngineFactory copy_engine_factory(Seen& seen) {
  return [&seen](const et::EngineRequest& request) -> et::Result<et::engine::EnginePtr> {
    ++seen.calls;
    seen.engine_bytes.assign(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size);
    if (request.metadata != nullptr) {
      for (const et::blob::IoBinding& binding : request.metadata->io_bindings) seen.bindings.push_back(binding.name);
    }
    seen.method = request.method_name != nullptr ? request.method_name : "";
    seen.device = request.device;
    if (seen.engine_bytes != kEngineBytes) {
      return et::Error(et::ErrorCode::kInvalidProgram, "not a copy engine: \"" + seen.engine_bytes + "\"");
    }
    return et::engine::EnginePtr(std::make_unique<CopyEngine>(request.device));
  };
}

/// A TR01 processed blob (docs/DESIGN.md, "The processed blob"): header, metadata JSON, engine.
std::vector<std::uint8_t> tr01_blob() {
  const std::string metadata =
      R"({"io_bindings":[{"name":"x","dtype":"float32","shape":[4],"is_input":true},)"
      R"({"name":"y","dtype":"float32","shape":[4],"is_input":false}],"aliased_io":[],)"
      R"("hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""})";
  const std::size_t engine_size = sizeof(kEngineBytes) - 1;
  const std::uint32_t metadata_offset = 32;
  const auto metadata_size = static_cast<std::uint32_t>(metadata.size());
  const auto engine_offset = static_cast<std::uint32_t>((metadata_offset + metadata_size + 15) / 16 * 16);
  std::vector<std::uint8_t> blob(engine_offset + engine_size, 0);
  auto put = [&](std::size_t at, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) blob[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
  };
  std::memcpy(blob.data(), "TR01", 4);
  put(4, metadata_offset, 4);
  put(8, metadata_size, 4);
  put(12, engine_offset, 4);
  put(16, engine_size, 8);
  blob[24] = 0x01;  // reserved, as the writer fills it
  std::memcpy(blob.data() + metadata_offset, metadata.data(), metadata.size());
  std::memcpy(blob.data() + engine_offset, kEngineBytes, engine_size);
  return blob;
}

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
namespace etr = ::executorch::runtime;

/// init() of the registered backend on a fresh blob, in a runtime allocator of its own.
struct Loaded {
  std::vector<std::uint8_t> blob = tr01_blob();
  std::vector<std::uint8_t> arena = std::vector<std::uint8_t>(std::size_t{4} << 20);
  etr::MemoryAllocator allocator{static_cast<std::uint32_t>(arena.size()), arena.data()};
  etr::FreeableBuffer processed{blob.data(), blob.size(), nullptr};
  etr::BackendInitContext context{&allocator, nullptr, "forward"};
  etr::Result<etr::DelegateHandle*> handle;

  explicit Loaded(etr::BackendInterface& backend) : handle(backend.init(context, &processed, {})) {}
};

void run_through_the_backend(Seen& seen) {
  etr::BackendInterface* backend = etr::get_backend_class(et::TensorRTBackend::kBackendId);
  check(backend != nullptr, "\"TensorRTBackend\" is registered when the library is loaded");
  if (backend == nullptr) return;
  check(backend->is_available(), "the backend is available");

  {
    et::ScopedEngineFactory ours(copy_engine_factory(seen));
    Loaded loaded(*backend);
    check(loaded.handle.ok(), "init loads the blob through our factory (with or without a GPU)");
    check(seen.calls == 1, "init called our factory once");
    check(seen.engine_bytes == kEngineBytes, "the factory got the blob's engine bytes");
    check(seen.bindings == std::vector<std::string>{"x", "y"}, "the factory got the blob's io_bindings");
    check(seen.method == "forward" && seen.device == 0, "the factory got the method name and device");
    if (!loaded.handle.ok()) return;

    std::array<float, kElements> x{1.5f, -2.f, 3.25f, 42.f}, y{};
    etr::etensor::TensorImpl::SizesType sizes[1] = {kElements};
    etr::etensor::TensorImpl::DimOrderType dim_order[1] = {0};
    etr::etensor::TensorImpl::StridesType strides[1] = {1};
    etr::etensor::TensorImpl x_impl(etr::etensor::ScalarType::Float, 1, sizes, x.data(), dim_order, strides);
    etr::etensor::TensorImpl y_impl(etr::etensor::ScalarType::Float, 1, sizes, y.data(), dim_order, strides);
    etr::EValue values[2] = {etr::EValue(etr::etensor::Tensor(&x_impl)), etr::EValue(etr::etensor::Tensor(&y_impl))};
    etr::EValue* args[2] = {&values[0], &values[1]};
    etr::BackendExecutionContext execution;
    const etr::Error executed = backend->execute(execution, *loaded.handle, etr::Span<etr::EValue*>(args, 2));
    if (have_gpu()) {
      check(executed == etr::Error::Ok, "execute runs our engine on the GPU");
      check(y == x, "our engine's output is its input");
      std::printf("consumer: our engine ran through TensorRTBackend on the GPU: y = x\n");
    } else {
      check(executed == etr::Error::AccessFailed, "without a GPU, execute reports AccessFailed");
      std::printf("consumer: no GPU: our engine was built at init, execute reported AccessFailed\n");
    }
    backend->destroy(*loaded.handle);
  }

  {  // a factory's error is init's, mapped by meaning (Error.h)
    et::ScopedEngineFactory refusing([](const et::EngineRequest&) -> et::Result<et::engine::EnginePtr> {
      return et::Error(et::ErrorCode::kIncompatible, "consumer: built for another engine version");
    });
    Loaded loaded(*backend);
    check(!loaded.handle.ok() && loaded.handle.error() == etr::Error::DelegateInvalidCompatibility,
          "a factory's kIncompatible fails init with DelegateInvalidCompatibility");
  }
  {  // no factory at all
    et::ScopedEngineFactory none{et::EngineFactory()};
    Loaded loaded(*backend);
    check(!loaded.handle.ok() && loaded.handle.error() == etr::Error::NotSupported,
          "with no engine factory, init fails with NotSupported");
  }
}
#endif

}  // namespace

int main() {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x1000);
  {
    et::CudaStreamGuard guard(stream);
    check(et::caller_stream() == stream, "the guard selects its stream");
  }
  check(!et::caller_stream().has_value(), "the guard restores the selection");

  // The installed partitions API: an empty request is refused before any device is touched.
  auto split = et::split_device(0, {});
  check(!split.ok() && split.error().code() == et::ErrorCode::kInvalidArgument, "split_device refuses {}");
  check(split.error().code() == et::GreenContextErrc::kInvalidArgument, "GreenContextErrc is ErrorCode");
  const et::GreenContextError& old_name = split.error();
  check(old_name.closest_valid().empty() && old_name.limits().device == -1, "no split details for {}");

  // The installed SLO controller: a two-plan ladder; the latency model's rate rises beyond what its
  // 16-SM plan carries, so the first decision moves it to the 48-SM plan (a missed target switches at once).
  {
    namespace slo = et::slo;
    auto ladder = slo::Ladder::make({{"lat16", {{"latency", 16, {{100, 50}, {1000, 400}}}, {"bulk", 112, {{10, 900}}}}},
                                     {"lat48", {{"latency", 48, {{100, 40}, {1000, 80}}}, {"bulk", 80, {{10, 1200}}}}}},
                                    132);
    check(ladder.ok(), "Ladder::make takes a valid ladder");
    auto controller = slo::SloController::make(*ladder, {{"latency", 150, 0}, {"bulk", 2000, 0}}, "lat16");
    check(controller.ok(), "SloController::make");
    bool added = true;
    for (int i = 0; i < 900; ++i) added = added && controller->add_sample("latency", 60.0, 0.001 * i).ok();
    check(added, "add_sample takes the samples");
    auto decision = controller->decide(0.9);
    check(decision.ok() && decision->switched && decision->plan_name == "lat48", "the controller moves to lat48");
    check(!slo::Ladder::make({}, 132).ok(), "an empty ladder is refused");
  }

  // The engine API: the headers and the library agree on its version; our factory is installed.
  check(et::engine_api_version() == TORCHTRT_EXECUTORCH_ENGINE_API_VERSION, "engine API version of the library");
  check(et::kEngineApiVersion == TORCHTRT_EXECUTORCH_ENGINE_API_VERSION, "kEngineApiVersion");
  Seen seen;
  {
    et::ScopedEngineFactory ours(copy_engine_factory(seen));
    check(static_cast<bool>(et::engine_factory()), "set_engine_factory installs our factory");
  }

#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
  run_through_the_backend(seen);
#else
  std::printf("consumer: the package has no ExecuTorch backend; the engine factory was installed only\n");
#endif

  if (failures != 0) return 1;
#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
  const char* through = " and loaded through TensorRTBackend";
#else
  const char* through = "";
#endif
  std::printf("consumer: linked torchtrt::executorch_backend; CudaStreamGuard selects and restores; "
              "split_device refuses an empty request; engine API %d: our own engine built through "
              "set_engine_factory%s\n",
              et::engine_api_version(), through);
  return 0;
}
