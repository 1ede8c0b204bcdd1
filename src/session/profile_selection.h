// Which optimization profile a session's engine has selected, and which profiles it has used: a
// profile's first use may allocate its engine memory, which nothing may do inside a capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// What selecting a call's profile did.
struct ProfileChange {
  bool switched = false;   ///< another profile was selected for the call
  bool first_use = false;  ///< ...for the first time (the staging learns its output sizes then)
};

/// The profile selection of one engine. Called under the session's lock.
class ProfileSelection {
 public:
  /// `profiles` profiles, profile 0 selected (as it is when the engine is made).
  void initialize(int profiles);
  /// Selects `profile` on `stream` where another is selected. kInvalidArgument for a profile not
  /// used yet while `capturing` (its first use may allocate).
  Result<ProfileChange> select(engine::Engine& engine, int profile, cudaStream_t stream, bool capturing);

  std::uint64_t switches() const noexcept { return switches_; }

 private:
  int active_ = 0;
  std::vector<bool> used_;  ///< per profile: selected before
  std::uint64_t switches_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
