// CPU tests of resolve_session_options (executorch/load_options.h): the delegate-graph compile spec
// and load-time options, their precedence and their errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "executorch/load_options.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;

/// Compile specs whose values live as long as the list.
using Entries = std::vector<std::pair<std::string, std::string>>;

struct Specs {
  explicit Specs(Entries entries) : values(std::move(entries)) {
    for (auto& [key, value] : values) {
      etr::CompileSpec spec{};
      spec.key = key.c_str();
      spec.value.buffer = value.data();
      spec.value.nbytes = value.size();
      specs.push_back(spec);
    }
  }
  Specs(const Specs&) = delete;  // the specs point into `values`
  Specs& operator=(const Specs&) = delete;
  etr::ArrayRef<etr::CompileSpec> ref() const { return etr::ArrayRef<etr::CompileSpec>(specs.data(), specs.size()); }
  std::vector<std::pair<std::string, std::string>> values;
  std::vector<etr::CompileSpec> specs;
};

ex::Result<ex::delegate::SessionOptions> resolve(const Specs& specs, std::vector<etr::BackendOption> options) {
  return ex::resolve_session_options(specs.ref(),
                                     etr::Span<const etr::BackendOption>(options.data(), options.size()));
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
  EXPECT_EQ(spec.status().code(), ex::ErrorCode::kInvalidProgram);
  EXPECT_NE(spec.status().message().find("\"yes\""), std::string::npos) << spec.status().message();
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
  EXPECT_NE(negative.status().message().find("cuda_graph_cache_size"), std::string::npos);
}

}  // namespace
}  // namespace trtet_test
