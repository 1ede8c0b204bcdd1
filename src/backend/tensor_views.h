// ExecuTorch delegate arguments (EValues) as the session core's tensor views.
#pragma once

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/span.h>

#include <vector>

#include "common/status.h"
#include "session/tensor_view.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend {

/// The DataType of an ExecuTorch scalar type; kInvalidArgument for one no engine binding has.
Result<DataType> data_type_of(::executorch::aten::ScalarType type);

/// Fills `views` with one view per argument of the delegate call (inputs then outputs, in binding
/// order, as Torch-TensorRT's partitioner emits them). Every argument must be a tensor and their
/// number must equal the engine's bindings; kInvalidArgument otherwise, naming the argument.
///
/// Memory residency: a tensor whose ExecuTorch device is CUDA is marked device-resident; any other
/// is left for the delegate to classify by pointer, since CPU is also ExecuTorch's default for a
/// tensor whose data a caller pointed at GPU memory. Outputs get a resize callback (ExecuTorch's
/// resize_tensor, within the tensor's planned capacity) and a set_data callback (aliased outputs
/// re-pointed at their input's memory). `views` keeps its capacity between calls.
Status make_tensor_views(const engine::Engine& engine, ::executorch::runtime::Span<::executorch::runtime::EValue*> args,
                         std::vector<delegate::TensorView>& views);

}  // namespace torch_tensorrt::executorch_backend
