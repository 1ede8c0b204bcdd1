// Latency statistics, the sweep's decision, its CSV and the tables' helpers.
#include <gtest/gtest.h>

#include <numeric>

#include "green/contains.h"
#include "run/report.h"
#include "run/stats.h"

namespace trtet_run {
namespace {

TEST(Stats, NearestRankPercentilesOfOneToHundred) {
  std::vector<double> samples(100);
  std::iota(samples.begin(), samples.end(), 1.0);
  std::reverse(samples.begin(), samples.end());  // order must not matter
  const LatencyStats s = summarize(samples, 0.5);
  EXPECT_EQ(s.calls, 100u);
  EXPECT_DOUBLE_EQ(s.p50_us, 50);
  EXPECT_DOUBLE_EQ(s.p90_us, 90);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.max_us, 100);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5);
  EXPECT_DOUBLE_EQ(s.calls_per_s, 200);
}

TEST(Stats, OneSampleAndNone) {
  const LatencyStats one = summarize({7.0}, 0);
  EXPECT_DOUBLE_EQ(one.p50_us, 7);
  EXPECT_DOUBLE_EQ(one.p99_us, 7);
  EXPECT_DOUBLE_EQ(one.calls_per_s, 0) << "no wall time, no rate";
  const LatencyStats none = summarize({}, 1);
  EXPECT_EQ(none.calls, 0u);
  EXPECT_DOUBLE_EQ(none.max_us, 0);
}

SweepPoint point(unsigned sms, double p99, bool whole = false) {
  SweepPoint p;
  p.sms = sms;
  p.whole_gpu = whole;
  p.stats.calls = 10;
  p.stats.p99_us = p99;
  return p;
}

TEST(Sweep, TheSmallestPartitionMeetingTheTargetIsChosen) {
  const std::vector<SweepPoint> curve = {point(8, 400), point(16, 210), point(24, 199), point(32, 150),
                                         point(132, 90, true)};
  auto best = smallest_meeting(curve, 200);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->sms, 24u);
  EXPECT_EQ(smallest_meeting(curve, 199)->sms, 24u) << "the target is inclusive";
  EXPECT_CONTAINS(recommendation(curve, 200), "recommendation: 24 SMs (p99 199.0 us");
}

TEST(Sweep, TheWholeGpuIsNeverRecommendedAsAPartition) {
  const std::vector<SweepPoint> curve = {point(8, 400), point(16, 300), point(132, 90, true)};
  EXPECT_FALSE(smallest_meeting(curve, 100).has_value());
  EXPECT_CONTAINS(recommendation(curve, 100), "only the whole GPU does");
  EXPECT_CONTAINS(recommendation(curve, 50), "not met on any partition");
  EXPECT_CONTAINS(recommendation(curve, 50), "best p99 300.0 us on 16 SMs");
}

TEST(Sweep, RangeParsesAndStopsAtLast) {
  EXPECT_EQ(*parse_sm_range("8:32:8"), (std::vector<unsigned>{8, 16, 24, 32}));
  EXPECT_EQ(*parse_sm_range("8:132:8"), (std::vector<unsigned>{8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104,
                                                               112, 120, 128}));
  EXPECT_EQ(*parse_sm_range("16:16:8"), std::vector<unsigned>{16});
  EXPECT_EQ(parse_sm_range("4294967288:4294967295:8")->size(), 1u) << "no overflow past LAST";
  EXPECT_FALSE(parse_sm_range("8:32").ok());
  EXPECT_FALSE(parse_sm_range("8:32:0").ok());
  EXPECT_FALSE(parse_sm_range("a:32:8").ok());
  EXPECT_FALSE(parse_sm_range("8:32:8:1").ok());
}

TEST(Sweep, CsvHasAHeaderAndOneLinePerPoint) {
  SweepPoint p = point(8, 123.456);
  p.stats.p50_us = 100;
  const std::string csv = sweep_csv({p, point(132, 50, true)});
  EXPECT_EQ(csv.rfind("sms,whole_gpu,calls,p50_us,p90_us,p99_us,max_us,mean_us,calls_per_s\n", 0), 0u);
  EXPECT_CONTAINS(csv, "\n8,0,10,100.00,0.00,123.46,");
  EXPECT_CONTAINS(csv, "\n132,1,10,");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
}

TEST(Report, IdsPrintAsRanges) {
  EXPECT_EQ(format_ids({0, 1, 2, 3, 8, 10, 11}), "0-3, 8, 10-11");
  EXPECT_EQ(format_ids({}), "(none)");
}

TEST(Report, RowsShowTheSmsTheEngineRanOnOrADash) {
  LatencyStats s;
  s.p50_us = 1.5;
  const std::string with = table_row("x", 32, s, std::vector<int>{1, 2, 3});
  const std::string without = table_row("x", 32, s, std::nullopt, "yes");
  EXPECT_EQ(with.substr(with.size() - 1), "3");
  EXPECT_CONTAINS(without, "-  yes");
  EXPECT_CONTAINS(table_header("run"), "p99 (us)");
}

}  // namespace
}  // namespace trtet_run
