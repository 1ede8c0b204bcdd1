// A fuzz sequence as plain data: the sessions it makes and the steps it runs. Every step carries
// everything it needs (its own data seed, shapes, memory kinds), so any subsequence of the steps
// is itself a valid sequence: the shrinker deletes steps and re-runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <torch_tensorrt/executorch/Engine.h>

#include "common/memory.h"

namespace trtet_test::fuzz {

/// Visits a Step with one lambda per alternative.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

/// Where a tensor lives (tests/common/memory.h: to_string and is_host of a Mem are found there by argument lookup).
using Mem = ::trtet_test::Memory;

/// Which stream a call selects.
enum class StreamSource : std::uint8_t {
  kPerThread,  ///< cudaStreamPerThread (of the calling thread)
  kLegacy,     ///< the legacy default stream (a null selection)
  kCreated,    ///< one of kCreatedSlots cudaStreamCreate'd streams
  kGreen,      ///< one of kGreenSlots green-context streams: slots 0, 1 on the small partition, 2, 3 on the rest
};
constexpr int kCreatedSlots = 4;
constexpr int kGreenSlots = 4;
static_assert(kGreenSlots == kCreatedSlots, "without green contexts, green slot i becomes created slot i");

struct StreamRef {
  StreamSource source = StreamSource::kPerThread;
  int slot = 0;
  bool capturable() const noexcept { return source == StreamSource::kCreated || source == StreamSource::kGreen; }
};
std::string to_string(const StreamRef& stream);

/// The engines a session can run (every one made of real kernels, tests/engines + FuzzOutputsEngine).
enum class EngineKind : std::uint8_t { kElementwise, kAux, kAliasing, kSum, kMulti };
const char* to_string(EngineKind kind) noexcept;

/// The input shape every input of a call gets: [rows, cols]. Profile 0 is [0, 1] .. [max_rows, kMaxCols]
/// (EngineSpec::max_rows); further profiles are tighter (EngineModel::profile_bounds).
constexpr std::int64_t kMaxRows = 16 * 1024 * 1024;
constexpr std::int64_t kSmallMaxRows = 64 * 1024;  ///< a small engine: 1 MiB per input at kMaxCols
constexpr std::int64_t kMaxCols = 4;
struct InputShape {
  std::int64_t rows = 0;
  std::int64_t cols = 1;
  /// Within profile 0 of an engine of kMaxRows rows (EngineModel::profile_for says which profile).
  bool in_profile() const noexcept { return rows >= 0 && rows <= kMaxRows && cols >= 1 && cols <= kMaxCols; }
  std::int64_t numel() const noexcept { return rows * cols; }
};

/// An engine and the session that runs it.
struct EngineSpec {
  EngineKind kind = EngineKind::kElementwise;
  int plain_outputs = 1;   ///< kMulti: outputs not aliased (0..4)
  bool alias = false;      ///< kMulti: a last output aliased to input "cache"
  std::int64_t spin_us = 0;
  /// Launches of the engine's kernels per enqueue (KernelOptions::kernels), each spinning spin_us:
  /// the elementwise and aux engines read their inputs again after the first one's spin, the
  /// aliasing engine spins that often before its update (EngineModel::late_read_us).
  int kernels = 1;
  std::int64_t max_rows = kMaxRows;  ///< profile 0's largest rows (kMaxRows or kSmallMaxRows)
  int profiles = 1;        ///< optimization profiles, 1 to 3 (kMulti's outputs depend on the one selected)
  bool record_sms = false; ///< kernels record their SMs (checked against the green context's)
  /// kMulti: one more input "t" and output "t_out" of this dtype (t_out: t's bytes XOR 0x5A); none
  /// when float32.
  torch_tensorrt::executorch_backend::DataType side_dtype = torch_tensorrt::executorch_backend::DataType::kFloat32;
  bool has_side() const noexcept { return side_dtype != torch_tensorrt::executorch_backend::DataType::kFloat32; }
  // SessionOptions:
  bool graphs = false;             ///< use_cuda_graphs
  std::size_t budget_bytes = 0;    ///< staging_budget_bytes
  int staging_slots = 3;
  /// In-place engines (kAliasing, kMulti with alias): the session's shared cache (a KV cache that
  /// calls with CallPlan::shared_cache update in turn, across threads and streams): its shape and memory.
  InputShape cache_shape;
  Mem cache_mem = Mem::kDevice;
  bool in_place() const noexcept { return kind == EngineKind::kAliasing || (kind == EngineKind::kMulti && alias); }
};
std::string to_string(const EngineSpec& spec);

/// One execute() with freshly drawn arguments.
struct CallPlan {
  bool guard = false;            ///< scope a CudaStreamGuard (else: cudaStreamPerThread, no guard)
  StreamRef stream;              ///< the guard's stream
  std::vector<Mem> mems;         ///< per binding, in binding order
  std::vector<bool> hints;       ///< per binding: pass MemoryHint::kDevice (device/managed) or kHost (host)
  InputShape shape;
  std::uint64_t data_seed = 0;
  bool scribble = false;         ///< overwrite host inputs as soon as the contract allows
  bool stale_output_shapes = false;  ///< output views start with a wrong shape (the delegate resizes)
  bool null_empty = false;       ///< empty (0-byte) tensors get a null data pointer
  /// Caller work: > 0 queues, on the stream the call is ordered after (the guard's, or
  /// cudaStreamPerThread without one), a spin of this long and then the input writes, right before
  /// the call; the inputs hold other values until then. 0: inputs written before the call.
  std::int64_t caller_spin_us = 0;
  /// In-place engines: the input updated in place is the session's shared cache (the call's shape
  /// is EngineSpec::cache_shape), so the update lands on what earlier calls left there.
  bool shared_cache = false;
};
std::string to_string(const CallPlan& call);

struct CallStep { int session = 0; CallPlan call; };
/// A capture on `call.stream` (created or green) under a guard: optional warm-up (the same call,
/// eager), then, inside the capture, the call and optionally a probe with one binding in pageable
/// memory (rejected; the capture must stay valid); then `replays` launches of the graph with new data.
struct CaptureStep {
  int session = 0;
  CallPlan call;                 ///< mems: device or pinned only
  bool warmup = true;
  int pageable_probe = -1;       ///< binding made pageable for a probe call (-1: none)
  bool probe_first = false;
  int replays = 1;
};
/// Launches of the graph captured by step `capture_step` (skipped if that graph is gone).
struct ReplayStep { std::size_t capture_step = 0; std::uint64_t data_seed = 0; int times = 1; };
/// 2 to 4 threads calling one session at once, each its own calls; optionally the session is
/// destroyed while they run.
struct ConcurrentStep {
  int session = 0;
  std::vector<std::vector<CallPlan>> threads;
  bool destroy_during = false;
  int destroy_delay_us = 0;
};
/// destroy(), optionally while a call is in flight (its outputs must still be right afterwards).
struct DestroyStep { int session = 0; bool in_flight = false; CallPlan call; };
/// The same call `times` times on one stream with the same tensors (the repeat path, Note [repeated
/// calls]), new input values queued on the stream before each.
struct RepeatStep { int session = 0; CallPlan call; int times = 2; };
/// A fresh session (new engine of the same spec) in the slot.
struct RecreateSessionStep { int session = 0; };
/// Synchronize, destroy and recreate a created or green stream.
struct RecreateStreamStep { StreamRef stream; bool non_blocking = true; };
/// A call the delegate must reject: wrong argument count, a wrong dtype, or a green context
/// current with no guard. Outputs must stay poisoned, nothing may be enqueued.
struct BadCallStep {
  enum class Kind : std::uint8_t { kTooFewArgs, kTooManyArgs, kWrongDtype, kGreenCurrentNoGuard };
  int session = 0;
  Kind kind = Kind::kTooFewArgs;
  CallPlan call;
};
const char* to_string(BadCallStep::Kind kind) noexcept;

using Step = std::variant<CallStep, CaptureStep, ReplayStep, ConcurrentStep, DestroyStep, RecreateSessionStep,
                          RecreateStreamStep, BadCallStep, RepeatStep>;
std::string to_string(const Step& step);

/// Which runtime a sequence drives: the delegate's Session directly, or ExecuTorch's Module over
/// generated .pte programs (et_sequence.h).
enum class Leg : std::uint8_t { kSession, kExecuTorch };
const char* to_string(Leg leg) noexcept;

/// What a sequence is drawn from; printed with every failure so it can be re-run.
struct FuzzConfig {
  Leg leg = Leg::kSession;
  std::uint64_t seed = 1;
  int length = 30;                           ///< steps
  std::size_t max_bytes = 64u << 20;         ///< largest tensor
  std::size_t concurrent_max_bytes = 16u << 20;
  std::int64_t max_spin_us = 5000;
  /// False (--no-green): no green contexts. After the usual draws, every green-context stream
  /// becomes the created stream of the same slot and every green-current bad call a wrong-dtype
  /// one; nothing else changes. Set where the process must make none (initcheck: gpu_world.h).
  bool green = true;
};
std::string to_string(const FuzzConfig& config);

struct Sequence {
  FuzzConfig config;
  std::vector<EngineSpec> sessions;
  std::vector<Step> steps;
};

/// Steps `keep` (indices into sequence.steps, ascending) of `sequence`; step indices named inside
/// steps (ReplayStep::capture_step) keep referring to the original numbering.
struct Selection {
  const Sequence* sequence = nullptr;
  std::vector<std::size_t> keep;
};
/// Every step of `sequence`.
Selection all_steps(const Sequence& sequence);
/// "3,7,12".
std::string to_string(const std::vector<std::size_t>& indices);

}  // namespace trtet_test::fuzz
