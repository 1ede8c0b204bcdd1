// CPU tests of the session's options in the options schema (backend/options.h): the
// delegate-graph and staging-budget compile specs and load-time options, their precedence and
// their errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "backend/options.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;

ex::Result<ex::delegate::SessionOptions> resolve(const Specs& specs, std::vector<etr::BackendOption> options) {
  auto resolved = ex::resolve_delegate_options(specs.ref(),
                                               etr::Span<const etr::BackendOption>(options.data(), options.size()));
  if (!resolved.ok()) return resolved.status();
  return resolved->session;
}

TEST(SessionOptions, GraphsAreOffByDefaultWithSixteenKept) {
  auto options = resolve(Specs(Entries{}), {});
  TRTET_ASSERT_OK(options);
  EXPECT_FALSE(options->use_cuda_graphs);
  EXPECT_EQ(options->graph_cache_size, 16u);
}

TEST(SessionOptions, TheCompileSpecTurnsGraphsOnAndTheLoadOptionWins) {
  for (const char* on : {"1", "true", "True"}) {
    auto options = resolve(Specs(Entries{{"use_cuda_graphs", on}}), {});
    TRTET_ASSERT_OK(options);
    EXPECT_TRUE(options->use_cuda_graphs) << on;
  }
  auto overridden = resolve(Specs(Entries{{"use_cuda_graphs", "1"}}), {bool_option("use_cuda_graphs", false)});
  TRTET_ASSERT_OK(overridden);
  EXPECT_FALSE(overridden->use_cuda_graphs);
  auto by_int = resolve(Specs(Entries{{"use_cuda_graphs", "false"}}), {int_option("use_cuda_graphs", 1)});
  TRTET_ASSERT_OK(by_int);
  EXPECT_TRUE(by_int->use_cuda_graphs);
  auto sized = resolve(Specs(Entries{}), {int_option("cuda_graph_cache_size", 3)});
  TRTET_ASSERT_OK(sized);
  EXPECT_EQ(sized->graph_cache_size, 3u);
}

TEST(SessionOptions, MalformedValuesAreRefusedNamingThem) {
  auto spec = resolve(Specs(Entries{{"use_cuda_graphs", "yes"}}), {});
  ASSERT_FALSE(spec.ok());
  TRTET_EXPECT_ERROR(spec, ex::ErrorCode::kInvalidProgram, "\"yes\"");
  auto twice = resolve(Specs(Entries{{"use_cuda_graphs", "1"}, {"use_cuda_graphs", "0"}}), {});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), ex::ErrorCode::kInvalidProgram);
  auto option = resolve(Specs(Entries{}), {string_option("use_cuda_graphs", "on")});
  ASSERT_FALSE(option.ok());
  EXPECT_EQ(option.status().code(), ex::ErrorCode::kInvalidArgument);
  auto two = resolve(Specs(Entries{}), {int_option("use_cuda_graphs", 2)});
  EXPECT_EQ(two.status().code(), ex::ErrorCode::kInvalidArgument);
  auto negative = resolve(Specs(Entries{}), {int_option("cuda_graph_cache_size", -1)});
  ASSERT_FALSE(negative.ok());
  TRTET_EXPECT_ERROR_SAYS(negative, "cuda_graph_cache_size");
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(SessionOptions, StagingBudgetIsOffByDefault) {
  auto options = resolve(Specs(Entries{}), {});
  TRTET_ASSERT_OK(options);
  EXPECT_EQ(options->staging_budget_bytes, 0u);
}

TEST(SessionOptions, StagingBudgetMbFromTheLoadOptionOrTheCompileSpecInMiB) {
  auto by_int = resolve(Specs(Entries{}), {int_option("staging_budget_mb", 64)});
  TRTET_ASSERT_OK(by_int);
  EXPECT_EQ(by_int->staging_budget_bytes, 64 * kMiB);
  auto by_string = resolve(Specs(Entries{}), {string_option("staging_budget_mb", "12")});
  TRTET_ASSERT_OK(by_string);
  EXPECT_EQ(by_string->staging_budget_bytes, 12 * kMiB);
  auto baked = resolve(Specs(Entries{{"staging_budget_mb", "32"}}), {});
  TRTET_ASSERT_OK(baked);
  EXPECT_EQ(baked->staging_budget_bytes, 32 * kMiB);
  // The load-time option wins over the compile spec, also to turn the budget off.
  auto overridden = resolve(Specs(Entries{{"staging_budget_mb", "32"}}), {int_option("staging_budget_mb", 0)});
  TRTET_ASSERT_OK(overridden);
  EXPECT_EQ(overridden->staging_budget_bytes, 0u);
  // Other options are untouched by it.
  auto both = resolve(Specs(Entries{{"use_cuda_graphs", "1"}}), {int_option("staging_budget_mb", 1)});
  TRTET_ASSERT_OK(both);
  EXPECT_TRUE(both->use_cuda_graphs);
  EXPECT_EQ(both->staging_budget_bytes, kMiB);
}

TEST(SessionOptions, MalformedStagingBudgetsAreRefusedNamingKeyAndValue) {
  auto negative = resolve(Specs(Entries{}), {int_option("staging_budget_mb", -1)});
  ASSERT_FALSE(negative.ok());
  TRTET_EXPECT_ERROR(negative, ex::ErrorCode::kInvalidArgument, "staging_budget_mb", "-1");
  for (const char* bad : {"", "-4", "12MB", " 8", "0x10", "99999999999999999999"}) {
    auto option = resolve(Specs(Entries{}), {string_option("staging_budget_mb", bad)});
    ASSERT_FALSE(option.ok()) << bad;
    TRTET_EXPECT_ERROR(option, ex::ErrorCode::kInvalidArgument, "staging_budget_mb") << bad;
    auto spec = resolve(Specs(Entries{{"staging_budget_mb", bad}}), {});
    ASSERT_FALSE(spec.ok()) << bad;
    TRTET_EXPECT_ERROR(spec, ex::ErrorCode::kInvalidProgram, "staging_budget_mb") << bad;
  }
  auto quoted = resolve(Specs(Entries{{"staging_budget_mb", "12MB"}}), {});
  ASSERT_FALSE(quoted.ok());
  TRTET_EXPECT_ERROR_SAYS(quoted, "\"12MB\"");
  auto flag = resolve(Specs(Entries{}), {bool_option("staging_budget_mb", true)});
  ASSERT_FALSE(flag.ok());
  EXPECT_EQ(flag.status().code(), ex::ErrorCode::kInvalidArgument);
  auto twice = resolve(Specs(Entries{{"staging_budget_mb", "1"}, {"staging_budget_mb", "2"}}), {});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), ex::ErrorCode::kInvalidProgram);
  // A bad compile spec is refused even when the load-time option would override it.
  auto masked = resolve(Specs(Entries{{"staging_budget_mb", "lots"}}), {int_option("staging_budget_mb", 4)});
  EXPECT_FALSE(masked.ok());
  // Bad input leaves nothing behind: the next resolve is as good as the first.
  auto after = resolve(Specs(Entries{}), {int_option("staging_budget_mb", 2)});
  TRTET_ASSERT_OK(after);
  EXPECT_EQ(after->staging_budget_bytes, 2 * kMiB);
}

// profiling_gpu_every (Note [sampled GPU times]): 1 when absent, an int or decimal digits from 1
// to 1000000, the last one given wins; anything else is refused naming the key and the value.
TEST(ProfilingGpuEvery, EveryCallIsTimedUnlessTheLoadOptionSaysOtherwise) {
  auto every = [](std::vector<etr::BackendOption> options) {
    auto resolved = ex::resolve_delegate_options({}, etr::Span<const etr::BackendOption>(options.data(), options.size()));
    return resolved.ok() ? ex::Result<std::uint32_t>(resolved->profiling_gpu_every)
                         : ex::Result<std::uint32_t>(resolved.status());
  };
  auto absent = every({});
  TRTET_ASSERT_OK(absent);
  EXPECT_EQ(*absent, 1u);
  auto ten = every({int_option("profiling_gpu_every", 10)});
  TRTET_ASSERT_OK(ten);
  EXPECT_EQ(*ten, 10u);
  auto text = every({string_option("profiling_gpu_every", "1000000")});
  TRTET_ASSERT_OK(text);
  EXPECT_EQ(*text, 1000000u);
  auto last = every({int_option("profiling_gpu_every", 4), int_option("profiling_gpu_every", 7)});
  TRTET_ASSERT_OK(last);
  EXPECT_EQ(*last, 7u);
  struct Bad {
    etr::BackendOption option;
    const char* shown;
  };
  for (const Bad& bad : {Bad{int_option("profiling_gpu_every", 0), "is 0"},
                         Bad{int_option("profiling_gpu_every", -3), "-3"},
                         Bad{string_option("profiling_gpu_every", "1000001"), "1000001"},
                         Bad{string_option("profiling_gpu_every", "ten"), "\"ten\""},
                         Bad{bool_option("profiling_gpu_every", true), "a bool"}}) {
    auto refused = every({bad.option});
    ASSERT_FALSE(refused.ok()) << bad.shown;
    TRTET_EXPECT_ERROR(refused, ex::ErrorCode::kInvalidArgument, "profiling_gpu_every", bad.shown);
  }
}

}  // namespace
}  // namespace trtet_test
