#include "contract_fuzz/fuzz_outputs_engine.h"

#include <string>
#include <vector>

#include "contract_fuzz/fuzz_kernels.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

std::vector<ex::engine::IoDesc> make_bindings(const Shape& min_shape, const Shape& max_shape,
                                              FuzzOutputsEngine::Outputs outputs) {
  std::vector<ex::engine::IoDesc> io = {input_desc("x", min_shape, max_shape), input_desc("y", min_shape, max_shape)};
  if (outputs.alias) io.push_back(input_desc("cache", min_shape, max_shape));
  if (outputs.has_side()) io.push_back(input_desc("t", min_shape, max_shape, outputs.side));
  static const char* const kNames[FuzzOutputsEngine::kMaxOutputs] = {"out0", "out1", "out2", "out3"};
  for (int j = 0; j < outputs.plain && j < FuzzOutputsEngine::kMaxOutputs; ++j) {
    io.push_back(output_desc(kNames[j], min_shape.rank));
  }
  if (outputs.alias) io.push_back(output_desc("cache_out", min_shape.rank));
  if (outputs.has_side()) io.push_back(output_desc("t_out", min_shape.rank, outputs.side));
  return io;
}

std::vector<ex::engine::Alias> make_aliases(FuzzOutputsEngine::Outputs outputs) {
  if (!outputs.alias) return {};
  const int inputs = 3 + (outputs.has_side() ? 1 : 0);
  return {ex::engine::Alias{inputs + outputs.plain, 2, ex::engine::AliasKind::kKvCacheUpdate}};
}

}  // namespace

FuzzOutputsEngine::FuzzOutputsEngine(int device, const Shape& min_shape, const Shape& max_shape, Outputs outputs,
                                     const KernelOptions& options)
    : CudaTestEngine(make_bindings(min_shape, max_shape, outputs), make_aliases(outputs), device, options),
      outputs_(outputs) {}

Result<std::unique_ptr<FuzzOutputsEngine>> FuzzOutputsEngine::create(int device, const Shape& min_shape,
                                                                     const Shape& max_shape, Outputs outputs,
                                                                     const KernelOptions& options) {
  const int count = outputs.plain + (outputs.alias ? 1 : 0);
  TRTET_CHECK_OR_RETURN(outputs.plain >= 0 && count >= 1 && count <= kMaxOutputs, kInvalidArgument,
                        "FuzzOutputsEngine takes 1 to %d outputs, got %d plain%s", kMaxOutputs, outputs.plain,
                        outputs.alias ? " and an aliased one" : "");
  std::unique_ptr<FuzzOutputsEngine> engine(new FuzzOutputsEngine(device, min_shape, max_shape, outputs, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

Result<int> FuzzOutputsEngine::infer_shapes() {
  for (int i = 0; i < input_count(); ++i) {
    TRTET_CHECK_OR_RETURN(shape_set_[static_cast<std::size_t>(i)], kInvalidState, "infer_shapes before input %d's shape",
                          i);
    TRTET_CHECK_OR_RETURN(shapes_[static_cast<std::size_t>(i)] == shapes_[0], kInvalidArgument,
                          "input %d has shape %s, x has %s: every input must have x's shape", i,
                          shapes_[static_cast<std::size_t>(i)].to_string().c_str(), shapes_[0].to_string().c_str());
  }
  for (int o = input_count(); o < io_count(); ++o) set_output_shape(o, shapes_[0]);
  return 0;
}

Status FuzzOutputsEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(check_bound());
  const auto* x = static_cast<const float*>(addresses_[0]);
  const auto* y = static_cast<const float*>(addresses_[1]);
  const std::int64_t n = shapes_[0].numel();
  const int profile = selected_profile();
  if (options_.spin_us > 0) TRTET_RETURN_IF_ERROR(launch_spin(spin_ns(), 1, stream));
  for (int j = 0; j < outputs_.plain; ++j) {
    auto* out = static_cast<float*>(addresses_[static_cast<std::size_t>(input_count() + j)]);
    TRTET_RETURN_IF_ERROR(
        launch_axpby(x, y, out, n, coefficient_a(j), coefficient_b(j, profile), 0, sm_flags(), stream));
  }
  if (outputs_.alias) {
    const auto* cache = static_cast<const float*>(addresses_[2]);
    auto* cache_out = static_cast<float*>(addresses_[static_cast<std::size_t>(input_count() + outputs_.plain)]);
    // x - cache: an update whose result depends on the order of updates, as a real cache's does.
    TRTET_RETURN_IF_ERROR(launch_axpby(cache, x, cache_out, n, -1.0f, 1.0f, 0, sm_flags(), stream));
  }
  if (outputs_.has_side()) {
    const std::size_t bytes = static_cast<std::size_t>(n) * ex::element_size(outputs_.side);
    TRTET_RETURN_IF_ERROR(fuzz::launch_xor_bytes(addresses_[static_cast<std::size_t>(input_count() - 1)],
                                                 addresses_[static_cast<std::size_t>(io_count() - 1)], bytes, stream));
  }
  return mark_sms(stream);
}

}  // namespace trtet_test
