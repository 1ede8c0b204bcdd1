#include "backend/tensor_views.h"

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include <array>

namespace torch_tensorrt::executorch_backend {
namespace {

using ::executorch::aten::ScalarType;
using ::executorch::aten::SizesType;
using ::executorch::aten::Tensor;
using ::executorch::runtime::EValue;
using delegate::MemoryHint;
using delegate::TensorView;

Tensor& tensor_of(void* context) { return static_cast<EValue*>(context)->toTensor(); }

Result<Shape> shape_of(const Tensor& tensor) {
  const auto sizes = tensor.sizes();
  TRTET_CHECK_OR_RETURN(sizes.size() <= static_cast<std::size_t>(Shape::kMaxRank), kInvalidArgument,
                        "tensor of rank %zu exceeds the engine's maximum rank %d", sizes.size(), Shape::kMaxRank);
  std::array<std::int64_t, Shape::kMaxRank> dims{};
  for (std::size_t d = 0; d < sizes.size(); ++d) dims[d] = sizes[d];
  return Shape::from(dims.data(), sizes.size());
}

/// TensorView::resize for an ExecuTorch output: ExecuTorch's resize_tensor, then the view re-read.
Status resize_output(void* context, TensorView& view, const Shape& shape) {
  Tensor& tensor = tensor_of(context);
  std::array<SizesType, Shape::kMaxRank> sizes{};
  for (int d = 0; d < shape.rank; ++d) {
    TRTET_CHECK_OR_RETURN(shape[d] <= std::numeric_limits<SizesType>::max(), kInvalidArgument,
                          "output shape %s does not fit ExecuTorch's sizes", shape.to_string().c_str());
    sizes[static_cast<std::size_t>(d)] = static_cast<SizesType>(shape[d]);
  }
  const ::executorch::runtime::Error error = ::executorch::runtime::resize_tensor(
      tensor, {sizes.data(), static_cast<std::size_t>(shape.rank)});
  TRTET_CHECK_OR_RETURN(error == ::executorch::runtime::Error::Ok, kInvalidArgument,
                        "ExecuTorch cannot resize output tensor %s to %s (%s): the program's output is static or "
                        "planned smaller",
                        view.shape.to_string().c_str(), shape.to_string().c_str(),
                        ::executorch::runtime::to_string(error));
  TRTET_ASSIGN_OR_RETURN(view.shape, shape_of(tensor));
  view.data = tensor.mutable_data_ptr();
  view.capacity_bytes = tensor.nbytes();
  return Status::Ok();
}

/// TensorView::set_data for an aliased ExecuTorch output: points the tensor at its input's memory.
Status point_output(void* context, TensorView& view, void* data) {
  tensor_of(context).unsafeGetTensorImpl()->set_data(data);
  view.data = data;
  return Status::Ok();
}

}  // namespace

Result<DataType> data_type_of(ScalarType type) {
  switch (type) {
    case ScalarType::Float: return DataType::kFloat32;
    case ScalarType::Half: return DataType::kFloat16;
    case ScalarType::BFloat16: return DataType::kBFloat16;
    case ScalarType::Double: return DataType::kFloat64;
    case ScalarType::Char: return DataType::kInt8;
    case ScalarType::Byte: return DataType::kUInt8;
    case ScalarType::Int: return DataType::kInt32;
    case ScalarType::Long: return DataType::kInt64;
    case ScalarType::Bool: return DataType::kBool;
    case ScalarType::Float8_e4m3fn: return DataType::kFloat8E4M3;
    default:
      return make_error(ErrorCode::kInvalidArgument, "ExecuTorch scalar type %s has no engine counterpart",
                        ::executorch::runtime::toString(type));
  }
}

Status make_tensor_views(const engine::Engine& engine, ::executorch::runtime::Span<EValue*> args,
                         std::vector<TensorView>& views) {
  const int count = engine.io_count();
  TRTET_CHECK_OR_RETURN(args.size() == static_cast<std::size_t>(count), kInvalidArgument,
                        "the delegate call passes %zu arguments, the engine has %d bindings (inputs then outputs)",
                        args.size(), count);
  views.resize(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    EValue* value = args[static_cast<std::size_t>(i)];
    TRTET_CHECK_OR_RETURN(value != nullptr && value->isTensor(), kInvalidArgument,
                          "argument %d (%s \"%s\") is not a tensor", i, io.is_input ? "input" : "output",
                          io.name.c_str());
    Tensor& tensor = value->toTensor();
    TensorView& view = views[static_cast<std::size_t>(i)];
    view = TensorView{};
    TRTET_ASSIGN_OR_RETURN(view.dtype, data_type_of(tensor.scalar_type()));
    TRTET_ASSIGN_OR_RETURN(view.shape, shape_of(tensor));
    view.data = tensor.mutable_data_ptr();
    view.capacity_bytes = tensor.nbytes();
    view.hint = tensor.device_type() == ::executorch::runtime::etensor::DeviceType::CUDA ? MemoryHint::kDevice
                                                                                        : MemoryHint::kUnknown;
    view.context = value;
    if (!io.is_input) {
      view.resize = &resize_output;
      view.set_data = &point_output;
    }
  }
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend
