// Aliased outputs checked once at load (session/aliases.h: one alias per
// input, same dtype, the output no larger than its input at profile 0's maximum), and against the
// input's capacity on every call. Host-only: the engine's shapes are the test's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "session/aliases.h"
#include "session/session.h"
#include "security/alias_engine.h"

namespace trtet_security {
namespace {

using Binding = AliasEngine::Binding;
using ex::ErrorCode;
using ex::Shape;
using ex::engine::Alias;
using ex::engine::AliasKind;

Binding input(const char* name, Shape min, Shape max, ex::DataType dtype = ex::DataType::kFloat32) {
  Binding b;
  b.name = name;
  b.is_input = true;
  b.dtype = dtype;
  b.min = std::move(min);
  b.max = std::move(max);
  return b;
}

Binding output(const char* name, Shape shape, ex::DataType dtype = ex::DataType::kFloat32) {
  Binding b;
  b.name = name;
  b.dtype = dtype;
  b.output = shape;
  return b;
}

Binding follower(const char* name, int input_index) {
  Binding b = output(name, Shape{});
  b.follows_input = input_index;
  return b;
}

void expect_error(const ex::Status& status, ErrorCode code, const std::string& needle) {
  TRTET_EXPECT_ERROR(status, code, needle);
}

TEST(SecurityAliases, AWellFormedAliasMapsOutputToInput) {
  AliasEngine engine({input("cache", {1}, {64}), input("x", {1}, {64}), follower("cache_out", 0)},
                     {Alias{2, 0, AliasKind::kKvCacheUpdate}});
  auto map = ex::delegate::validate_aliases(engine);
  TRTET_ASSERT_OK(map);
  EXPECT_EQ(*map, (std::vector<int>{-1, -1, 0}));
}

TEST(SecurityAliases, NoAliasesTouchNoShapes) {
  AliasEngine engine({input("x", {1}, {64}), follower("y", 0)}, {});
  TRTET_ASSERT_OK(ex::delegate::validate_aliases(engine));
  EXPECT_EQ(engine.set_input_shape_calls, 0);
}

TEST(SecurityAliases, TwoOutputsIntoOneInputAreAnInvalidProgram) {
  AliasEngine engine({input("cache", {1}, {64}), follower("a", 0), follower("b", 0)},
                     {Alias{1, 0, AliasKind::kUser}, Alias{2, 0, AliasKind::kUser}});
  auto map = ex::delegate::validate_aliases(engine);
  ASSERT_FALSE(map.ok());
  expect_error(map.status(), ErrorCode::kInvalidProgram, "are both written into input 0 (\"cache\")");
}

TEST(SecurityAliases, AnOutputAliasedTwiceIsAnInvalidProgram) {
  AliasEngine engine({input("p", {1}, {64}), input("q", {1}, {64}), follower("a", 0)},
                     {Alias{2, 0, AliasKind::kUser}, Alias{2, 1, AliasKind::kUser}});
  auto map = ex::delegate::validate_aliases(engine);
  ASSERT_FALSE(map.ok());
  expect_error(map.status(), ErrorCode::kInvalidProgram, "is aliased twice");
}

TEST(SecurityAliases, DtypesMustAgree) {
  AliasEngine engine({input("cache", {4}, {4}, ex::DataType::kFloat16), output("out", {4})},
                     {Alias{1, 0, AliasKind::kUser}});
  auto map = ex::delegate::validate_aliases(engine);
  ASSERT_FALSE(map.ok());
  expect_error(map.status(), ErrorCode::kInvalidProgram, "differ in dtype");
}

TEST(SecurityAliases, AnOutputLargerThanItsInputIsAnInvalidProgram) {
  // The report's blob: y larger than x, a user alias. The engine would write 128 bytes into 16.
  AliasEngine engine({input("x", {4}, {4}), output("y", {32})}, {Alias{1, 0, AliasKind::kUser}});
  auto map = ex::delegate::validate_aliases(engine);
  ASSERT_FALSE(map.ok());
  expect_error(map.status(), ErrorCode::kInvalidProgram,
               "aliased output 1 (\"y\") takes 128 bytes with every input at optimization profile 0's maximum, more "
               "than the 16 of input 0 (\"x\")");
}

TEST(SecurityAliases, AnOutputWhoseShapeIsDataDependentIsLeftToEachCall) {
  Binding open = output("y", {});
  open.data_dependent = true;
  AliasEngine engine({input("x", {4}, {4}), open}, {Alias{1, 0, AliasKind::kUser}});
  TRTET_EXPECT_OK(ex::delegate::validate_aliases(engine));
}

TEST(SecurityAliases, EachCallChecksTheOutputAgainstTheInputsCapacity) {
  AliasEngine engine({input("cache\x1b[2J", {1}, {64}), output("out", {64})}, {Alias{1, 0, AliasKind::kUser}});
  TRTET_EXPECT_OK(ex::delegate::check_alias_fits(engine, 1, 0, 256, 256));
  const ex::Status refused = ex::delegate::check_alias_fits(engine, 1, 0, 256, 32);
  expect_error(refused, ErrorCode::kInvalidArgument,
               "output 1 (\"out\") takes 256 bytes and is written in place into input 0 (\"cache\\x1b[2J\"), which "
               "holds 32");
  TRTET_EXPECT_ERROR_OMITS(refused, "\x1b") << "names are escaped";
}

// The session runs the check at initialize, before it needs a device: on a machine without a GPU
// the old code answered NoDevice for these engines (their aliases passed), now InvalidProgram.
TEST(SecurityAliases, SessionInitializeRefusesTheseEngines) {
  struct Case {
    const char* what;
    std::vector<Binding> bindings;
    std::vector<Alias> aliases;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"two outputs into one input", {input("cache", {1}, {64}), follower("a", 0), follower("b", 0)},
       {Alias{1, 0, AliasKind::kUser}, Alias{2, 0, AliasKind::kUser}}, "both written into input"},
      {"output larger than its input", {input("x", {4}, {4}), output("y", {32})}, {Alias{1, 0, AliasKind::kUser}},
       "more than the 16 of input 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ex::delegate::Session session(std::make_unique<AliasEngine>(c.bindings, c.aliases));
    expect_error(session.initialize(), ErrorCode::kInvalidProgram, c.says);
  }
}

}  // namespace
}  // namespace trtet_security
