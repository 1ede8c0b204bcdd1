// The splits the last model to release them keeps for a later load, and the streams instances give
// back to a partition (triton/src/device_split.h, Note [keeping a split for the next load]). No GPU:
// the splits here hold no green contexts, and the streams are stand-in handles never used.
#include "device_split.h"
#include "instance.h"
#include "plan_set_serving.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace trtet_triton;

// A split as a load makes it: held by one model, in the device's slot.
std::shared_ptr<DeviceSplit> held_split(int device, const std::string& key) {
  auto split = std::make_shared<DeviceSplit>();
  split->device = device;
  split->key = key;
  split->models = 1;
  std::lock_guard<std::mutex> lock(g_splits_mutex);
  g_splits[device] = split;
  return split;
}

std::shared_ptr<DeviceSplit> take(int device, const std::string& key) {
  std::lock_guard<std::mutex> lock(g_splits_mutex);
  return take_kept_split(device, key);
}

class KeptSplit : public ::testing::Test {
 protected:
  void SetUp() override { drop_kept_splits(); }
  void TearDown() override {
    drop_kept_splits();
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    g_splits.clear();
  }
};

TEST_F(KeptSplit, TheLastReleaseKeepsTheSplitForTheSameKeyOnTheSameDeviceOnly) {
  auto split = held_split(0, "sms 16");
  split->models = 2;  // two models on one plan: the first release keeps nothing
  split->taken["a"] = "model 'x'";
  release_split(split, {"a"});
  EXPECT_EQ(kept_splits(), 0u);
  EXPECT_EQ(g_splits.count(0), 1u);
  release_split(split, {});
  EXPECT_EQ(kept_splits(), 1u);
  EXPECT_EQ(g_splits.count(0), 0u) << "a kept split is out of the device's slot: another split may be made there";
  EXPECT_EQ(take(0, "sms 24"), nullptr) << "another request of SMs";
  EXPECT_EQ(take(1, "sms 16"), nullptr) << "another device";
  EXPECT_EQ(take(0, "sms 16"), split);
  EXPECT_EQ(kept_splits(), 0u) << "taken back: kept no more";
  EXPECT_EQ(take(0, "sms 16"), nullptr);
}

TEST_F(KeptSplit, ASplitWithoutAKeyIsNeverKept) {
  auto split = held_split(0, "");
  std::weak_ptr<DeviceSplit> weak = split;
  release_split(split, {});
  split.reset();
  EXPECT_EQ(kept_splits(), 0u);
  EXPECT_TRUE(weak.expired()) << "destroyed with its last holder";
}

TEST_F(KeptSplit, APlanSetsSplitIsKeptWithItsPartitionsAndItsControllerStopped) {
  auto split = held_split(0, "set\n{...}");
  // A set of no plans on no partitions: the controller's thread runs all the same.
  split->set = std::make_shared<SetServing>(0, "set.json", "{...}", et::PlanSet{}, et::PlanSetPartitions{},
                                            SetControl{});
  std::weak_ptr<SetServing> serving = split->set;
  split->taken["chat"] = "model 'chat'";
  release_split(split, {"chat"});
  EXPECT_EQ(kept_splits(), 1u);
  EXPECT_EQ(split->set, nullptr) << "kept without its SetServing";
  EXPECT_TRUE(serving.expired()) << "its controller's thread stopped and joined, its series gone";
  EXPECT_EQ(take(0, "set\n{other}"), nullptr) << "another set's text";
  EXPECT_EQ(take(0, "set\n{...}"), split);
}

TEST_F(KeptSplit, AtMostTheLimitAreKeptAndTheOldestGoesFirst) {
  std::vector<std::weak_ptr<DeviceSplit>> weak;
  for (std::size_t k = 0; k <= kKeptSplits; ++k) {
    auto split = held_split(0, "sms " + std::to_string(8 + k));
    weak.push_back(split);
    release_split(split, {});
  }
  EXPECT_EQ(kept_splits(), kKeptSplits);
  EXPECT_TRUE(weak[0].expired()) << "the oldest is destroyed beyond the limit";
  for (std::size_t k = 1; k <= kKeptSplits; ++k) EXPECT_FALSE(weak[k].expired()) << k;
  EXPECT_EQ(take(0, "sms 8"), nullptr);
  EXPECT_NE(take(0, "sms 9"), nullptr);
  drop_kept_splits();
  EXPECT_EQ(kept_splits(), 0u);
  for (const auto& w : weak) EXPECT_TRUE(w.expired()) << "dropped at the backend's finalize";
}

TEST_F(KeptSplit, AStreamGivenBackIsTheNextInstancesOnThatPartitionOnly) {
  DeviceSplit split;
  et::GreenContext a, b;  // empty: making a stream on one fails, so only a given-back stream comes out
  auto fresh = take_partition_stream(split, a);
  EXPECT_FALSE(fresh.ok()) << "nothing given back: the partition makes a stream (here it cannot)";
  const auto s1 = reinterpret_cast<cudaStream_t>(0x1000);
  const auto s2 = reinterpret_cast<cudaStream_t>(0x2000);
  give_back_partition_stream(split, &a, s1);
  give_back_partition_stream(split, &a, s2);
  EXPECT_FALSE(take_partition_stream(split, b).ok()) << "another partition's stream is never handed out";
  auto first = take_partition_stream(split, a);
  auto second = take_partition_stream(split, a);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*first, *second) << "one stream to one instance";
  EXPECT_TRUE((*first == s1 || *first == s2) && (*second == s1 || *second == s2));
  EXPECT_FALSE(take_partition_stream(split, a).ok()) << "both taken: none left";
}

TEST_F(KeptSplit, AnInstanceOnAPartitionGivesItsStreamBackWhenItGoes) {
  // The instance's teardown (Triton finalizes instances before their model): its partition's stream
  // goes back to the split for the next instance there, not destroyed; an instance of its own stream
  // (the whole GPU) gives nothing back. Without a GPU the stream is a stand-in handle (the teardown's
  // CUDA calls fail before they reach it); with one, a real stream, which the teardown waits for.
  auto split = std::make_shared<DeviceSplit>();
  et::GreenContext partition;
  int gpus = 0;
  const bool gpu = cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0;
  (void)cudaGetLastError();
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x3000);
  if (gpu) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  {
    InstanceState instance;
    instance.partition = &partition;
    instance.split = split;
    instance.stream = stream;
  }
  ASSERT_EQ(split->idle_streams[&partition].size(), 1u);
  EXPECT_EQ(split->idle_streams[&partition][0], stream);
  auto again = take_partition_stream(*split, partition);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, stream) << "the next instance there takes it";
  if (gpu) {
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
  (void)cudaGetLastError();
}

}  // namespace
