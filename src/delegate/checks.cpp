#include "delegate/checks.h"

#include <cstdint>

namespace torch_tensorrt::executorch_backend::delegate {

std::size_t byte_size(const Shape& shape, DataType dtype) noexcept {
  std::size_t bytes = element_size(dtype);
  for (int d = 0; d < shape.rank; ++d) {
    const auto dim = static_cast<std::size_t>(shape[d]);
    if (dim == 0) return 0;
    if (__builtin_mul_overflow(bytes, dim, &bytes)) return SIZE_MAX;
  }
  return bytes;
}

Result<std::size_t> checked_byte_size(const Shape& shape, DataType dtype, const char* what, int index,
                                      const std::string& name) {
  const std::size_t bytes = byte_size(shape, dtype);
  TRTET_CHECK_OR_RETURN(bytes != SIZE_MAX, kInvalidArgument,
                        "%s %d (\"%s\") has shape %s of %s, whose size in bytes overflows 64 bits", what, index,
                        name.c_str(), shape.to_string().c_str(), to_string(dtype));
  return bytes;
}

Status check_input(const engine::IoDesc& io, const TensorView& arg, int index) {
  TRTET_CHECK_OR_RETURN(arg.dtype == io.dtype, kInvalidArgument, "input %d (\"%s\") has dtype %s, the engine expects %s",
                        index, io.name.c_str(), to_string(arg.dtype), to_string(io.dtype));
  TRTET_CHECK_OR_RETURN(arg.shape.rank == io.min_shape.rank, kInvalidArgument,
                        "input %d (\"%s\") has rank %d (shape %s), the engine expects rank %d", index, io.name.c_str(),
                        arg.shape.rank, arg.shape.to_string().c_str(), io.min_shape.rank);
  for (int d = 0; d < arg.shape.rank; ++d) {
    TRTET_CHECK_OR_RETURN(arg.shape[d] >= io.min_shape[d] && arg.shape[d] <= io.max_shape[d], kInvalidArgument,
                          "input %d (\"%s\") has shape %s: dimension %d = %lld is outside the engine's profile %s..%s",
                          index, io.name.c_str(), arg.shape.to_string().c_str(), d,
                          static_cast<long long>(arg.shape[d]), io.min_shape.to_string().c_str(),
                          io.max_shape.to_string().c_str());
  }
  TRTET_ASSIGN_OR_RETURN(const std::size_t needed, checked_byte_size(arg.shape, arg.dtype, "input", index, io.name));
  TRTET_CHECK_OR_RETURN(arg.capacity_bytes >= needed, kInvalidArgument,
                        "input %d (\"%s\") holds %zu bytes, shape %s of %s needs %zu", index, io.name.c_str(),
                        arg.capacity_bytes, arg.shape.to_string().c_str(), to_string(arg.dtype), needed);
  TRTET_CHECK_OR_RETURN(needed == 0 || arg.data != nullptr, kInvalidArgument,
                        "input %d (\"%s\") has no data pointer", index, io.name.c_str());
  return Status::Ok();
}

Status check_arguments(const engine::Engine& engine, const TensorView* args, std::size_t count) {
  const int io_count = engine.io_count();
  TRTET_CHECK_OR_RETURN(count == static_cast<std::size_t>(io_count), kInvalidArgument,
                        "execute got %zu arguments, the engine has %d bindings (inputs then outputs)", count,
                        io_count);
  for (int i = 0; i < io_count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    if (io.is_input) {
      TRTET_RETURN_IF_ERROR(check_input(io, args[i], i));
    } else {
      TRTET_CHECK_OR_RETURN(args[i].dtype == io.dtype, kInvalidArgument,
                            "output %d (\"%s\") has dtype %s, the engine produces %s", i, io.name.c_str(),
                            to_string(args[i].dtype), to_string(io.dtype));
    }
  }
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
