#include "session/profile_selection.h"

namespace torch_tensorrt::executorch_backend::delegate {

void ProfileSelection::initialize(int profiles) {
  active_ = 0;
  used_.assign(static_cast<std::size_t>(profiles), false);
  if (!used_.empty()) used_[0] = true;  // selected when the engine was made
}

Result<ProfileChange> ProfileSelection::select(engine::Engine& engine, int profile, cudaStream_t stream,
                                               bool capturing) {
  if (profile == active_) return ProfileChange{};
  const bool first_use = !used_[static_cast<std::size_t>(profile)];
  TRTET_CHECK_OR_RETURN(!(capturing && first_use), kInvalidArgument,
                        "the input shapes need optimization profile %d, which this engine has not used yet, and its "
                        "first use may allocate, which nothing may do while the stream is being captured: run the "
                        "call once before capturing",
                        profile);
  TRTET_RETURN_IF_ERROR(engine.select_profile(profile, stream));
  active_ = profile;
  used_[static_cast<std::size_t>(profile)] = true;
  ++switches_;
  return ProfileChange{true, first_use};
}

}  // namespace torch_tensorrt::executorch_backend::delegate
