#include "fault_rule.h"

namespace trtet_triton {

// The errors CUDA's runtime API documents with "the process is left in an inconsistent state and any
// further CUDA work will return the same error; to continue using CUDA, the process must be terminated
// and relaunched", or whose context "cannot be used anymore" (Note [the fault domain]).
bool poisons_process(const cudaError_t error) noexcept {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace trtet_triton
