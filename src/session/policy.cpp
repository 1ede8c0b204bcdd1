#include "session/policy.h"

namespace torch_tensorrt::executorch_backend::delegate {

bool needs_green_context_query(std::optional<cudaStream_t> selected) noexcept {
  return cuda::is_default_stream_handle(selected.value_or(fallback_stream()));
}

Result<StreamChoice> choose_stream(std::optional<cudaStream_t> selected, bool green_context_current) {
  StreamChoice choice;
  choice.selected = selected.has_value();
  choice.caller = selected.value_or(fallback_stream());
  choice.default_handle = cuda::is_default_stream_handle(choice.caller);
  if (!choice.default_handle) return choice;
  TRTET_CHECK_OR_RETURN(!(green_context_current && !choice.selected), kInvalidArgument,
                        "a CUDA green context is current on this thread but no stream is selected: "
                        "scope a CudaStreamGuard with a stream of that green context around execute()");
  TRTET_CHECK_OR_RETURN(!green_context_current, kInvalidArgument,
                        "a CUDA green context is current on this thread and the selected stream is a default "
                        "stream, which cannot run there: select a stream of that green context");
  return choice;
}

const char* to_string(Completion completion) noexcept {
  switch (completion) {
    case Completion::kReturnAtOnce: return "return at once";
    case Completion::kWaitInputsConsumed: return "wait until host inputs are consumed";
    case Completion::kWaitOutputsReady: return "wait until outputs are ready";
  }
  return "unknown";
}

Result<Completion> decide_completion(const CallFacts& facts) {
  if (facts.capturing) {
    TRTET_CHECK_OR_RETURN(!facts.pageable, kInvalidArgument,
                          "pageable host memory cannot be used while the stream is being captured into a CUDA "
                          "graph (the copy would synchronize); use device or pinned host memory");
    return Completion::kReturnAtOnce;
  }
  if (!facts.caller_selected || facts.host_outputs) return Completion::kWaitOutputsReady;
  if (facts.host_inputs) return Completion::kWaitInputsConsumed;
  return Completion::kReturnAtOnce;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
