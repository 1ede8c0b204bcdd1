// The ExecuTorch leg's sequences as plain data: calls through ExecuTorch's Module over the .pte
// programs this folder generates at build time (programs/*.json), from the main thread and from
// threads with Modules of their own, with methods unloaded and Modules remade at random points.
// Like the Session leg's steps (sequence.h), every step carries all it needs, so any subsequence
// of the steps is itself a valid sequence (the shrinker deletes steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

/// The programs (CMakeLists.txt, programs/): forward(x, y) -> out = 2x - 0.5y, one TensorRTBackend
/// delegate call on a test engine whose profile is [0, 1] .. [kEtMaxRows, kEtMaxCols]. Every tensor
/// is DYNAMIC_BOUND with room for kEtBoundElements floats (ExecuTorch bounds a resize by numel).
enum class EtProgram : std::uint8_t {
  kPlanned,       ///< fuzz_planned.pte: x, y, out memory-planned (the Module's own pageable host memory); spin 200 us
  kUnplanned,     ///< fuzz_unplanned.pte: the caller's tensors (set_input aliases them, set_output); elementwise
  kUnplannedAux,  ///< fuzz_unplanned_aux.pte: as kUnplanned, the aux engine (two auxiliary streams), spin 200 us
  /// fuzz_device_planned.pte: as today's exports are: x, y in the Module's host memory, copied by
  /// et_copy::_h2d_copy.out into a CUDA-planned arena (the project's CUDA allocator), the delegate on
  /// device tensors, et_copy::_d2h_copy.out back to a host-planned out; spin 200 us
  kDevicePlanned,
  /// fuzz_cpu_ops.pte: as kDevicePlanned with CPU operators around it (aten::add.out):
  /// xx = x + x before the copies in, result = out + y after the copy out (result = 4x + 0.5y)
  kCpuOps,
  /// fuzz_two_delegates.pte: as kCpuOps with two delegates in a row on the device (two sessions):
  /// o1 = 2xx - 0.5y, o2 = 2 o1 - 0.5y, result = o2 + y
  kTwoDelegates,
};
constexpr int kEtPrograms = 6;
const char* to_string(EtProgram program) noexcept;
/// The program's file name without the directory ("fuzz_planned.pte").
const char* program_file(EtProgram program) noexcept;
constexpr bool is_planned(EtProgram program) noexcept {
  return program != EtProgram::kUnplanned && program != EtProgram::kUnplannedAux;
}
/// Where a planned program's host arena holds its output, in tensors of kEtBoundBytes (x at 0, y at 1).
constexpr int planned_output_slot(EtProgram program) noexcept {
  return program == EtProgram::kCpuOps || program == EtProgram::kTwoDelegates ? 4 : 2;
}
/// The program's result for inputs x, y (element i), and how far the GPU's rounding (a fused
/// multiply-add or not, at each delegate) may put it from there.
float et_reference(EtProgram program, float x, float y, float* tolerance) noexcept;

constexpr std::int64_t kEtMaxRows = 1024 * 1024;
constexpr std::int64_t kEtMaxCols = 64;
constexpr std::int64_t kEtBoundElements = 1024 * 1024;  ///< 4 MiB per tensor
constexpr std::size_t kEtBoundBytes = kEtBoundElements * sizeof(float);
/// Within the engine's profile (outside it, within the bound, the delegate must reject the call).
inline bool et_in_profile(const InputShape& shape) noexcept {
  return shape.rows >= 0 && shape.rows <= kEtMaxRows && shape.cols >= 1 && shape.cols <= kEtMaxCols;
}

/// One Module::execute("forward", {x, y}), `repeats` times with the same arguments and new data.
struct EtCallPlan {
  bool guard = false;         ///< scope a CudaStreamGuard on `stream` (else none)
  StreamRef stream;
  std::vector<Mem> mems;      ///< x, y, out; for a planned program every one is kPageable (the Module's)
  InputShape shape;           ///< x's and y's shape (and out's)
  std::uint64_t data_seed = 0;
  int repeats = 1;
  bool scribble = false;      ///< overwrite host inputs as soon as the contract allows
  /// Unload the method right after execute returns (unplanned: before the stream is synchronized,
  /// so the delegate's destroy meets work in flight; planned: after the checks, since the outputs
  /// live in the method's memory). The next call loads it again.
  bool unload_after = false;
};
std::string to_string(const EtCallPlan& call);

/// A call through module slot `module` of the sequence (created at setup; loaded on first use).
struct EtCallStep { int module = 0; EtCallPlan call; };
/// unload_method("forward") of slot `module` (the next call loads it again), or, with `remake`,
/// the Module destroyed and a fresh one made from the file.
struct EtUnloadStep { int module = 0; bool remake = false; };
/// 2 to 4 threads at once, each with a Module of its own (made, loaded and destroyed in the
/// thread) and its own calls.
struct EtThread { EtProgram program = EtProgram::kUnplanned; std::vector<EtCallPlan> calls; };
struct EtThreadsStep { std::vector<EtThread> threads; };

using EtStep = std::variant<EtCallStep, EtUnloadStep, EtThreadsStep>;
std::string to_string(const EtStep& step);

struct EtSequence {
  FuzzConfig config;                 ///< config.leg == Leg::kExecuTorch
  std::vector<EtProgram> modules;    ///< the main thread's module slots
  std::vector<EtStep> steps;
};

/// Deterministic: the same config gives the same sequence on every platform. Tensors are at most
/// min(config.max_bytes, kEtBoundBytes) (threads: concurrent_max_bytes); max_spin_us is unused (the
/// programs fix their engines' spin).
EtSequence generate_et(const FuzzConfig& config);

}  // namespace trtet_test::fuzz
