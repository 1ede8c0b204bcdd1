// Public entry point of the TensorRT delegate for ExecuTorch.
//
// Note [Execute contract]
// A delegate call runs on the stream a CudaStreamGuard selected on its thread; without one it runs
// in order with the thread's cudaStreamPerThread and returns with every output ready. Under a
// guard it returns once host outputs are written and host inputs read (at once when all I/O is on
// the device), and on a capturing stream it is recorded into the capture. The contract in full,
// case by case, and how each part is kept: docs/DESIGN.md, "The execute contract".
#pragma once

#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/Profiling.h>  // flush_profiling: the GPU times of traced calls

#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
// Defined (PUBLIC) by the torchtrt::executorch_backend target when it was built with ExecuTorch.
#include <executorch/runtime/backend/interface.h>

namespace torch_tensorrt::executorch_backend {

/// The TensorRT delegate for ExecuTorch, registered under kBackendId ("TensorRTBackend") when
/// this library is loaded, so programs exported by Torch-TensorRT load unchanged.
///
/// Stateless: each loaded delegate lives behind its DelegateHandle (a session placed in the
/// method's runtime allocator). Calls on different handles may run concurrently; calls on one
/// handle are queued one at a time, and calls from threads on different streams overlap on the GPU
/// (docs/DESIGN.md, "Ordering between calls").
class TensorRTBackend final : public ::executorch::runtime::BackendInterface {
 public:
  /// The backend id programs name in their delegate calls.
  static constexpr char kBackendId[] = "TensorRTBackend";

  /// True: the backend is compiled in. Whether a GPU can run an engine is decided per engine
  /// at init() and reported by execute() (a method still loads on a machine without a GPU).
  bool is_available() const override;

  /// Parses the processed blob (TR01/TR02), builds its engine through the installed engine
  /// factory, frees `processed` and places a session in the runtime allocator. The
  /// options (docs/OPTIONS.md) come from the load-time backend options over the compile specs;
  /// a load-time option of a key the backend does not have is refused (InvalidArgument).
  /// Errors: InvalidProgram (malformed blob or compile spec, engine bindings that contradict the
  /// blob), InvalidArgument (malformed load-time option), NotSupported (no engine factory in this
  /// build), DelegateInvalidCompatibility (engine built for another version or platform),
  /// DelegateMemoryAllocationFailed (runtime allocator exhausted). Without a GPU the method loads
  /// and execute() reports AccessFailed.
  ::executorch::runtime::Result<::executorch::runtime::DelegateHandle*> init(
      ::executorch::runtime::BackendInitContext& context, ::executorch::runtime::FreeableBuffer* processed,
      ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs) const override;

  /// Runs the engine on `args` (inputs then outputs, in binding order) under Note [Execute
  /// contract]: on the stream a CudaStreamGuard selected on this thread, else cudaStreamPerThread.
  /// Outputs are resized to the engine's shapes. Errors: InvalidArgument (caller misuse: argument
  /// count, dtype, shape outside the profile, a stream of another device, pageable memory during
  /// capture), Internal (CUDA or engine failure), AccessFailed (no usable GPU),
  /// DelegateInvalidHandle (null handle).
  /// A call rejected before its work is enqueued enqueues nothing and leaves the handle usable:
  /// every error above but Internal is such a rejection, since each check is made before any work
  /// is queued (docs/DESIGN.md, "The execute contract", the steps). A CUDA or engine failure once
  /// enqueueing has begun (Internal) may leave part of the call's work queued on the stream; the
  /// handle still records the call's completion, so later calls and destroy() wait for that work.
  ::executorch::runtime::Error execute(::executorch::runtime::BackendExecutionContext& context,
                                       ::executorch::runtime::DelegateHandle* handle,
                                       ::executorch::runtime::Span<::executorch::runtime::EValue*> args) const override;

  /// Process-wide defaults for methods loaded afterwards (ExecuTorch's
  /// executorch::runtime::set_option("TensorRTBackend", options)): max_program_staging_budget_mb,
  /// max_blob_metadata_bytes and profiling_gpu_every (docs/OPTIONS.md); a load-time option still
  /// wins, and methods already loaded keep theirs. Every option is checked before any is applied:
  /// another key, or a bad value, is InvalidArgument and changes nothing.
  ET_NODISCARD ::executorch::runtime::Error set_option(
      ::executorch::runtime::BackendOptionContext& context,
      const ::executorch::runtime::Span<::executorch::runtime::BackendOption>& backend_options) override;

  /// Fills each option with the current process default of its key (the keys set_option takes),
  /// as an int; InvalidArgument for another key.
  ET_NODISCARD ::executorch::runtime::Error get_option(
      ::executorch::runtime::BackendOptionContext& context,
      ::executorch::runtime::Span<::executorch::runtime::BackendOption>& backend_options) override;

  /// Waits, by event, for the handle's in-flight work, then releases it. Never synchronizes the
  /// device or another green context.
  void destroy(::executorch::runtime::DelegateHandle* handle) const override;
};

namespace detail {
/// True when "TensorRTBackend" was registered as this library loaded (defined beside the
/// registration). The reference below gives every program that includes this header a link
/// dependency on this library, even under --as-needed, so the registration (a static initializer
/// of this library) runs although the program may name nothing else from it.
extern const bool kTensorRTBackendRegistered;
[[maybe_unused]] __attribute__((used)) inline const bool* const kKeepTensorRTBackendRegistration =
    &kTensorRTBackendRegistered;
}  // namespace detail

}  // namespace torch_tensorrt::executorch_backend
#endif  // TORCHTRT_EXECUTORCH_WITH_RUNTIME
