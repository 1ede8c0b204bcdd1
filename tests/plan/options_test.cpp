// CPU tests of trtet-plan's command line (tools/plan/options.h): --model's keys and values, and
// what the whole command line refuses before any GPU is touched.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "green/contains.h"
#include "plan/options.h"

namespace trtet_plan {
namespace {

std::string refusal(const std::string& text) {
  auto spec = parse_model_spec(text);
  EXPECT_FALSE(spec.ok()) << "accepted: " << text;
  return spec.ok() ? "" : spec.status().message();
}

TEST(PlanOptions, ModelSpecWithEveryKey) {
  auto spec = parse_model_spec(
      "name=chat,program=chat.pte,p99_us=250.5,calls_per_s=1000,io=host,shape=64x1024,shape=64x1024,method=decode");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "chat");
  EXPECT_EQ(spec->program, "chat.pte");
  EXPECT_DOUBLE_EQ(spec->p99_target_us, 250.5);
  EXPECT_DOUBLE_EQ(spec->min_calls_per_s, 1000);
  EXPECT_EQ(spec->io, Io::kHost);
  EXPECT_EQ(spec->shapes, (std::vector<std::string>{"64x1024", "64x1024"}));
  EXPECT_EQ(spec->method, "decode");
}

TEST(PlanOptions, ModelSpecDefaults) {
  auto spec = parse_model_spec("name=a,program=a.pte,p99_us=100");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->io, Io::kDevice);
  EXPECT_EQ(spec->method, "forward");
  EXPECT_EQ(spec->min_calls_per_s, 0);
  EXPECT_TRUE(spec->shapes.empty());
}

TEST(PlanOptions, ModelSpecErrorsNameTheProblem) {
  EXPECT_CONTAINS(refusal(""), "empty");
  EXPECT_CONTAINS(refusal("program=a.pte,p99_us=100"), "name= is required");
  EXPECT_CONTAINS(refusal("name=a,p99_us=100"), "program= is required");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte"), "p99_us= is required");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=0"), "p99_us must be a number of microseconds");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=-3"), "p99_us must be");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=nan"), "p99_us must be");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1e10"), "p99_us must be");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=12us"), "p99_us must be");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,calls_per_s=-1"), "calls_per_s must be");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,io=gpu"), "io takes device, pinned or host");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,shape=64*4"), "shape is written DIMxDIM");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,shape=x4"), "shape is written");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,shape=4x"), "shape is written");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,name=b"), "repeated key 'name'");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,batch=4"), "unknown key 'batch'");
  EXPECT_CONTAINS(refusal("name=a,program=a.pte,p99_us=1,"), "expected key=value");
  EXPECT_CONTAINS(refusal("name=has space,program=a.pte,p99_us=1"), "name must be 1 to 64");
  EXPECT_CONTAINS(refusal("name=" + std::string(65, 'n') + ",program=a.pte,p99_us=1"), "name must be 1 to 64");
  EXPECT_CONTAINS(refusal("name=a,program=,p99_us=1"), "program is empty");
}

TEST(PlanOptions, NamesAreShortAndPlain) {
  EXPECT_TRUE(valid_name("chat-v2.small_1"));
  EXPECT_FALSE(valid_name(""));
  EXPECT_FALSE(valid_name("a/b"));
  EXPECT_FALSE(valid_name("a,b"));
  EXPECT_TRUE(valid_name(std::string(64, 'x')));
  EXPECT_FALSE(valid_name(std::string(65, 'x')));
}

class PlanCommandLine : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per test and process: ctest runs this suite's tests in parallel processes, and one
    // test's TearDown must not remove the file another is reading.
    program_ = ::testing::TempDir() + "plan_options_test_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + std::to_string(::getpid()) + ".pte";
    std::ofstream(program_) << "not a program, but it exists";
  }
  void TearDown() override { std::remove(program_.c_str()); }

  PlanParse parse(std::vector<std::string> args) {
    args.insert(args.begin(), "trtet-plan");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_plan_options(static_cast<int>(argv.size()), argv.data(), /*have_test_engines=*/true);
  }
  std::string model(const std::string& name) { return "name=" + name + ",program=" + program_ + ",p99_us=100"; }

  std::string program_;
};

TEST_F(PlanCommandLine, TwoModelsAndOptions) {
  const PlanParse p = parse({"--model", model("a"), "-m", model("b"), "--sizes", "8:64:8", "--rounds", "2", "--out",
                             "x.json", "--csv", "run", "--spread", "--load-remainder", "--remainder", "spare",
                             "--test-engines", "-n", "100", "--warmup", "5"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.options.models.size(), 2u);
  EXPECT_EQ(p.options.models[1].name, "b");
  EXPECT_EQ(p.options.sizes, "8:64:8");
  EXPECT_EQ(p.options.rounds, 2);
  EXPECT_EQ(p.options.out, "x.json");
  EXPECT_EQ(p.options.csv_prefix, "run");
  EXPECT_TRUE(p.options.spread);
  EXPECT_TRUE(p.options.load_remainder);
  EXPECT_EQ(p.options.remainder, "spare");
  EXPECT_TRUE(p.options.test_engines);
  EXPECT_EQ(p.options.iterations, 100);
  EXPECT_EQ(p.options.warmup, 5);
}

TEST_F(PlanCommandLine, RefusalsBeforeAnyGpu) {
  auto refused = [&](std::vector<std::string> args, const std::string& part) {
    const PlanParse p = parse(std::move(args));
    EXPECT_FALSE(p.run);
    EXPECT_EQ(p.exit_code, kPlanUsage);
    EXPECT_CONTAINS(p.message, part);
  };
  refused({}, "--model is required");
  refused({"--model", model("a"), "--model", model("a")}, "two models are named 'a'");
  refused({"--model", "name=a,program=/nonexistent/x.pte,p99_us=1"}, "cannot read the program /nonexistent/x.pte");
  refused({"--model", model("a"), "--remainder", "a"}, "--remainder 'a' is also a model's name");
  refused({"--model", model("a"), "--remainder", "bad name"}, "--remainder: a name");
  refused({"--model", model("a"), "--sizes", "8:4:8"}, "--sizes:");
  refused({"--model", model("a"), "--rounds", "0"}, "rounds");
  refused({"--model", model("a"), "-n", "5"}, "iterations");
  refused({"--model", model("a") + ",io=disk"}, "io takes device, pinned or host");
  const PlanParse none = parse({"--model", model("a"), "--remainder", "none"});
  EXPECT_TRUE(none.run) << none.message;
  const PlanParse help = parse({"--help"});
  EXPECT_FALSE(help.run);
  EXPECT_EQ(help.exit_code, kPlanOk);
  EXPECT_CONTAINS(help.message, "--model keys: name, program, p99_us");
}

TEST_F(PlanCommandLine, MergeTakesDevicePlanFilesAndNoModel) {
  const PlanParse p = parse({"--merge", "1=b.json", "--merge", "0=a.json", "--out", "plans.json"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_TRUE(p.options.models.empty());
  ASSERT_EQ(p.options.merge.size(), 2u);
  EXPECT_EQ(p.options.merge[0], (std::pair<int, std::string>{1, "b.json"}));
  EXPECT_EQ(p.options.merge[1], (std::pair<int, std::string>{0, "a.json"}));
  EXPECT_EQ(p.options.out, "plans.json");
  auto refused = [&](std::vector<std::string> args, const std::string& part) {
    const PlanParse r = parse(std::move(args));
    EXPECT_FALSE(r.run) << part;
    EXPECT_EQ(r.exit_code, kPlanUsage);
    EXPECT_CONTAINS(r.message, part);
  };
  refused({"--merge", "a.json"}, "--merge 'a.json': expected DEVICE=FILE");
  refused({"--merge", "x=a.json"}, "expected DEVICE=FILE");
  refused({"--merge", "0="}, "expected DEVICE=FILE");
  refused({"--merge", "100=a.json"}, "expected DEVICE=FILE");
  refused({"--merge", "0=a.json", "--merge", "0=b.json"}, "--merge: device 0 is given twice");
  refused({"--merge", "0=a.json", "--model", model("a")}, "give no --model with it");
  const PlanParse help = parse({"--help"});
  EXPECT_CONTAINS(help.message, "trtet-plan --merge 0=plan0.json --merge 1=plan1.json --out plans.json");
}

}  // namespace
}  // namespace trtet_plan
