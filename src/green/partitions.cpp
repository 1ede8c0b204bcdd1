// The public partitions API (torch_tensorrt/executorch/GreenContext.h) over the green layer:
// GreenContext holds a green::DriverGreenContext (which owns the context and its streams). Errors are
// the layer's own (Status is the public Error), with the device's limits attached to a rejected split.
#include <torch_tensorrt/executorch/GreenContext.h>

#include <string>
#include <type_traits>
#include <utility>

#include "common/status.h"
#include "green/driver_green_context.h"
#include "green/split.h"
#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend {

static_assert(std::is_same_v<CUstream, cudaStream_t>, "GreenContext::streams() hands out the driver's stream handles");

struct GreenContext::State {
  green::DriverGreenContext context;
  unsigned requested_sms = 0;
  bool is_remainder = false;
};

/// What split_device uses to make a GreenContext from the green layer's partition.
struct GreenContextAccess {
  static GreenContext make(green::Partition partition) {
    GreenContext owner;
    owner.state_ = std::make_unique<GreenContext::State>();
    owner.state_->context = std::move(partition.context);
    owner.state_->requested_sms = partition.requested_sms;
    owner.state_->is_remainder = partition.is_remainder;
    return owner;
  }
};

namespace {

GreenContextLimits to_limits(int device, const green::SmGranularity& g) {
  GreenContextLimits limits;
  limits.device = device;
  limits.sm_count = g.sm_count;
  limits.min_partition = g.min_partition;
  limits.alignment = g.alignment;
  limits.granularity = g.unit();
  limits.max_partitioned_sms = g.group_capacity() * g.unit();
  return limits;
}

const std::vector<cudaStream_t>& no_streams() {
  static const std::vector<cudaStream_t> empty;
  return empty;
}

}  // namespace

GreenContext::GreenContext() noexcept = default;
GreenContext::~GreenContext() { reset(); }
GreenContext::GreenContext(GreenContext&& other) noexcept = default;

GreenContext& GreenContext::operator=(GreenContext&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
  }
  return *this;
}

int GreenContext::device() const noexcept { return state_ ? state_->context.device() : -1; }
unsigned GreenContext::sm_count() const noexcept { return state_ ? state_->context.sm_count() : 0; }
unsigned GreenContext::requested_sms() const noexcept { return state_ ? state_->requested_sms : 0; }
bool GreenContext::is_remainder() const noexcept { return state_ && state_->is_remainder; }

cudaStream_t GreenContext::stream() const noexcept {
  return state_ && !state_->context.streams().empty() ? state_->context.streams().front() : nullptr;
}

const std::vector<cudaStream_t>& GreenContext::streams() const noexcept {
  return state_ ? state_->context.streams() : no_streams();
}

Result<cudaStream_t> GreenContext::make_stream(int priority) {
  if (!state_) return Error(ErrorCode::kInvalidState, "make_stream on an empty GreenContext");
  return state_->context.make_stream(priority);
}

CUgreenCtx GreenContext::handle() const noexcept { return state_ ? state_->context.get() : nullptr; }

void GreenContext::reset() noexcept {
  // Streams first, then the context (green::DriverGreenContext::reset), then the bookkeeping.
  if (state_) state_->context.reset();
  state_.reset();
}

Result<GreenContextLimits> green_context_limits(int device) {
  auto g = green::device_sm_granularity(device);
  if (!g.ok()) return g.error();
  return to_limits(device, *g);
}

Result<std::vector<GreenContext>> split_device(int device, const std::vector<unsigned>& sm_counts,
                                               Remainder remainder) {
  const green::SplitRequest request = green::SplitRequest::counts(sm_counts, remainder == Remainder::kKeep);
  // Argument errors need no device: report them even without a GPU.
  const Status checked = green::check_request(request);
  if (!checked.ok()) return checked;
  auto g = green::device_sm_granularity(device);
  if (!g.ok()) return g.error();
  const GreenContextLimits limits = to_limits(device, *g);
  auto partitions = green::split_device(device, request);
  if (!partitions.ok()) {
    if (partitions.error().code() != ErrorCode::kInvalidArgument) return partitions.error();  // no split details
    std::vector<unsigned> closest = green::closest_valid_counts(*g, sm_counts);
    if (closest == sm_counts) closest.clear();  // the counts were fine; something else was not
    // The planner offers rounding to its own callers (green-probe --round); this API has none.
    std::string message = partitions.error().message();
    const std::string offer = " (or ask for rounding)";
    if (const auto at = message.find(offer); at != std::string::npos) message.erase(at, offer.size());
    return Error(partitions.error().code(), std::move(message), limits, std::move(closest));
  }

  std::vector<GreenContext> owners;
  owners.reserve(partitions->size());
  for (green::Partition& partition : *partitions) owners.push_back(GreenContextAccess::make(std::move(partition)));
  for (GreenContext& owner : owners) {
    auto stream = owner.make_stream();
    if (!stream.ok()) return stream.error();  // `owners` releases what was made
  }
  return Result<std::vector<GreenContext>>(std::move(owners));
}

}  // namespace torch_tensorrt::executorch_backend
