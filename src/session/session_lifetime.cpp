// Session's lifetime: construction, initialize, the statistics, memory given back, destroy.
#include "session/session.h"

#include <cstdio>
#include <optional>

#include "common/load_trace.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "session/aliases.h"
#include "session/checks.h"

namespace torch_tensorrt::executorch_backend::delegate {

Session::Session(engine::EnginePtr engine, SessionOptions options) noexcept
    : mutex_(std::chrono::microseconds(options.lock_spin_us)),
      engine_(std::move(engine)),
      options_(options),
      runner_(options.use_cuda_graphs, options.graph_cache_size) {}

Session::~Session() { destroy(); }

Status Session::initialize() {
  std::lock_guard<SpinningMutex> lock(mutex_);
  TRTET_CHECK_OR_RETURN(engine_ != nullptr, kInvalidState, "session has no engine");
  TRTET_CHECK_OR_RETURN(!initialized_, kInvalidState, "session is already initialized");
  engine::Engine& engine = *engine_;
  TRTET_RETURN_IF_ERROR(check_engine_metadata(engine));
  TRTET_CHECK_OR_RETURN(options_.staging_slots >= 1 && options_.staging_slots <= 4, kInvalidArgument,
                        "staging_slots is %d; it must be 1 to 4", options_.staging_slots);
  // Aliases are checked once, here (Note [aliased outputs] in session/aliases.h).
  TRTET_ASSIGN_OR_RETURN(alias_input_of_output_, validate_aliases(engine));

  std::optional<cuda::DeviceGuard> device;
  {
    TimedStep step("session: device and its attributes");
    TRTET_RETURN_IF_ERROR(cuda::check_device_index(engine.device()));
    device.emplace(engine.device());
    TRTET_RETURN_IF_ERROR(device->status());
    int integrated = 0;
    int ats = 0;
    TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, engine.device()));
    TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&ats, cudaDevAttrPageableMemoryAccessUsesHostPageTables, engine.device()));
    host_memory_is_device_accessible_ = integrated != 0 || ats != 0;
  }
  {
    // The copy kernel of small transfers, loaded now: CUDA loads a kernel at its first launch, and
    // that load waits for the work running on the device (Note [small copies]).
    TimedStep step("session: copy kernel");
    staging::prepare_small_copies();
  }
  {
    TimedStep step("session: events");
    TRTET_RETURN_IF_ERROR(ordering_.initialize(options_.staging_slots));
  }
  {
    TimedStep step("session: own stream");
    TRTET_RETURN_IF_ERROR(streams_.initialize());
  }
  {
    TimedStep step("session: staging pools");
    TRTET_RETURN_IF_ERROR(staging_.initialize(engine, options_.staging_slots, ordering_.completion()));
  }
  profiles_.initialize(engine.profile_count());
  plan_.bindings.assign(static_cast<std::size_t>(engine.io_count()), Binding{});  // reused by every call
  if (options_.staging_budget_bytes > 0) {
    TimedStep step("session: budgeted staging");
    // Note [staging budget] in staging/store.cpp.
    TRTET_RETURN_IF_ERROR(staging_.prepare_budget(engine, options_.staging_budget_bytes,
                                                  host_memory_is_device_accessible_, streams_.own_stream()));
    // Made in order on our own stream; a first call on another stream does not wait for it.
    TRTET_CUDA_CHECK(cudaStreamSynchronize(streams_.own_stream()));  // our own stream only
    staging_.touch_host_staging();
  }
  initialized_ = true;
  return Status::Ok();
}

std::string describe_memory(const SessionStats& stats) {
  char line[256];
  std::snprintf(line, sizeof line,
                "device reserved %llu used %llu (high %llu / %llu), host reserved %llu used %llu (high %llu / %llu)",
                static_cast<unsigned long long>(stats.device_reserved_bytes),
                static_cast<unsigned long long>(stats.device_used_bytes),
                static_cast<unsigned long long>(stats.device_reserved_high_bytes),
                static_cast<unsigned long long>(stats.device_used_high_bytes),
                static_cast<unsigned long long>(stats.host_reserved_bytes),
                static_cast<unsigned long long>(stats.host_used_bytes),
                static_cast<unsigned long long>(stats.host_reserved_high_bytes),
                static_cast<unsigned long long>(stats.host_used_high_bytes));
  return line;
}

SessionStats Session::stats() const {
  std::lock_guard<SpinningMutex> lock(mutex_);
  SessionStats stats = stats_;
  stats.staging_grows = staging_.grows();
  stats.budgeted_staging_bytes = staging_.budgeted_bytes();
  stats.whole_call_waits = ordering_.whole_call_waits();
  stats.cross_stream_waits = ordering_.cross_stream_waits();
  stats.captures = ordering_.captures();
  stats.profile_switches = profiles_.switches();
  stats.graph_captures = runner_.graph_captures();
  stats.graph_launches = runner_.graph_launches();
  stats.kernel_copies = copies_.kernel_transfers() + pinned_kernel_copies_;
  stats.engine_copies = copies_.engine_transfers() + pinned_engine_copies_;
  if (!initialized_) return stats;  // the pools are given back
  const StagingMemory memory = staging_.memory();
  stats.device_reserved_bytes = memory.device_reserved;
  stats.device_used_bytes = memory.device_used;
  stats.device_reserved_high_bytes = memory.device_reserved_high;
  stats.device_used_high_bytes = memory.device_used_high;
  stats.host_reserved_bytes = memory.host_reserved;
  stats.host_used_bytes = memory.host_used;
  stats.host_reserved_high_bytes = memory.host_reserved_high;
  stats.host_used_high_bytes = memory.host_used_high;
  return stats;
}

Status Session::release_unused_memory() {
  std::lock_guard<SpinningMutex> lock(mutex_);
  if (engine_ == nullptr || !initialized_) return Status::Ok();
  last_call_.forget();  // the next call takes the full path
  cuda::DeviceGuard device(engine_->device());
  TRTET_RETURN_IF_ERROR(device.status());
  return staging_.trim();
}

void Session::destroy() noexcept {
  closing_.store(true, std::memory_order_release);
  std::lock_guard<SpinningMutex> lock(mutex_);
  free_resources();
}

void Session::free_resources() noexcept {
  if (engine_ == nullptr) return;
  last_call_.forget();  // its graph goes below
  {
    cuda::DeviceGuard device(engine_->device());
    ordering_.wait_for_all();
    // Every use is complete: staging is freed in order on the session's own stream, not the
    // caller's (which may already be destroyed), before its pools go back.
    staging_.release(streams_.own_stream());
    runner_.reset();
    engine_.reset();
    streams_.reset();
    ordering_.reset();
    copies_.clear();
    drain_released_graph_holds();
  }
  plan_.bindings.clear();
  initialized_ = false;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
