// CPU tests of trtet-plan's reports (tools/plan/report.h): the CSVs tools/plot_plan.py reads, the
// final table, and the plan file made from the last verification (written and read back).
#include <gtest/gtest.h>

#include <string>

#include "green/contains.h"
#include "plan/report.h"

namespace trtet_plan {
namespace {

namespace et = torch_tensorrt::executorch_backend;

std::vector<VerifyRow> rows() {
  VerifyRow a{1, "latency", 16, 300, 0, 180.5, 150, 190.25, 4100, true};
  VerifyRow b{1, "compute", 32, 250, 1000, 212, 205, 260, 3800, false};
  return {a, b};
}

TEST(PlanReport, CurvesCsv) {
  ModelNeeds m;
  m.name = "a";
  m.p99_target_us = 100;
  m.curve = {{8, 400.5, 2400}, {16, 210.25, 4600}};
  const std::string csv = curves_csv({m}, {{390, 200}});
  EXPECT_EQ(csv,
            "model,sms,p50_us,p99_us,calls_per_s,p99_target_us,min_calls_per_s\n"
            "a,8,390.000,400.500,2400.0,100.000,0.0\n"
            "a,16,200.000,210.250,4600.0,100.000,0.0\n");
  EXPECT_CONTAINS(curves_csv({m}, {}), "a,8,0.000,400.500");
}

TEST(PlanReport, VerifyCsv) {
  const std::string csv = verify_csv(rows());
  EXPECT_CONTAINS(csv, "round,model,sms,p99_target_us,min_calls_per_s,p99_alone_us,p50_beside_us,p99_beside_us,"
                       "calls_per_s_beside,meets\n");
  EXPECT_CONTAINS(csv, "1,latency,16,300.000,0.0,180.500,150.000,190.250,4100.0,1\n");
  EXPECT_CONTAINS(csv, "1,compute,32,250.000,1000.0,212.000,205.000,260.000,3800.0,0\n");
}

TEST(PlanReport, FinalTable) {
  const std::string table = final_table(rows(), GpuShape{132, 8, 128}, "headroom");
  EXPECT_CONTAINS(table, "p99 alone (us)");
  EXPECT_CONTAINS(table, "p99 beside (us)");
  EXPECT_CONTAINS(table, "headroom");
  EXPECT_CONTAINS(table, "36.6%  yes");   // (300 - 190.25) / 300
  EXPECT_CONTAINS(table, "-4.0%  NO");    // (250 - 260) / 250
  EXPECT_CONTAINS(table, "(minimum 1000 calls/s)");
  EXPECT_CONTAINS(table, "SMs: 48 planned, of the 128 one split hands out (132 on the GPU); 84 left over as the "
                         "remainder partition 'headroom'");
  EXPECT_CONTAINS(final_table(rows(), GpuShape{132, 8, 128}, ""), "(no remainder partition)");
}

TEST(PlanReport, MeetsTargets) {
  EXPECT_TRUE(meets_targets(100, 0, 100, 0));
  EXPECT_FALSE(meets_targets(100.1, 0, 100, 0));
  EXPECT_FALSE(meets_targets(0, 0, 100, 0));  // nothing measured
  EXPECT_FALSE(meets_targets(50, 999, 100, 1000));
  EXPECT_TRUE(meets_targets(50, 1000, 100, 1000));
}

TEST(PlanReport, PlanFileFromTheLastVerification) {
  et::PlanGpu gpu{0, "NVIDIA H200", 132, 8, 8, 8, 128};
  const et::PartitionPlan made = make_plan(rows(), {"latency.pte", "compute.pte"}, gpu, "headroom");
  ASSERT_TRUE(made.any_device());
  const et::DevicePlan& plan = made.devices[0];
  ASSERT_EQ(plan.partitions.size(), 2u);
  EXPECT_EQ(plan.partitions[1].name, "compute");
  EXPECT_EQ(plan.partitions[1].sms, 32u);
  EXPECT_DOUBLE_EQ(plan.partitions[1].p99_beside_us, 260);
  EXPECT_EQ(plan.partitions[0].program, "latency.pte");
  auto text = et::partition_plan_json(made);
  ASSERT_TRUE(text.ok()) << text.error().message();
  auto back = et::parse_partition_plan(*text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->any_device());
  EXPECT_EQ(back->devices[0].total_sms(), 48u);
  EXPECT_EQ(back->devices[0].remainder_name, "headroom");
}

}  // namespace
}  // namespace trtet_plan
