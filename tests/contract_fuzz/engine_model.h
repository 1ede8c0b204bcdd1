// What the fuzzer knows about each engine it runs: the binding layout, which output aliases which
// input, the output shapes, and the CPU reference every output is compared with.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "contract_fuzz/sequence.h"
#include "engine/engine.h"
#include "engines/test_engine.h"

namespace trtet_test::fuzz {

struct BindingRole {
  bool input = false;
  int aliased_input = -1;        ///< outputs: the input updated in place (-1: a plain output)
  bool updated_in_place = false; ///< inputs: some output aliases it
  bool scalar = false;           ///< outputs: a one-element result ([1], or 0-d in the view)
  int xor_of = -1;               ///< outputs: the input whose bytes XOR kXorByte it holds (-1: none)
  ex::DataType dtype = ex::DataType::kFloat32;
  std::size_t element_bytes() const noexcept { return ex::element_size(dtype); }
};

class EngineModel {
 public:
  explicit EngineModel(const EngineSpec& spec);

  const EngineSpec& spec() const noexcept { return spec_; }
  int io_count() const noexcept { return static_cast<int>(roles_.size()); }
  const BindingRole& role(int binding) const { return roles_[static_cast<std::size_t>(binding)]; }

  /// The engine on `device` with spec().profiles profiles (profile_bounds), recording SMs when
  /// spec().record_sms.
  ex::Result<ex::engine::EnginePtr> make(int device) const;

  /// Every input's bounds in `profile`: 0 is [0, 1] .. [max_rows, kMaxCols]; 1 is [0, 1] ..
  /// [1024, kMaxCols]; 2 is [0, 1] .. [max_rows / 16, 2].
  std::pair<ex::Shape, ex::Shape> profile_bounds(int profile) const;
  /// The profile a call with inputs of `shape` must run under: the tightest whose bounds hold it
  /// (the smallest maximum element count, docs/DESIGN.md "Optimization profiles"); -1: none (the
  /// call must be refused).
  int profile_for(const InputShape& shape) const;
  bool in_profile(const InputShape& shape) const { return profile_for(shape) >= 0; }

  /// How long into its run the engine still reads its inputs, at least: the spin before its last
  /// read of them (the multi-output and aliasing engines spin first; the elementwise and aux ones
  /// read again after each launch's spin; the sum engine reads first). A later call that rewrites
  /// the staging they were copied into must wait for the engine (Note [pipelined calls]).
  std::int64_t late_read_us() const noexcept;
  /// Binding `b` of `plan` is an input not updated in place, in host memory: a call copies it into
  /// a staging slot when it is not empty (an input updated in place must be on the device; in host
  /// memory it is refused).
  bool staged_input(const CallPlan& plan, int b) const;
  /// Some input of `plan` is staged (staged_input) and the shape is not empty.
  bool stages_inputs(const CallPlan& plan) const;
  /// Some plain output of `plan` is in host memory: the call returns only once it is written.
  bool host_outputs(const CallPlan& plan) const;

  /// The in-place update: cache = x - cache (kMulti: the order of updates matters), else cache += x.
  bool negates_cache() const noexcept { return spec_.kind == EngineKind::kMulti; }
  /// The input every engine adds or scales, and the one updated in place (-1: none).
  int x_binding() const noexcept { return x_; }
  int cache_binding() const noexcept { return cache_; }

  /// The staging initialize() makes within `budget` (docs/DESIGN.md, "The staging budget"): in
  /// binding order, every binding not written in place takes its largest size (inputs: over every
  /// profile; outputs: at profile 0's maximum) twice while that fits what is left.
  std::size_t budgeted_bytes(std::size_t budget) const;

  /// Output `binding`'s shape for inputs of `shape` ([1] for scalar outputs).
  ex::Shape output_shape(int binding, const InputShape& shape) const;

  /// Compares output `binding` of a role with xor_of (`bytes` bytes at `actual`) with its input's
  /// bytes (`inputs`, by binding: the input's values as written). Empty when equal.
  std::string compare_bytes(int binding, const unsigned char* actual, std::size_t bytes,
                            const std::vector<std::vector<float>>& inputs) const;

  /// Compares output `binding` (`n` elements at `actual`) with the reference on `inputs` (indexed
  /// by binding; outputs' entries unused) run under `profile`. For an aliased output, `actual` is
  /// the input's memory after the call and the reference is the in-place update. Empty when
  /// equal; else what differs.
  std::string compare(int binding, const float* actual, std::size_t n, const std::vector<std::vector<float>>& inputs,
                      int profile = 0) const;

 private:
  /// The reference for element i of plain output `binding` (not for scalar outputs).
  float expected(int binding, std::size_t i, const std::vector<std::vector<float>>& inputs, int profile,
                 float* tolerance) const;

  EngineSpec spec_;
  std::vector<BindingRole> roles_;
  int x_ = 0;      ///< binding of x (the input every engine adds or scales)
  int y_ = -1;     ///< binding of y (-1: none)
  int cache_ = -1; ///< binding of the input updated in place (-1: none)
  /// kMulti: binding of "out0", right after the inputs (x, y, then "cache" and "t" where present),
  /// as FuzzOutputsEngine lays them out; plain output j is first_plain_ + j.
  int first_plain_ = -1;
};

/// The sum kernel's exact order (256 strided partial sums, then a tree), on the CPU.
float reference_sum(const std::vector<float>& x);

/// True when the 4 bytes of `value` are the poison pattern (every byte 0xFF).
bool is_poison(float value) noexcept;
constexpr unsigned char kPoisonByte = 0xFF;

}  // namespace trtet_test::fuzz
