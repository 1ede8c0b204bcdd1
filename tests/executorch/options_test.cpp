// CPU tests of the options schema (backend/options.h): the table itself, a load-time option the
// backend does not have, the weight-streaming budget's values, messages naming key, value, unit and
// source, TensorRTBackend's set_option/get_option, and the environment's one prefix.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include "common/environment.h"
#include "common/error_match.h"
#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "backend/options.h"
#include "tensorrt/runtime_search.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;

etr::Span<const etr::BackendOption> span(const std::vector<etr::BackendOption>& options) {
  return etr::Span<const etr::BackendOption>(options.data(), options.size());
}

ex::Result<ex::DelegateOptions> resolve(const Specs& specs, const std::vector<etr::BackendOption>& options) {
  return ex::resolve_delegate_options(specs.ref(), span(options));
}

TEST(OptionsTable, EveryRowIsComplete) {
  std::set<std::string> keys;
  for (const ex::OptionSpec& row : ex::option_table()) {
    SCOPED_TRACE(row.key);
    EXPECT_TRUE(keys.insert(row.key).second) << "a key appears twice";
    EXPECT_NE(row.sources, 0u);
    EXPECT_NE(std::string(row.default_text), "");
    EXPECT_NE(std::string(row.field), "");
    EXPECT_NE(std::string(row.meaning), "");
    ASSERT_NE(row.details, nullptr);
    const bool parsed_here = (row.sources & (ex::kFromCompileSpec | ex::kFromLoadOption | ex::kFromSetOption)) != 0;
    EXPECT_EQ(row.fill != nullptr, parsed_here);
    EXPECT_EQ(row.read != nullptr, (row.sources & ex::kFromSetOption) != 0);
    EXPECT_EQ(row.environment != nullptr, (row.sources & ex::kFromEnvironment) != 0);
    if (row.environment != nullptr) {
      EXPECT_EQ(std::string_view(row.environment).substr(0, 6), "TRTET_");
    }
    if (row.type == ex::OptionType::kWholeNumber) {
      EXPECT_NE(std::string(row.unit), "");
      EXPECT_LE(row.min, row.max);
    }
    EXPECT_EQ(ex::find_option(row.key), &row);
  }
  EXPECT_EQ(ex::find_option("no_such_option"), nullptr);
  // The application's choices of which code runs never come from the program.
  for (const char* key : {"allow_engine_host_code", "tensorrt_runtime", "max_program_staging_budget_mb",
                          "max_blob_metadata_bytes"}) {
    ASSERT_NE(ex::find_option(key), nullptr) << key;
    EXPECT_EQ(ex::find_option(key)->sources & ex::kFromCompileSpec, 0u) << key;
  }
}

TEST(OptionsTable, TheAdaptersVariablesAreTheTablesNames) {
  EXPECT_STREQ(ex::find_option("tensorrt_runtime")->environment, ex::tensorrt::kRuntimeEnvironmentVariable);
  EXPECT_STREQ(ex::find_option("allow_engine_host_code")->environment, ex::tensorrt::kAllowEngineHostCodeEnvironmentVariable);
  EXPECT_NE(ex::find_option(ex::tensorrt::kAllowEngineHostCodeOption), nullptr);
  EXPECT_STREQ(ex::find_option("copy_workers")->environment, ex::kCopyWorkersVariable);
  EXPECT_STREQ(ex::find_option("cuda_allocator")->environment, ex::kCudaAllocatorVariable);
  EXPECT_STREQ(ex::find_option("debug")->environment, ex::kDebugVariable);
}

TEST(OptionsTable, DefaultsAreTheTables) {
  auto options = resolve(Specs(Entries{}), {});
  TRTET_ASSERT_OK(options);
  EXPECT_FALSE(options->session.use_cuda_graphs);
  EXPECT_EQ(options->session.graph_cache_size, 16u);
  EXPECT_EQ(options->session.staging_budget_bytes, 0u);
  EXPECT_EQ(options->max_program_staging_budget_mb, 256u);
  EXPECT_FALSE(options->weight_streaming_budget.has_value());
  EXPECT_FALSE(options->tensorrt_runtime.has_value());
  EXPECT_FALSE(options->allow_engine_host_code.has_value());
  EXPECT_EQ(options->blob_limits.max_metadata_bytes, std::size_t{1} << 20);
  EXPECT_EQ(options->profiling_gpu_every, 1u);
}

TEST(LoadOptions, AKeyTheBackendDoesNotHaveIsRefusedNamingTheKnownOnes) {
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {bool_option("use_cuda_graph", true)}), ex::ErrorCode::kInvalidArgument, "\"use_cuda_graph\" is not an option of TensorRTBackend", "use_cuda_graphs", "profiling_gpu_every",
                  "weight_streaming_budget", "max_blob_metadata_bytes");
  // An environment-only setting is not a load-time option either.
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("copy_workers", 2)}), ex::ErrorCode::kInvalidArgument, "load-time option \"copy_workers\" is not taken this way (it is an environment variable)");
  // Compile specs of other keys are the compiler's own and are ignored; so are compile specs of
  // the application's keys, which a program may not set.
  auto ignored = resolve(Specs(Entries{{"other_key", "x"}, {"allow_engine_host_code", "1"}, {"tensorrt_runtime", "/x"},
                                       {"max_program_staging_budget_mb", "99999"}}),
                         {});
  TRTET_ASSERT_OK(ignored);
  EXPECT_FALSE(ignored->allow_engine_host_code.has_value());
  EXPECT_FALSE(ignored->tensorrt_runtime.has_value());
  EXPECT_EQ(ignored->max_program_staging_budget_mb, 256u);
}

TEST(LoadOptions, TheWeightStreamingBudgetIsAByteCountUpToInt64Max) {
  for (const char* text : {"0", "1", "4096", "0004096", "9223372036854775807"}) {
    auto baked = resolve(Specs(Entries{{"weight_streaming_budget", text}}), {});
    TRTET_ASSERT_OK(baked);
    EXPECT_EQ(*baked->weight_streaming_budget, std::stoull(text)) << text;
  }
  auto given = resolve(Specs(Entries{{"weight_streaming_budget", "1"}}), {int_option("weight_streaming_budget", 7)});
  TRTET_ASSERT_OK(given);
  EXPECT_EQ(*given->weight_streaming_budget, 7u);
  // A compile spec is exactly its bytes: no NUL ends it.
  const char buffer[] = {'1', '2', '3', '4', '5', '9', '9'};
  etr::CompileSpec spec{"weight_streaming_budget", {const_cast<char*>(buffer), 5}};
  auto exact = ex::resolve_delegate_options(etr::ArrayRef<etr::CompileSpec>(&spec, 1), {});
  TRTET_ASSERT_OK(exact);
  EXPECT_EQ(*exact->weight_streaming_budget, 12345u);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "12 MB", "0x10", "9223372036854775808", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    TRTET_EXPECT_ERROR(resolve(Specs(Entries{{"weight_streaming_budget", bad}}), {}), ex::ErrorCode::kInvalidProgram, "compile spec \"weight_streaming_budget\"", "bytes");
    TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {string_option("weight_streaming_budget", bad)}), ex::ErrorCode::kInvalidArgument, "load-time option \"weight_streaming_budget\"", "bytes");
  }
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("weight_streaming_budget", -1)}), ex::ErrorCode::kInvalidArgument, "is -1, a negative number", "bytes");
}

TEST(LoadOptions, MessagesNameKeyValueUnitAndSource) {
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {string_option("max_blob_metadata_bytes", "1 MiB")}), ex::ErrorCode::kInvalidArgument, "load-time option \"max_blob_metadata_bytes\" is \"1 MiB\"", "whole number of bytes from 1 to 4294967295");
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{{"staging_budget_mb", "lots"}}), {}), ex::ErrorCode::kInvalidProgram, "compile spec \"staging_budget_mb\" is \"lots\"", "whole number of MiB from 0 to");
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("profiling_gpu_every", 0)}), ex::ErrorCode::kInvalidArgument, "load-time option \"profiling_gpu_every\" is 0", "whole number of calls from 1 to 1000000", "default 1");
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("cuda_graph_cache_size", -2)}), ex::ErrorCode::kInvalidArgument, "\"cuda_graph_cache_size\" is -2, a negative number", "graphs");
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("tensorrt_runtime", 1)}), ex::ErrorCode::kInvalidArgument, "\"tensorrt_runtime\" is an int", "lean,dispatch");
  TRTET_EXPECT_ERROR(resolve(Specs(Entries{}), {int_option("use_cuda_graphs", 2)}), ex::ErrorCode::kInvalidArgument, "\"use_cuda_graphs\" is 2", "a bool (or the int 0 or 1)");
}

class ProcessOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_executorch_runtime();
    ex::reset_process_options();
  }
  void TearDown() override { ex::reset_process_options(); }
};

TEST_F(ProcessOptions, SetOptionChangesTheDefaultsOfLaterLoads) {
  ASSERT_TRUE(ex::detail::kTensorRTBackendRegistered);
  etr::BackendOptions<3> set;
  ASSERT_EQ(set.set_option("profiling_gpu_every", 10), etr::Error::Ok);
  ASSERT_EQ(set.set_option("max_program_staging_budget_mb", 1024), etr::Error::Ok);
  ASSERT_EQ(set.set_option("max_blob_metadata_bytes", "2097152"), etr::Error::Ok);
  ASSERT_EQ(etr::set_option(ex::TensorRTBackend::kBackendId, set.view()), etr::Error::Ok) << captured_log();
  auto later = resolve(Specs(Entries{{"staging_budget_mb", "512"}}), {});
  TRTET_ASSERT_OK(later);
  EXPECT_EQ(later->profiling_gpu_every, 10u);
  EXPECT_EQ(later->session.staging_budget_bytes, std::size_t{512} << 20) << "within the raised cap";
  EXPECT_EQ(later->blob_limits.max_metadata_bytes, std::size_t{2} << 20);
  // A load-time option still wins.
  auto own = resolve(Specs(Entries{}), {int_option("profiling_gpu_every", 3)});
  TRTET_ASSERT_OK(own);
  EXPECT_EQ(own->profiling_gpu_every, 3u);

  etr::BackendOptions<3> get;
  ASSERT_EQ(get.set_option("profiling_gpu_every", 0), etr::Error::Ok);
  ASSERT_EQ(get.set_option("max_program_staging_budget_mb", 0), etr::Error::Ok);
  ASSERT_EQ(get.set_option("max_blob_metadata_bytes", 0), etr::Error::Ok);
  ASSERT_EQ(etr::get_option(ex::TensorRTBackend::kBackendId, get.view()), etr::Error::Ok) << captured_log();
  EXPECT_EQ(std::get<int>(get.view()[0].value), 10);
  EXPECT_EQ(std::get<int>(get.view()[1].value), 1024);
  EXPECT_EQ(std::get<int>(get.view()[2].value), 2097152);
}

TEST_F(ProcessOptions, ABadSetOptionChangesNothing) {
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    etr::BackendOptions<2> set;
    ASSERT_EQ(set.set_option("profiling_gpu_every", 5), etr::Error::Ok);
    if (k == 0) {  // out of range
      ASSERT_EQ(set.set_option("max_blob_metadata_bytes", 0), etr::Error::Ok);
    }
    if (k == 1) {  // per load only
      ASSERT_EQ(set.set_option("staging_budget_mb", 4), etr::Error::Ok);
    }
    if (k == 2) {  // a typo
      ASSERT_EQ(set.set_option("profiling_gpu_evry", 4), etr::Error::Ok);
    }
    clear_log();
    EXPECT_EQ(etr::set_option(ex::TensorRTBackend::kBackendId, set.view()), etr::Error::InvalidArgument);
    EXPECT_NE(captured_log().find("set_option option"), std::string::npos) << captured_log();
    auto after = resolve(Specs(Entries{}), {});
    TRTET_ASSERT_OK(after);
    EXPECT_EQ(after->profiling_gpu_every, 1u) << "the good option before the bad one was not applied";
  }
  etr::BackendOptions<1> get;
  ASSERT_EQ(get.set_option("use_cuda_graphs", false), etr::Error::Ok);
  EXPECT_EQ(etr::get_option(ex::TensorRTBackend::kBackendId, get.view()), etr::Error::InvalidArgument);
}

TEST(Environment, OnePrefixAndTheOldOneStillReadWithOneWarning) {
  unsetenv("TRTET_OPTIONS_TEST_VALUE");
  unsetenv("TORCHTRT_ET_OPTIONS_TEST_VALUE");
  EXPECT_EQ(ex::read_environment("TRTET_OPTIONS_TEST_VALUE"), nullptr);
  setenv("TORCHTRT_ET_OPTIONS_TEST_VALUE", "old", 1);
  ::testing::internal::CaptureStderr();
  const char* first = ex::read_environment("TRTET_OPTIONS_TEST_VALUE");
  const char* second = ex::read_environment("TRTET_OPTIONS_TEST_VALUE");
  const std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(first, nullptr);
  EXPECT_STREQ(first, "old");
  EXPECT_STREQ(second, "old");
  EXPECT_NE(warned.find("TORCHTRT_ET_OPTIONS_TEST_VALUE is deprecated; it is read as TRTET_OPTIONS_TEST_VALUE"),
            std::string::npos)
      << warned;
  EXPECT_EQ(warned.find("deprecated"), warned.rfind("deprecated")) << "warned once: " << warned;
  setenv("TRTET_OPTIONS_TEST_VALUE", "new", 1);
  EXPECT_STREQ(ex::read_environment("TRTET_OPTIONS_TEST_VALUE"), "new") << "the new name wins";
  // A name without the prefix has no old spelling.
  EXPECT_EQ(ex::read_environment("OPTIONS_TEST_VALUE"), nullptr);
  unsetenv("TRTET_OPTIONS_TEST_VALUE");
  unsetenv("TORCHTRT_ET_OPTIONS_TEST_VALUE");
}

// The Python package checks names and types before it loads anything (python/torchtrt_executorch,
// LOAD_OPTIONS): its table must be this one's load-time options, with the Python types each type takes.
TEST(OptionsTable, ThePythonPackagesTableIsThisOne) {
  std::ifstream file(std::string(TRTET_SOURCE_DIR) + "/python/torchtrt_executorch/__init__.py");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  const std::size_t begin = source.find("LOAD_OPTIONS: Dict[str, tuple] = {");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = source.find("\n}", begin);
  ASSERT_NE(end, std::string::npos);
  std::map<std::string, std::string> python;
  std::istringstream lines(source.substr(begin, end - begin));
  std::string line;
  std::getline(lines, line);  // the opening line
  while (std::getline(lines, line)) {
    const std::size_t open = line.find('"');
    const std::size_t close = line.find('"', open + 1);
    const std::size_t types = line.find(": (");
    ASSERT_TRUE(open != std::string::npos && close != std::string::npos && types != std::string::npos) << line;
    python[line.substr(open + 1, close - open - 1)] = line.substr(types + 2, line.rfind(')') - types - 1);
  }
  std::map<std::string, std::string> table;
  for (const ex::OptionSpec& row : ex::option_table()) {
    if ((row.sources & ex::kFromLoadOption) == 0) continue;
    table[row.key] = row.type == ex::OptionType::kBool          ? "(bool, int)"
                     : row.type == ex::OptionType::kWholeNumber ? "(int, str)"
                                                                : "(str,)";
  }
  EXPECT_EQ(python, table);
}

}  // namespace
}  // namespace trtet_test
