// The contract fuzzer's own kernel (its engine's byte-wise output; gate.cu has the gate's).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"

namespace trtet_test::fuzz {

/// The byte every byte of FuzzOutputsEngine's "t_out" is XORed with.
constexpr unsigned char kXorByte = 0x5A;

/// out[i] = in[i] ^ kXorByte for `bytes` bytes, on `stream` (nothing launched for 0 bytes): exact
/// for every dtype.
torch_tensorrt::executorch_backend::Status launch_xor_bytes(const void* in, void* out, std::size_t bytes,
                                                            cudaStream_t stream);

}  // namespace trtet_test::fuzz
