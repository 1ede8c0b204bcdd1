// tensorrt/runtime_search.h: the runtime search order from the load-time option, the environment
// or the default, and every refusal. Host-only, no TensorRT needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error_match.h"
#include "tensorrt/runtime_search.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

const HostCodePolicy kNoHostCode{false, "default"};
const HostCodePolicy kHostCodeAllowed{true, "load-time option allow_engine_host_code"};

std::vector<RuntimeCandidate> parsed(const std::string& spec, int major = 11) {
  Result<std::vector<RuntimeCandidate>> result = parse_runtime_search(spec, major);
  EXPECT_TRUE(result.ok()) << spec << ": " << result.status().to_string();
  return result.ok() ? result.value() : std::vector<RuntimeCandidate>{};
}

TEST(TensorRTRuntimeSearch, FileNamesCarryTheHeadersMajorVersion) {
  EXPECT_EQ(runtime_file_name(RuntimeKind::kFull, 11), "libnvinfer.so.11");
  EXPECT_EQ(runtime_file_name(RuntimeKind::kLean, 10), "libnvinfer_lean.so.10");
  EXPECT_EQ(runtime_file_name(RuntimeKind::kDispatch, 11), "libnvinfer_dispatch.so.11");
  EXPECT_EQ(runtime_file_name(RuntimeKind::kPath, 11), "");
}

TEST(TensorRTRuntimeSearch, DefaultWithHostCodeIsFullThenLeanThenDispatch) {
  const std::vector<RuntimeCandidate> expected = {{RuntimeKind::kFull, "libnvinfer.so.11"},
                                                  {RuntimeKind::kLean, "libnvinfer_lean.so.11"},
                                                  {RuntimeKind::kDispatch, "libnvinfer_dispatch.so.11"}};
  EXPECT_EQ(parsed(kDefaultRuntimeSearchWithHostCode), expected);
  Result<RuntimeSearch> search = choose_runtime_search(std::nullopt, nullptr, 11, kHostCodeAllowed);
  ASSERT_TRUE(search.ok()) << search.status().to_string();
  EXPECT_EQ(search->candidates, expected);
  EXPECT_EQ(search->source, "default");
  EXPECT_EQ(search->spec, "full,lean,dispatch");
}

TEST(TensorRTRuntimeSearch, ParsesWordsPathsAndFileNames) {
  const std::vector<RuntimeCandidate> expected = {{RuntimeKind::kDispatch, "libnvinfer_dispatch.so.10"},
                                                  {RuntimeKind::kPath, "/opt/trt/lib/libnvinfer_lean.so.10"},
                                                  {RuntimeKind::kPath, "libmy_trt.so"},
                                                  {RuntimeKind::kLean, "libnvinfer_lean.so.10"}};
  EXPECT_EQ(parsed(" dispatch , /opt/trt/lib/libnvinfer_lean.so.10,libmy_trt.so,lean ", 10), expected);
  EXPECT_EQ(parsed("./relative"), (std::vector<RuntimeCandidate>{{RuntimeKind::kPath, "./relative"}}));
}

TEST(TensorRTRuntimeSearch, RepeatedItemsAreTriedOnce) {
  EXPECT_EQ(parsed("lean,dispatch,lean"), (std::vector<RuntimeCandidate>{{RuntimeKind::kLean, "libnvinfer_lean.so.11"},
                                                                         {RuntimeKind::kDispatch,
                                                                          "libnvinfer_dispatch.so.11"}}));
}

TEST(TensorRTRuntimeSearch, RefusesEmptyItemsAndUnknownWords) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& bad : {Case{"", "is empty"}, Case{"  ", "is empty"}, Case{"lean,", "empty item"},
                          Case{",lean", "empty item"}, Case{"lean,,dispatch", "empty item"},
                          Case{"Lean", "\"Lean\" names no TensorRT runtime"},
                          Case{"lean,fast", "\"fast\" names no TensorRT runtime"}}) {
    SCOPED_TRACE(bad.spec);
    Result<std::vector<RuntimeCandidate>> result = parse_runtime_search(bad.spec, 11);
    ASSERT_FALSE(result.ok());
    TRTET_EXPECT_ERROR(result, ErrorCode::kInvalidArgument, bad.says);
  }
}

TEST(TensorRTRuntimeSearch, OptionBeatsEnvironmentBeatsDefault) {
  Result<RuntimeSearch> search = choose_runtime_search(std::string("dispatch"), "lean", 11, kHostCodeAllowed);
  ASSERT_TRUE(search.ok());
  EXPECT_EQ(search->source, "load-time option tensorrt_runtime");
  EXPECT_EQ(search->candidates, (std::vector<RuntimeCandidate>{{RuntimeKind::kDispatch, "libnvinfer_dispatch.so.11"}}));

  search = choose_runtime_search(std::nullopt, "lean", 11, kNoHostCode);
  ASSERT_TRUE(search.ok());
  EXPECT_EQ(search->source, "TRTET_TENSORRT_RUNTIME");
  EXPECT_EQ(search->candidates, (std::vector<RuntimeCandidate>{{RuntimeKind::kLean, "libnvinfer_lean.so.11"}}));

  search = choose_runtime_search(std::nullopt, "", 11, kNoHostCode);  // set but empty: the default
  ASSERT_TRUE(search.ok());
  EXPECT_EQ(search->source, "default");
}

TEST(TensorRTRuntimeSearch, ErrorsSayWhereTheOrderCameFrom) {
  Result<RuntimeSearch> search = choose_runtime_search(std::string("nope"), nullptr, 11, kNoHostCode);
  ASSERT_FALSE(search.ok());
  TRTET_EXPECT_ERROR_SAYS(search, "from load-time option tensorrt_runtime");
  search = choose_runtime_search(std::nullopt, "lean,,", 11, kNoHostCode);
  ASSERT_FALSE(search.ok());
  TRTET_EXPECT_ERROR_SAYS(search, "from TRTET_TENSORRT_RUNTIME");
}

TEST(TensorRTRuntimeSearch, KindOfAFileByItsName) {
  EXPECT_EQ(runtime_kind_of_file("/usr/lib/x86_64-linux-gnu/libnvinfer.so.10"), RuntimeKind::kFull);
  EXPECT_EQ(runtime_kind_of_file("libnvinfer_lean.so.11"), RuntimeKind::kLean);
  EXPECT_EQ(runtime_kind_of_file("/x/libnvinfer_dispatch.so"), RuntimeKind::kDispatch);
  EXPECT_EQ(runtime_kind_of_file("/x/libnvinfer_plugin.so.11"), RuntimeKind::kPath);
  EXPECT_EQ(runtime_kind_of_file("/libnvinfer.so.11/libother.so"), RuntimeKind::kPath);
}

// Engine bytes can run native code through the dispatch runtime, so the default order must not
// reach it on its own. Without the application's leave, the default order stops at
// the lean runtime and an order naming dispatch is refused with the option that allows it.
TEST(TensorRTRuntimeSearch, DefaultWithoutHostCodeLeavesOutTheDispatchRuntime) {
  Result<RuntimeSearch> search = choose_runtime_search(std::nullopt, nullptr, 11, kNoHostCode);
  ASSERT_TRUE(search.ok()) << search.status().to_string();
  EXPECT_EQ(search->candidates, (std::vector<RuntimeCandidate>{{RuntimeKind::kFull, "libnvinfer.so.11"},
                                                               {RuntimeKind::kLean, "libnvinfer_lean.so.11"}}));
  EXPECT_EQ(search->spec, "full,lean");
  EXPECT_EQ(search->source, "default");
}

TEST(TensorRTRuntimeSearch, DispatchWithoutHostCodeIsRefusedNamingTheOption) {
  struct Case {
    std::optional<std::string> option;
    const char* environment;
    const char* from;
  };
  for (const Case& c : {Case{std::string("lean,dispatch"), nullptr, "from load-time option tensorrt_runtime"},
                        Case{std::nullopt, "dispatch", "from TRTET_TENSORRT_RUNTIME"},
                        Case{std::string("/opt/trt/libnvinfer_dispatch.so.11"), nullptr, "libnvinfer_dispatch.so.11"},
                        Case{std::string("libnvinfer_dispatch.so"), nullptr, "libnvinfer_dispatch.so"}}) {
    SCOPED_TRACE(c.option.value_or(c.environment));
    Result<RuntimeSearch> search = choose_runtime_search(c.option, c.environment, 11, kNoHostCode);
    ASSERT_FALSE(search.ok());
    TRTET_EXPECT_ERROR(search, ErrorCode::kInvalidArgument, "allow_engine_host_code=true",
                       "TRTET_ALLOW_ENGINE_HOST_CODE=1", c.from);
    // Allowed, the same order is taken as given.
    EXPECT_TRUE(choose_runtime_search(c.option, c.environment, 11, kHostCodeAllowed).ok());
  }
}

TEST(TensorRTRuntimeSearch, HostCodePolicyOptionBeatsEnvironmentBeatsOff) {
  Result<HostCodePolicy> policy = choose_host_code_policy(std::nullopt, nullptr);
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(policy->allowed);
  EXPECT_EQ(policy->source, "default");
  policy = choose_host_code_policy(std::nullopt, "");
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(policy->allowed);
  policy = choose_host_code_policy(std::nullopt, "1");
  ASSERT_TRUE(policy.ok());
  EXPECT_TRUE(policy->allowed);
  EXPECT_EQ(policy->source, "TRTET_ALLOW_ENGINE_HOST_CODE");
  policy = choose_host_code_policy(std::nullopt, "0");
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(policy->allowed);
  policy = choose_host_code_policy(false, "1");  // the application's option wins
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(policy->allowed);
  EXPECT_EQ(policy->source, "load-time option allow_engine_host_code");
  policy = choose_host_code_policy(true, "0");
  ASSERT_TRUE(policy.ok());
  EXPECT_TRUE(policy->allowed);
  for (const char* bad : {"yes", "true", "2", " 1", "1\x1b[2J"}) {
    SCOPED_TRACE(bad);
    policy = choose_host_code_policy(std::nullopt, bad);
    ASSERT_FALSE(policy.ok());
    TRTET_EXPECT_ERROR(policy, ErrorCode::kInvalidArgument, "TRTET_ALLOW_ENGINE_HOST_CODE");
    TRTET_EXPECT_ERROR_OMITS(policy, "\x1b") << "control characters are escaped";
  }
}

TEST(TensorRTRuntimeSearch, MessagesEscapeControlCharacters) {
  Result<RuntimeSearch> search = choose_runtime_search(std::string("lean,\x1b]0;pwned\x07"), nullptr, 11, kNoHostCode);
  ASSERT_FALSE(search.ok());
  TRTET_EXPECT_ERROR_OMITS(search, "\x1b");
  TRTET_EXPECT_ERROR_SAYS(search, "\\x1b]0;pwned\\x07");
}

TEST(TensorRTRuntimeSearch, DescribesCandidatesForMessages) {
  EXPECT_EQ(describe(parsed("full,/x/y.so")), "libnvinfer.so.11 (full), /x/y.so (path)");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
