// Compiles the seed's usage against the installed headers and runs the guard without a GPU.
#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cstdio>

namespace et = torch_tensorrt::executorch_backend;

int main() {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x1000);
  {
    et::CudaStreamGuard guard(stream);
    if (et::caller_stream() != stream) return 1;
  }
  if (et::caller_stream().has_value()) return 2;
  // The installed partitions API: an empty request is refused before any device is touched.
  auto split = et::split_device(0, {});
  if (split.ok() || split.error().code() != et::GreenContextErrc::kInvalidArgument) return 3;
  std::puts("consumer: linked torchtrt::executorch_backend; CudaStreamGuard selects and restores; "
            "split_device refuses an empty request");
  return 0;
}
