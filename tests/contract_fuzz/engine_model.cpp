#include "contract_fuzz/engine_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "contract_fuzz/fuzz_kernels.h"
#include "contract_fuzz/fuzz_outputs_engine.h"
#include "engines/aliasing_engine.h"
#include "engines/aux_stream_engine.h"
#include "engines/elementwise_engine.h"
#include "engines/sum_engine.h"

namespace trtet_test::fuzz {
namespace {

// The elementwise and aux engines' default coefficients (KernelOptions).
constexpr float kA = 2.0f;
constexpr float kB = -0.5f;

}  // namespace

bool is_poison(float value) noexcept {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits == 0xFFFFFFFFu;
}

float reference_sum(const std::vector<float>& x) {
  constexpr std::size_t kThreads = 256;
  float partial[kThreads];
  for (std::size_t t = 0; t < kThreads; ++t) {
    float acc = 0.0f;
    for (std::size_t i = t; i < x.size(); i += kThreads) acc += x[i];
    partial[t] = acc;
  }
  for (std::size_t half = kThreads / 2; half > 0; half /= 2) {
    for (std::size_t t = 0; t < half; ++t) partial[t] += partial[t + half];
  }
  return partial[0];
}

EngineModel::EngineModel(const EngineSpec& spec) : spec_(spec) {
  auto input = [] { BindingRole r; r.input = true; return r; };
  auto output = [](int aliased = -1) { BindingRole r; r.aliased_input = aliased; return r; };
  switch (spec.kind) {
    case EngineKind::kElementwise:
    case EngineKind::kAux:
      roles_ = {input(), input(), output()};
      x_ = 0;
      y_ = 1;
      break;
    case EngineKind::kAliasing:
      roles_ = {input(), input(), output(0)};
      cache_ = 0;
      x_ = 1;
      break;
    case EngineKind::kSum: {
      BindingRole total = output();
      total.scalar = true;
      roles_ = {input(), total};
      x_ = 0;
      break;
    }
    case EngineKind::kMulti: {
      roles_ = {input(), input()};
      x_ = 0;
      y_ = 1;
      if (spec.alias) {
        roles_.push_back(input());
        cache_ = 2;
      }
      const int t = static_cast<int>(roles_.size());
      if (spec.has_side()) {
        roles_.push_back(input());
        roles_.back().dtype = spec.side_dtype;
      }
      first_plain_ = static_cast<int>(roles_.size());  // out0 follows every input, "t" included
      for (int j = 0; j < spec.plain_outputs; ++j) roles_.push_back(output());
      if (spec.alias) roles_.push_back(output(2));
      if (spec.has_side()) {
        BindingRole t_out = output();
        t_out.xor_of = t;
        t_out.dtype = spec.side_dtype;
        roles_.push_back(t_out);
      }
      break;
    }
  }
  if (cache_ >= 0) roles_[static_cast<std::size_t>(cache_)].updated_in_place = true;
}

namespace {

template <class E>
ex::Result<std::unique_ptr<TestEngine>> as_test_engine(ex::Result<std::unique_ptr<E>> made) {
  if (!made.ok()) return made.status();
  return std::unique_ptr<TestEngine>(std::move(made).value());
}

/// The engine of `kind` with profile 0's bounds.
ex::Result<std::unique_ptr<TestEngine>> make_engine(const EngineSpec& spec, int device, const ex::Shape& min_shape,
                                                    const ex::Shape& max_shape, const KernelOptions& options) {
  switch (spec.kind) {
    case EngineKind::kElementwise: return as_test_engine(ElementwiseEngine::create(device, min_shape, max_shape, options));
    case EngineKind::kAux: return as_test_engine(AuxStreamEngine::create(device, min_shape, max_shape, options));
    case EngineKind::kAliasing:
      return as_test_engine(
          AliasingEngine::create(device, min_shape, max_shape, ex::engine::AliasKind::kKvCacheUpdate, options));
    case EngineKind::kSum: return as_test_engine(SumEngine::create(device, min_shape, max_shape, options));
    case EngineKind::kMulti:
      return as_test_engine(FuzzOutputsEngine::create(
          device, min_shape, max_shape, FuzzOutputsEngine::Outputs{spec.plain_outputs, spec.alias, spec.side_dtype},
          options));
  }
  return ex::make_error(ex::ErrorCode::kInvalidArgument, "unknown engine kind");
}

}  // namespace

ex::Result<ex::engine::EnginePtr> EngineModel::make(int device) const {
  KernelOptions options;
  options.spin_us = spec_.spin_us;
  options.kernels = spec_.kernels;
  options.record_sms = spec_.record_sms;
  const auto profile0 = profile_bounds(0);
  TRTET_ASSIGN_OR_RETURN(std::unique_ptr<TestEngine> engine,
                         make_engine(spec_, device, profile0.first, profile0.second, options));
  for (int p = 1; p < spec_.profiles; ++p) {
    const auto bounds = profile_bounds(p);
    engine->add_profile(bounds.first, bounds.second);
  }
  return ex::engine::EnginePtr(std::move(engine));
}

std::int64_t EngineModel::late_read_us() const noexcept {
  switch (spec_.kind) {
    case EngineKind::kMulti: return spec_.spin_us;
    case EngineKind::kAliasing: return spec_.kernels * spec_.spin_us;
    case EngineKind::kElementwise:
    case EngineKind::kAux: return (spec_.kernels - 1) * spec_.spin_us;
    case EngineKind::kSum: return 0;
  }
  return 0;
}

bool EngineModel::staged_input(const CallPlan& plan, int b) const {
  return role(b).input && !role(b).updated_in_place && is_host(plan.mems[static_cast<std::size_t>(b)]);
}

bool EngineModel::stages_inputs(const CallPlan& plan) const {
  if (plan.shape.numel() <= 0) return false;
  for (int b = 0; b < io_count(); ++b) {
    if (staged_input(plan, b)) return true;
  }
  return false;
}

bool EngineModel::host_outputs(const CallPlan& plan) const {
  for (int b = 0; b < io_count(); ++b) {
    if (!role(b).input && role(b).aliased_input < 0 && is_host(plan.mems[static_cast<std::size_t>(b)])) return true;
  }
  return false;
}

std::pair<ex::Shape, ex::Shape> EngineModel::profile_bounds(int profile) const {
  const ex::Shape min_shape{0, 1};
  switch (profile) {
    case 1: return {min_shape, ex::Shape{1024, kMaxCols}};
    case 2: return {min_shape, ex::Shape{spec_.max_rows / 16, 2}};
    default: return {min_shape, ex::Shape{spec_.max_rows, kMaxCols}};
  }
}

int EngineModel::profile_for(const InputShape& shape) const {
  int best = -1;
  std::int64_t best_numel = 0;
  for (int p = 0; p < spec_.profiles; ++p) {
    const auto bounds = profile_bounds(p);
    const bool fits = shape.rows >= bounds.first[0] && shape.rows <= bounds.second[0] && shape.cols >= bounds.first[1] &&
                      shape.cols <= bounds.second[1];
    // Every input has the same bounds: the sum over inputs orders profiles as one input's maximum does.
    if (fits && (best < 0 || bounds.second.numel() < best_numel)) {
      best = p;
      best_numel = bounds.second.numel();
    }
  }
  return best;
}

std::size_t EngineModel::budgeted_bytes(std::size_t budget) const {
  std::size_t total = 0;
  for (int b = 0; b < io_count(); ++b) {
    const BindingRole& r = role(b);
    if (r.updated_in_place || r.aliased_input >= 0) continue;
    std::int64_t elements = 0;
    if (r.input) {
      for (int p = 0; p < spec_.profiles; ++p) elements = std::max(elements, profile_bounds(p).second.numel());
    } else {
      elements = r.scalar ? 1 : profile_bounds(0).second.numel();
    }
    const std::size_t bytes = static_cast<std::size_t>(elements) * r.element_bytes();
    if (bytes > (budget - total) / 2) continue;
    total += 2 * bytes;
  }
  return total;
}

ex::Shape EngineModel::output_shape(int binding, const InputShape& shape) const {
  if (role(binding).scalar) return ex::Shape{1};
  return ex::Shape{shape.rows, shape.cols};
}

float EngineModel::expected(int binding, std::size_t i, const std::vector<std::vector<float>>& inputs, int profile,
                            float* tolerance) const {
  const float x = inputs[static_cast<std::size_t>(x_)][i];
  float a = kA;
  float b = kB;
  if (spec_.kind == EngineKind::kMulti) {
    a = FuzzOutputsEngine::coefficient_a(binding - first_plain_);
    b = FuzzOutputsEngine::coefficient_b(binding - first_plain_, profile);
  }
  const float y = y_ >= 0 ? inputs[static_cast<std::size_t>(y_)][i] : 0.0f;
  // The kernel may fuse a*x + b*y into one FMA: allow the rounding of either form.
  *tolerance = 1e-5f * (std::fabs(a * x) + std::fabs(b * y)) + 1e-6f;
  return a * x + b * y;
}

std::string EngineModel::compare_bytes(int binding, const unsigned char* actual, std::size_t bytes,
                                       const std::vector<std::vector<float>>& inputs) const {
  const auto* source = reinterpret_cast<const unsigned char*>(inputs[static_cast<std::size_t>(role(binding).xor_of)].data());
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned char want = static_cast<unsigned char>(source[i] ^ kXorByte);
    if (actual[i] != want) {
      std::ostringstream out;
      out << "byte " << i << " of " << bytes << " (" << ex::to_string(role(binding).dtype) << ") is 0x" << std::hex
          << static_cast<int>(actual[i]) << (actual[i] == kPoisonByte ? " (the poison: never written?)" : "")
          << ", expected 0x" << static_cast<int>(want);
      return out.str();
    }
  }
  return "";
}

std::string EngineModel::compare(int binding, const float* actual, std::size_t n,
                                 const std::vector<std::vector<float>>& inputs, int profile) const {
  const BindingRole& r = role(binding);
  std::ostringstream out;
  auto describe = [&](std::size_t i, float got, float want) {
    out << "element " << i << " of " << n << " is " << got;
    if (is_poison(got)) out << " (the poison: never written)";
    out << ", expected " << want;
  };
  if (r.scalar) {
    const float want = reference_sum(inputs[static_cast<std::size_t>(x_)]);
    const float got = n > 0 ? actual[0] : 0.0f;
    // Same order of float additions as the kernel: equal up to a last-bit difference at most.
    if (n != 1 || !(std::fabs(got - want) <= 1e-6f * std::fabs(want) + 1e-6f)) {
      if (n != 1) {
        out << "has " << n << " elements, expected 1";
      } else {
        describe(0, got, want);
      }
    }
    return out.str();
  }
  if (r.aliased_input >= 0) {
    const std::vector<float>& cache = inputs[static_cast<std::size_t>(cache_)];
    const std::vector<float>& x = inputs[static_cast<std::size_t>(x_)];
    const bool negate = negates_cache();
    for (std::size_t i = 0; i < n; ++i) {
      const float want = negate ? x[i] - cache[i] : cache[i] + x[i];  // one IEEE operation on either side: exact
      if (!(actual[i] == want)) {
        out << "the aliased input (updated in place): ";
        describe(i, actual[i], want);
        out << " (cache " << cache[i] << (negate ? ", x " : " + x ") << x[i] << ")";
        if (actual[i] == cache[i]) out << " (unchanged: the update did not land in the input's memory)";
        return out.str();
      }
    }
    return "";
  }
  for (std::size_t i = 0; i < n; ++i) {
    float tolerance = 0;
    const float want = expected(binding, i, inputs, profile, &tolerance);
    if (!(std::fabs(actual[i] - want) <= tolerance)) {
      describe(i, actual[i], want);
      return out.str();
    }
  }
  return "";
}

}  // namespace trtet_test::fuzz
