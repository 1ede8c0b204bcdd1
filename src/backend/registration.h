// The static registration of TensorRTBackend with ExecuTorch's backend registry.
#pragma once

#include <executorch/runtime/core/error.h>

namespace torch_tensorrt::executorch_backend {

/// The outcome of registering "TensorRTBackend" when this library was loaded: Ok, or
/// ExecuTorch's error (e.g. RegistrationAlreadyRegistered when another TensorRT delegate,
/// such as Torch-TensorRT's, registered the id first). A failure is also logged at load.
::executorch::runtime::Error registration_status() noexcept;

}  // namespace torch_tensorrt::executorch_backend
