#include "session/aux_streams.h"

#include "cuda/check.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

Result<cudaStream_t> make_stream(CUgreenCtx green) {
  if (green == nullptr) {
    cudaStream_t stream = nullptr;
    TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  CUstream stream = nullptr;
  TRTET_CU_CHECK(api->cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
  return reinterpret_cast<cudaStream_t>(stream);
}

}  // namespace

AuxStreams::~AuxStreams() { reset(); }

Result<cudaStream_t*> AuxStreams::get(CUgreenCtx green, int count) {
  Set* set = nullptr;
  for (Set& s : sets_) {
    if (s.green == green) set = &s;
  }
  if (set == nullptr) {
    sets_.push_back(Set{green, {}});
    set = &sets_.back();
  }
  while (static_cast<int>(set->streams.size()) < count) {
    TRTET_ASSIGN_OR_RETURN(cudaStream_t stream, make_stream(green));
    set->streams.push_back(stream);
  }
  return set->streams.data();
}

void AuxStreams::reset() noexcept {
  for (Set& set : sets_) {
    for (cudaStream_t stream : set.streams) TRTET_CUDA_WARN(cudaStreamDestroy(stream));
  }
  sets_.clear();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
