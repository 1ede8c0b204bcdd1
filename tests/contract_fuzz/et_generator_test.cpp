// The executorch leg's generator and programs: its references, one seed one sequence, the
// reproduce line, every step, program, memory kind, stream and boundary size drawn, --no-green,
// threads within their maximum; ExecuTorch accepts every drawn shape and the fuzzer's outputs, and
// the programs hold their operators, delegates and device arenas (checked without a GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#if TRTET_FUZZ_HAVE_EXECUTORCH
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#endif

#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/test_draws.h"

namespace trtet_test::fuzz {
namespace {

TEST(ContractFuzzEtGenerator, ProgramReferences) {
  float tolerance = 0;
  EXPECT_EQ(et_reference(EtProgram::kPlanned, 1, 2, &tolerance), 1.0f);          // 2x - 0.5y
  EXPECT_EQ(et_reference(EtProgram::kDevicePlanned, 1, 2, &tolerance), 1.0f);
  EXPECT_EQ(et_reference(EtProgram::kCpuOps, 1, 2, &tolerance), 5.0f);           // 4x + 0.5y
  EXPECT_EQ(et_reference(EtProgram::kTwoDelegates, 1, 2, &tolerance), 7.0f);     // 8x - 0.5y
  EXPECT_LT(tolerance, 1e-3f);
  EXPECT_GT(tolerance, 0.0f);
  EXPECT_TRUE(is_planned(EtProgram::kCpuOps) && is_planned(EtProgram::kTwoDelegates));
  EXPECT_EQ(planned_output_slot(EtProgram::kTwoDelegates), 4);
}

// ---- the executorch leg's generator ----

std::string print(const EtSequence& sequence) {
  std::string text;
  for (EtProgram program : sequence.modules) text += std::string(to_string(program)) + "\n";
  for (const EtStep& step : sequence.steps) text += to_string(step) + "\n";
  return text;
}

std::vector<std::pair<EtProgram, const EtCallPlan*>> et_plans_of(const EtSequence& sequence, const EtStep& step) {
  std::vector<std::pair<EtProgram, const EtCallPlan*>> plans;
  if (auto* s = std::get_if<EtCallStep>(&step)) {
    plans.emplace_back(sequence.modules[static_cast<std::size_t>(s->module)], &s->call);
  }
  if (auto* s = std::get_if<EtThreadsStep>(&step)) {
    for (const EtThread& thread : s->threads) {
      for (const EtCallPlan& call : thread.calls) plans.emplace_back(thread.program, &call);
    }
  }
  return plans;
}

FuzzConfig et_config(std::uint64_t seed) {
  FuzzConfig config;
  config.leg = Leg::kExecuTorch;
  config.seed = seed;
  return config;
}

TEST(ContractFuzzEtGenerator, SameSeedSameSequenceOtherSeedOtherSequence) {
  const std::string first = print(generate_et(et_config(42)));
  EXPECT_EQ(first, print(generate_et(et_config(42))));
  EXPECT_NE(first, print(generate_et(et_config(43))));
  EXPECT_EQ(generate_et(et_config(42)).config.leg, Leg::kExecuTorch);
}

TEST(ContractFuzzEtGenerator, TheReproduceLineNamesTheLeg) {
  EXPECT_NE(to_string(et_config(7)).find("--leg executorch --seed 7 "), std::string::npos) << to_string(et_config(7));
  FuzzConfig session;
  session.seed = 7;
  EXPECT_EQ(to_string(session).find("--leg"), std::string::npos) << "the session leg's line stays as it was";
}

TEST(ContractFuzzEtGenerator, DrawsEveryStepProgramMemoryStreamAndBoundarySize) {
  SeenDraws seen;
  std::set<EtProgram> programs;
  std::set<std::size_t> thread_counts;
  std::set<int> repeats;
  std::set<std::int64_t> cols;
  bool guard = false, no_guard = false, outside = false, unload_after = false, remake = false, unload = false;
  bool mixed = false, scribble = false;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const EtSequence sequence = generate_et(et_config(seed));
    ASSERT_EQ(sequence.steps.size(), 30u);
    ASSERT_GE(sequence.modules.size(), 1u);
    ASSERT_LE(sequence.modules.size(), 3u);
    programs.insert(sequence.modules.begin(), sequence.modules.end());
    for (const EtStep& step : sequence.steps) {
      seen.step_kinds.insert(step.index());
      if (auto* s = std::get_if<EtUnloadStep>(&step)) (s->remake ? remake : unload) = true;
      if (auto* s = std::get_if<EtThreadsStep>(&step)) {
        thread_counts.insert(s->threads.size());
        for (const EtThread& thread : s->threads) programs.insert(thread.program);
      }
      for (const auto& [program, plan] : et_plans_of(sequence, step)) {
        ASSERT_EQ(plan->mems.size(), 3u);
        if (is_planned(program)) {
          for (Mem mem : plan->mems) EXPECT_EQ(mem, Mem::kPageable) << "a planned program's I/O is the Module's own";
        } else {
          seen.mems.insert(plan->mems.begin(), plan->mems.end());
          mixed = mixed || std::set<Mem>(plan->mems.begin(), plan->mems.end()).size() > 1;
        }
        (plan->guard ? guard : no_guard) = true;
        if (plan->guard) seen.streams.insert(plan->stream.source);
        outside = outside || !et_in_profile(plan->shape);
        unload_after = unload_after || plan->unload_after;
        scribble = scribble || plan->scribble;
        repeats.insert(plan->repeats);
        cols.insert(plan->shape.cols);
        seen.sizes.insert(static_cast<std::size_t>(plan->shape.numel()) * sizeof(float));
        // ExecuTorch must accept every drawn shape (a resize within the bound): only the delegate may refuse.
        EXPECT_GE(plan->shape.rows, 0);
        EXPECT_LE(plan->shape.numel(), kEtBoundElements) << to_string(step);
      }
    }
  }
  EXPECT_EQ(seen.step_kinds.size(), std::variant_size_v<EtStep>) << "some step kind is never drawn";
  EXPECT_EQ(programs.size(), static_cast<std::size_t>(kEtPrograms)) << "some program is never drawn";
  EXPECT_EQ(seen.mems.size(), 4u) << "some memory kind is never drawn for an unplanned program";
  EXPECT_EQ(seen.streams.size(), 4u) << "some stream source is never drawn";
  EXPECT_EQ(thread_counts, (std::set<std::size_t>{2, 3, 4}));
  EXPECT_EQ(repeats, (std::set<int>{1, 2, 3}));
  EXPECT_TRUE(cols.count(1) && cols.count(kEtMaxCols) && cols.count(0) && cols.count(kEtMaxCols + 1));
  EXPECT_TRUE(guard && no_guard && outside && unload_after && remake && unload && mixed && scribble);
  for (std::size_t boundary : {std::size_t{0}, std::size_t{(1u << 20) + 4}, std::size_t{(2u << 20) + 4},
                               std::size_t{(3u << 20) + 4}}) {
    EXPECT_TRUE(seen.sizes.count(boundary)) << "tensor size " << boundary << " is never drawn";
  }
  EXPECT_LE(*seen.sizes.rbegin(), kEtBoundBytes);
}

TEST(ContractFuzzEtGenerator, NoGreenDrawsNoGreenContextAndChangesNothingElse) {
  int changed = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    FuzzConfig no_green = et_config(seed);
    no_green.green = false;
    const std::string with = print(generate_et(et_config(seed)));
    const std::string without = print(generate_et(no_green));
    EXPECT_EQ(without.find("green"), std::string::npos) << "seed " << seed << ":\n" << without;
    EXPECT_EQ(as_without_green(with), without) << "seed " << seed;
    changed += with != without ? 1 : 0;
  }
  EXPECT_GT(changed, 100) << "most seeds draw green-context streams";
}

TEST(ContractFuzzEtGenerator, ThreadsStayWithinTheirMaximum) {
  FuzzConfig config = et_config(1);
  config.max_bytes = (1u << 20) + 4096;
  config.concurrent_max_bytes = 256u << 10;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    config.seed = seed;
    const EtSequence sequence = generate_et(config);
    for (const EtStep& step : sequence.steps) {
      const bool threads = std::holds_alternative<EtThreadsStep>(step);
      for (const auto& entry : et_plans_of(sequence, step)) {
        EXPECT_LE(static_cast<std::size_t>(entry.second->shape.numel()) * 4,
                  threads ? config.concurrent_max_bytes : config.max_bytes)
            << to_string(step);
      }
    }
  }
}

#if TRTET_FUZZ_HAVE_EXECUTORCH
// What the GPU run relies on, checked without one (the engines' init then reports no GPU and the
// method still loads): ExecuTorch accepts every drawn shape and the output the fuzzer hands over,
// and a planned program's inputs sit where planned_input_address says.
namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

TEST(ContractFuzzEtPrograms, ExecuTorchAcceptsEveryDrawnShapeAndTheFuzzersOutput) {
  ensure_et_runtime();
  Module planned(et_program_path(EtProgram::kPlanned));
  Module unplanned(et_program_path(EtProgram::kUnplanned));
  ASSERT_EQ(planned.load_method("forward"), etr::Error::Ok) << et_program_path(EtProgram::kPlanned);
  ASSERT_EQ(unplanned.load_method("forward"), etr::Error::Ok) << et_program_path(EtProgram::kUnplanned);
  std::vector<float> data(kEtBoundElements, 1.5f);
  std::vector<float> out(kEtBoundElements);
  auto out_tensor = from_blob(out.data(), {static_cast<int>(kEtBoundElements / kEtMaxCols), static_cast<int>(kEtMaxCols)});
  ASSERT_EQ(unplanned.set_output("forward", etr::EValue(*out_tensor), 0), etr::Error::Ok);
  int checked = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const EtSequence sequence = generate_et(et_config(seed));
    for (const EtStep& step : sequence.steps) {
      for (const auto& entry : et_plans_of(sequence, step)) {
        const InputShape& shape = entry.second->shape;
        auto x = from_blob(data.data(), {static_cast<int>(shape.rows), static_cast<int>(shape.cols)});
        Module& module = is_planned(entry.first) ? planned : unplanned;
        ASSERT_EQ(module.set_input("forward", etr::EValue(*x), 0), etr::Error::Ok) << to_string(*entry.second);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(ContractFuzzEtPrograms, ProgramsHaveTheirOperatorsDelegatesAndDeviceArenas) {
  ensure_et_runtime();
  struct Want {
    EtProgram program;
    std::size_t backends;
    bool cuda_arena;
    std::size_t instructions;
  };
  for (const Want& want : {Want{EtProgram::kPlanned, 1, false, 1}, Want{EtProgram::kDevicePlanned, 1, true, 4},
                           Want{EtProgram::kCpuOps, 1, true, 6}, Want{EtProgram::kTwoDelegates, 2, true, 7}}) {
    Module module(et_program_path(want.program));
    auto meta = module.method_meta("forward");
    ASSERT_TRUE(meta.ok()) << et_program_path(want.program);
    EXPECT_EQ(meta->num_backends(), want.backends) << to_string(want.program);
    EXPECT_TRUE(meta->uses_backend("TensorRTBackend"));
    // num_instructions() is marked experimental (deprecated) by ExecuTorch; the count is what this checks.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    EXPECT_EQ(meta->num_instructions(), want.instructions) << to_string(want.program);
#pragma GCC diagnostic pop
    bool cuda = false;
    for (std::size_t b = 0; b < meta->num_memory_planned_buffers(); ++b) {
      auto device = meta->memory_planned_buffer_device(b);
      cuda = cuda || (device.ok() && device->type() == ::executorch::aten::DeviceType::CUDA);
    }
    EXPECT_EQ(cuda, want.cuda_arena) << to_string(want.program);
  }
}

TEST(ContractFuzzEtPrograms, PlannedInputsSitWherePlannedInputAddressSays) {
  ensure_et_runtime();
  Module module(et_program_path(EtProgram::kPlanned));
  const std::vector<float> x = draw_floats(3000, 1), y = draw_floats(3000, 2);
  auto tx = from_blob(const_cast<float*>(x.data()), {1000, 3});
  auto ty = from_blob(const_cast<float*>(y.data()), {1000, 3});
  ASSERT_EQ(module.set_input("forward", etr::EValue(*tx), 0), etr::Error::Ok);
  ASSERT_EQ(module.set_input("forward", etr::EValue(*ty), 1), etr::Error::Ok);
  const void* at_x = planned_input_address(module, EtProgram::kPlanned, 0);
  const void* at_y = planned_input_address(module, EtProgram::kPlanned, 1);
  ASSERT_NE(at_x, nullptr);
  ASSERT_NE(at_y, nullptr);
  EXPECT_EQ(std::memcmp(at_x, x.data(), x.size() * sizeof(float)), 0) << "x is not where the memory plan puts it";
  EXPECT_EQ(std::memcmp(at_y, y.data(), y.size() * sizeof(float)), 0) << "y is not where the memory plan puts it";
}
#endif

}  // namespace
}  // namespace trtet_test::fuzz
