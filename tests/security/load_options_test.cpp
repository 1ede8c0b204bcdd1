// The load-time options through which the application, never the program, bounds what a
// program may make the runtime do (backend/options.h): engine host code, the metadata cap,
// and the staging budget a compile spec may ask for.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "backend/options.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;

constexpr std::size_t kMiB = std::size_t{1} << 20;

etr::Span<const etr::BackendOption> span(const std::vector<etr::BackendOption>& options) {
  return etr::Span<const etr::BackendOption>(options.data(), options.size());
}

ex::Result<ex::delegate::SessionOptions> resolve(const Specs& specs, const std::vector<etr::BackendOption>& options) {
  auto resolved = ex::resolve_delegate_options(specs.ref(), span(options));
  if (!resolved.ok()) return resolved.status();
  return resolved->session;
}

ex::Result<std::optional<bool>> host_code(const std::vector<etr::BackendOption>& options) {
  auto resolved = ex::resolve_delegate_options({}, span(options));
  if (!resolved.ok()) return resolved.status();
  return resolved->allow_engine_host_code;
}

ex::Result<ex::blob::ParseLimits> blob_limits(const std::vector<etr::BackendOption>& options) {
  auto resolved = ex::resolve_delegate_options({}, span(options));
  if (!resolved.ok()) return resolved.status();
  return resolved->blob_limits;
}

// ---- the program's staging budget -------------------------------------------------------------

// A compile spec's staging_budget_mb is what initialize pins as host and device memory, so a value
// of up to 2^44 MiB must not be taken as the budget: a program asks for at most 256 MiB unless the
// application allows more.
TEST(SecurityLoadOptions, AProgramsStagingBudgetIsCapped) {
  auto huge = resolve(Specs(Entries{{"staging_budget_mb", "17592186044415"}}), {});
  ASSERT_FALSE(huge.ok()) << "a program asked for 2^44 MiB of pinned staging and got "
                          << huge->staging_budget_bytes << " bytes";
  TRTET_EXPECT_ERROR(huge, ex::ErrorCode::kInvalidProgram, "max_program_staging_budget_mb");
  auto over = resolve(Specs(Entries{{"staging_budget_mb", "257"}}), {});
  ASSERT_FALSE(over.ok());
  TRTET_EXPECT_ERROR_SAYS(over, "asks for 257 MiB of pinned staging, more than the 256 MiB");
  auto at_cap = resolve(Specs(Entries{{"staging_budget_mb", "256"}}), {});
  TRTET_ASSERT_OK(at_cap);
  EXPECT_EQ(at_cap->staging_budget_bytes, 256 * kMiB);
}

TEST(SecurityLoadOptions, TheApplicationRaisesOrLowersTheProgramsCap) {
  auto raised = resolve(Specs(Entries{{"staging_budget_mb", "4096"}}), {int_option("max_program_staging_budget_mb", 8192)});
  TRTET_ASSERT_OK(raised);
  EXPECT_EQ(raised->staging_budget_bytes, 4096 * kMiB);
  auto by_string = resolve(Specs(Entries{{"staging_budget_mb", "4096"}}), {string_option("max_program_staging_budget_mb", "4096")});
  TRTET_ASSERT_OK(by_string);
  auto lowered = resolve(Specs(Entries{{"staging_budget_mb", "64"}}), {int_option("max_program_staging_budget_mb", 0)});
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().code(), ex::ErrorCode::kInvalidProgram);
  // The application's own budget is not capped, and overrides the program's.
  auto own = resolve(Specs(Entries{{"staging_budget_mb", "100000"}}), {int_option("staging_budget_mb", 1024)});
  TRTET_ASSERT_OK(own);
  EXPECT_EQ(own->staging_budget_bytes, 1024 * kMiB);
  for (const etr::BackendOption& bad : {int_option("max_program_staging_budget_mb", -1),
                                        string_option("max_program_staging_budget_mb", "lots"),
                                        bool_option("max_program_staging_budget_mb", true)}) {
    auto refused = resolve(Specs(Entries{}), {bad});
    ASSERT_FALSE(refused.ok());
    TRTET_EXPECT_ERROR(refused, ex::ErrorCode::kInvalidArgument, "max_program_staging_budget_mb");
  }
}

// ---- compile spec text quoted in messages -------------------------------------------------------

// Quoted values are escaped and cut: "%.*s" given (int)size would turn the precision negative for a
// value of 2^31 bytes or more, and printf would read on to a NUL past the value.
TEST(SecurityLoadOptions, CompileSpecValuesInMessagesAreBoundedAndEscaped) {
  // A value whose size does not fit in an int; only its first bytes are ever read.
  std::string value = "\x1b]0;owned\x07";
  value.resize(4096, 'x');
  etr::CompileSpec spec{};
  spec.key = "use_cuda_graphs";
  spec.value.buffer = value.data();
  spec.value.nbytes = (std::size_t{1} << 31) + 5;  // (int) of this is negative: printf read to a NUL
  auto refused = ex::resolve_delegate_options(etr::ArrayRef<etr::CompileSpec>(&spec, 1), {});
  ASSERT_FALSE(refused.ok());
  const std::string message = refused.status().message();  // status() returns a copy: keep the text
  TRTET_EXPECT_ERROR_OMITS(refused, "\x1b");
  TRTET_EXPECT_ERROR_SAYS(refused, "\\x1b]0;owned\\x07xxx");
  EXPECT_LT(message.size(), 400u) << "the quoted value is cut";
}

// ---- engine host code ----------------------------------------------------------------------------

TEST(SecurityLoadOptions, EngineHostCodeIsTheApplicationsChoice) {
  auto unset = host_code({});
  TRTET_ASSERT_OK(unset);
  EXPECT_FALSE(unset->has_value());
  auto allowed = host_code({bool_option("allow_engine_host_code", true)});
  TRTET_ASSERT_OK(allowed);
  EXPECT_EQ(*allowed, std::optional<bool>(true));
  auto as_int = host_code({int_option("allow_engine_host_code", 0)});
  TRTET_ASSERT_OK(as_int);
  EXPECT_EQ(*as_int, std::optional<bool>(false));
  auto last = host_code(
      {bool_option("allow_engine_host_code", true), bool_option("allow_engine_host_code", false)});
  TRTET_ASSERT_OK(last);
  EXPECT_EQ(*last, std::optional<bool>(false));
  for (const etr::BackendOption& bad :
       {int_option("allow_engine_host_code", 2), string_option("allow_engine_host_code", "true")}) {
    auto refused = host_code({bad});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), ex::ErrorCode::kInvalidArgument);
  }
}

// ---- the metadata cap ----------------------------------------------------------------------------

TEST(SecurityLoadOptions, TheMetadataCapIsTheApplicationsChoice) {
  auto by_default = blob_limits({});
  TRTET_ASSERT_OK(by_default);
  EXPECT_EQ(by_default->max_metadata_bytes, kMiB);
  auto raised = blob_limits({int_option("max_blob_metadata_bytes", 8 << 20)});
  TRTET_ASSERT_OK(raised);
  EXPECT_EQ(raised->max_metadata_bytes, std::size_t{8} << 20);
  auto text = blob_limits({string_option("max_blob_metadata_bytes", "4294967295")});
  TRTET_ASSERT_OK(text);
  EXPECT_EQ(text->max_metadata_bytes, std::size_t{4294967295});
  for (const etr::BackendOption& bad :
       {int_option("max_blob_metadata_bytes", 0), int_option("max_blob_metadata_bytes", -5),
        string_option("max_blob_metadata_bytes", "4294967296"), bool_option("max_blob_metadata_bytes", true)}) {
    auto refused = blob_limits({bad});
    ASSERT_FALSE(refused.ok());
    TRTET_EXPECT_ERROR(refused, ex::ErrorCode::kInvalidArgument, "max_blob_metadata_bytes");
  }
  // The cap is in bytes, and a bad one is reported in bytes.
  for (const etr::BackendOption& bad :
       {string_option("max_blob_metadata_bytes", "1 MiB"), int_option("max_blob_metadata_bytes", -5),
        bool_option("max_blob_metadata_bytes", true)}) {
    auto refused = blob_limits({bad});
    ASSERT_FALSE(refused.ok());
    TRTET_EXPECT_ERROR_SAYS(refused, "bytes");
    TRTET_EXPECT_ERROR_OMITS(refused, "MiB >=");
  }
}

}  // namespace
}  // namespace trtet_test
