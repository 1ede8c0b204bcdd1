#include "engines/probe_engine.h"

#include <stdexcept>

namespace trtet_test {

Result<std::unique_ptr<ProbeEngine>> ProbeEngine::create(int device, const Shape& min_shape, const Shape& max_shape,
                                                         const KernelOptions& options) {
  std::unique_ptr<ProbeEngine> engine(new ProbeEngine(device, min_shape, max_shape, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

const char* to_string(ProbeEngine::Throw where) {
  switch (where) {
    case ProbeEngine::Throw::kSetInputShape: return "SetInputShape";
    case ProbeEngine::Throw::kInferShapes: return "InferShapes";
    case ProbeEngine::Throw::kEnqueue: return "Enqueue";
    default: return "Never";
  }
}

void ProbeEngine::maybe_throw(Throw where) {
  if (throw_in.load() != where) return;
  throws.fetch_add(1);
  throw std::runtime_error(kThrowMessage);
}

Status ProbeEngine::set_input_shape(int index, const Shape& shape) {
  maybe_throw(Throw::kSetInputShape);
  return ElementwiseEngine::set_input_shape(index, shape);
}

Result<int> ProbeEngine::infer_shapes() {
  maybe_throw(Throw::kInferShapes);
  return ElementwiseEngine::infer_shapes();
}

Status ProbeEngine::enqueue(cudaStream_t stream) {
  maybe_throw(Throw::kEnqueue);
  return ElementwiseEngine::enqueue(stream);
}

}  // namespace trtet_test
