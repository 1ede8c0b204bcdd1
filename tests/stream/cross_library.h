// Functions of two separate test shared objects (see CMakeLists.txt).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>

/// In libtrtet_guard_setter.so: runs `body` with a CudaStreamGuard(stream) in scope.
void trtet_with_guard_in_setter_library(cudaStream_t stream, const std::function<void()>& body);
/// In libtrtet_guard_reader.so: caller_stream() as seen from that library.
std::optional<cudaStream_t> trtet_caller_stream_in_reader_library();
