// Which TensorRT the adapter compiles against, and the features that depend on the version.
#pragma once

#include <NvInferRuntime.h>
#include <NvInferVersion.h>

// setWeightStreamingBudgetV2 and getWeightStreamingBudgetV2 arrived in TensorRT 10.1.
#if NV_TENSORRT_MAJOR < 10 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR < 1)
#error "the TensorRT adapter needs TensorRT 10.1 or newer (setWeightStreamingBudgetV2)"
#endif

/// 1 where ICudaEngine::getAliasedInputTensor exists (TensorRT 10.15+): the engine reports the
/// outputs it updates in place (IKVCacheUpdateLayer), and the adapter checks them against the blob.
#if NV_TENSORRT_MAJOR > 10 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR >= 15)
#define TRTET_TENSORRT_HAS_ALIAS_QUERY 1
#else
#define TRTET_TENSORRT_HAS_ALIAS_QUERY 0
#endif

namespace torch_tensorrt::executorch_backend::tensorrt {

/// The version of the headers compiled against, in getInferLibVersion()'s encoding
/// (major * 10000 + minor * 100 + patch).
inline constexpr long kHeaderVersion = NV_TENSORRT_VERSION;

}  // namespace torch_tensorrt::executorch_backend::tensorrt
