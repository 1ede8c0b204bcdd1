#include "engines/fake_engine.h"

#include "engines/fault_hook.h"

namespace trtet_test {

FakeEngine::FakeEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases, int device)
    : TestEngine(std::move(io), std::move(aliases), device) {}

std::unique_ptr<FakeEngine> FakeEngine::elementwise(const Shape& min_shape, const Shape& max_shape, int device) {
  std::vector<ex::engine::IoDesc> io{input_desc("x", min_shape, max_shape), input_desc("y", min_shape, max_shape),
                                     output_desc("out", min_shape.rank)};
  return std::make_unique<FakeEngine>(std::move(io), std::vector<ex::engine::Alias>{}, device);
}

void FakeEngine::record(Call call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.push_back(call);
}

Status FakeEngine::set_input_shape(int index, const Shape& shape) {
  record(Call{Call::Op::kSetInputShape, index, shape, nullptr, nullptr});
  return TestEngine::set_input_shape(index, shape);
}

Result<int> FakeEngine::infer_shapes() {
  record(Call{Call::Op::kInferShapes, -1, {}, nullptr, nullptr});
  int output = 0;
  for (int i = 0; i < io_count(); ++i) {
    if (io(i).is_input) continue;
    if (static_cast<std::size_t>(output) < output_shapes.size()) {
      set_output_shape(i, output_shapes[static_cast<std::size_t>(output)]);
    } else {
      set_output_shape(i, shapes_[0]);
    }
    ++output;
  }
  return unresolved_outputs;
}

Status FakeEngine::set_tensor_address(int index, void* address) {
  record(Call{Call::Op::kSetTensorAddress, index, {}, address, nullptr});
  return TestEngine::set_tensor_address(index, address);
}

Status FakeEngine::set_aux_streams(cudaStream_t* streams, int count) {
  record(Call{Call::Op::kSetAuxStreams, count, {}, nullptr, nullptr});
  aux_streams.assign(streams, streams + count);
  return Status::Ok();
}

Status FakeEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(engine_fault("test engine enqueue"));
  record(Call{Call::Op::kEnqueue, -1, {}, nullptr, stream});
  return enqueue_status;
}

std::vector<FakeEngine::Call> FakeEngine::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

std::size_t FakeEngine::count(Call::Op op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const Call& call : calls_) n += call.op == op ? 1 : 0;
  return n;
}

void FakeEngine::clear_calls() {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.clear();
}

}  // namespace trtet_test
