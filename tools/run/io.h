// The runner's inputs and outputs for one method: made once (random or from .npy), in the memory
// --io asks for, set on ExecuTorch's Module before the timed calls, and saved as .npy afterwards.
#pragma once

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "run/dtype.h"
#include "run/options.h"

namespace trtet_run {

using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;

/// ExecuTorch sizes for `dims` (a .npy shape or --shape): kInvalidArgument, naming `what`, for a
/// dimension outside 0..INT32_MAX (ExecuTorch's SizesType), never truncated.
ex::Result<std::vector<::executorch::aten::SizesType>> tensor_sizes(const std::vector<std::int64_t>& dims,
                                                                    const std::string& what);
/// The bytes of a tensor of `sizes` and `type`, counted with ex::checked_element_count:
/// kInvalidArgument, naming `what`, when they do not fit in 64 bits.
ex::Result<std::size_t> tensor_bytes(const std::vector<::executorch::aten::SizesType>& sizes, ScalarType type,
                                     const std::string& what);

class MethodIo {
 public:
  /// Reads the method's metadata, makes every tensor input (random by dtype and shape, or the
  /// --input files) and every output the program does not plan, in `options.io` memory, and sets
  /// them on `module`. Memory-planned inputs and outputs stay in the program's host memory.
  /// kInvalidArgument for a mismatch with the program (input count, dtype, a non-tensor input).
  static ex::Result<std::unique_ptr<MethodIo>> prepare(Module& module, const RunOptions& options);

  /// One line per input and output: name, dtype, shape, where it lives, where it came from.
  std::vector<std::string> describe() const;

  /// Writes the outputs of the last call to dir/output_<i>.npy, after waiting for `stream`; an
  /// existing file is replaced only with --overwrite, a symbolic link never (write_file()).
  ex::Status save_outputs(const std::vector<::executorch::runtime::EValue>& outputs, const std::string& dir,
                          cudaStream_t stream) const;

  MethodIo() = default;
  MethodIo(const MethodIo&) = delete;             // owns the buffers the module's tensors point at
  MethodIo& operator=(const MethodIo&) = delete;  // likewise

 private:
  struct Slot {
    std::string name;
    ScalarType type = ScalarType::Float;
    std::vector<::executorch::aten::SizesType> sizes;
    bool planned = false;    ///< lives in the program's planned (host) memory
    bool on_device = false;  ///< the data is in device memory
    std::string source;      ///< "random", a file, or "" for outputs
    TensorPtr tensor;        ///< owns the buffer (its deleter frees it); null for planned outputs
  };
  static std::string line(const char* kind, std::size_t index, const Slot& slot, IoMemory memory);

  IoMemory memory_ = IoMemory::kDevice;
  bool overwrite_ = false;  ///< --overwrite
  std::vector<Slot> inputs_;
  std::vector<Slot> outputs_;
};

}  // namespace trtet_run
