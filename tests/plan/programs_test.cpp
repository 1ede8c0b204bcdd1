// CPU check of the programs trtet-plan's GPU tests and demo run (tests/plan/CMakeLists.txt): their
// fake-engine twins (same template, same shapes) load through ExecuTorch's Module and get their
// inputs and outputs from trtet-run's MethodIo with the shapes the tests and the demo pass, so a
// GPU run does not find a malformed program.
#include <gtest/gtest.h>

#include <executorch/runtime/platform/runtime.h>

#include "green/contains.h"
#include "run/engines.h"
#include "run/io.h"

namespace trtet_plan {
namespace {

namespace etr = ::executorch::runtime;

std::string describe(const std::string& name, std::vector<std::string> shapes) {
  etr::runtime_init();
  EXPECT_TRUE(trtet_run::install_test_engine_factory().ok());
  trtet_run::Module module(std::string(TRTET_PLAN_PROGRAM_DIR) + "/" + name + ".pte");
  const etr::Error loaded = module.load_method("forward");
  EXPECT_EQ(loaded, etr::Error::Ok) << name;
  if (loaded != etr::Error::Ok) return "";
  trtet_run::RunOptions options;
  options.io = trtet_run::IoMemory::kHost;  // no GPU needed
  options.shapes = std::move(shapes);
  auto io = trtet_run::MethodIo::prepare(module, options);
  EXPECT_TRUE(io.ok()) << name << ": " << io.status().to_string();
  if (!io.ok()) return "";
  std::string text;
  for (const std::string& line : (*io)->describe()) text += line + "\n";
  return text;
}

TEST(PlanPrograms, TheWavesTestProgramsTakeTheTestsShape) {
  if (!TRTET_PLAN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs: flatc or ExecuTorch's program.fbs missing";
  const std::string text = describe("plan_fake_waves", {"1x1024"});
  EXPECT_CONTAINS(text, "float32 [1, 1024]");
}

TEST(PlanPrograms, TheDemoProgramsHaveTheirShapes) {
  if (!TRTET_PLAN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs: flatc or ExecuTorch's program.fbs missing";
  EXPECT_CONTAINS(describe("plan_fake_demo", {}), "input  1: input 1  float32 [64, 1024]");
  EXPECT_CONTAINS(describe("plan_fake_demo_memory", {}), "output 0: output 0  float32 [1024, 4096]");
}

}  // namespace
}  // namespace trtet_plan
