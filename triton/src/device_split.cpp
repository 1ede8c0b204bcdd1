#include "device_split.h"

#include <deque>

#include "plan_set_serving.h"

namespace trtet_triton {

// Note [keeping a split for the next load]: the driver keeps 4 MiB of device memory for every green
// context made and destroyed, until the process ends (measured on the H200, driver 580: the green
// layer's test ThousandPartitionsWithStreamsLeaveMemoryAtTheDriversBaseline prints it). A server
// whose models are loaded and unloaded again (explicit model control, a repository poll) would lose
// 4 MiB a partition at each load. So the last model to release a split hands it here instead of
// destroying it, and a later load asking for the same split (the same plan text, or the same sms
// counts) on the same device takes it back: its green contexts, and the streams its instances gave
// back (idle_streams). A plan set's split is kept the same way: its controller's thread stops and its
// partitions (every plan's, with the set's streams on them) wait for the next load of the same set
// text. A kept split runs nothing and holds no SMs (a green context is a view of SMs, not a
// reservation), so it never stands in the way of another split of the device. At most kKeptSplits
// are kept; the oldest beyond them is destroyed, and every kept one at the backend's finalize.

std::mutex g_splits_mutex;
std::map<int, std::shared_ptr<DeviceSplit>> g_splits;

namespace {
std::deque<std::shared_ptr<DeviceSplit>> g_kept;  // oldest first; under g_splits_mutex
}  // namespace

namespace {
// Keeps `split` (no model holds it, and it is out of g_splits); returns the oldest kept beyond the
// limit, for the caller to destroy outside the lock. Caller holds g_splits_mutex.
std::shared_ptr<DeviceSplit> keep_locked(const std::shared_ptr<DeviceSplit>& split) {
  split->taken.clear();
  g_kept.push_back(split);
  if (g_kept.size() <= kKeptSplits) return nullptr;
  std::shared_ptr<DeviceSplit> oldest = g_kept.front();
  g_kept.pop_front();
  return oldest;
}
}  // namespace

// Releases a model's hold on a device's split; the last holder keeps it for a later load.
void release_split(const std::shared_ptr<DeviceSplit>& split, const std::vector<std::string>& partitions_taken) {
  std::shared_ptr<DeviceSplit> last;  // destroyed after the lock is let go (a set's thread is joined)
  bool set_to_keep = false;
  {
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    for (const std::string& name : partitions_taken) split->taken.erase(name);
    if (--split->models == 0) {
      auto it = g_splits.find(split->device);
      if (it != g_splits.end() && it->second == split) g_splits.erase(it);
      if (split->key.empty()) {
        last = split;
      } else if (split->set != nullptr) {
        set_to_keep = true;  // no one else can reach it now: out of g_splits, not yet kept
      } else {
        last = keep_locked(split);
      }
    }
  }
  if (set_to_keep) {
    split->set_parts = split->set->take_partitions();  // its controller's thread stopped and joined
    split->set.reset();
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    last = keep_locked(split);
  }
}

std::shared_ptr<DeviceSplit> take_kept_split(const int device, const std::string& key) {
  for (auto it = g_kept.begin(); it != g_kept.end(); ++it) {
    if ((*it)->device == device && (*it)->key == key) {
      std::shared_ptr<DeviceSplit> split = *it;
      g_kept.erase(it);
      return split;
    }
  }
  return nullptr;
}

std::size_t kept_splits() {
  std::lock_guard<std::mutex> lock(g_splits_mutex);
  return g_kept.size();
}

void drop_kept_splits() {
  std::deque<std::shared_ptr<DeviceSplit>> dropped;
  {
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    dropped.swap(g_kept);
  }
}

et::Result<cudaStream_t> take_partition_stream(DeviceSplit& split, et::GreenContext& partition) {
  auto idle = split.idle_streams.find(&partition);
  if (idle != split.idle_streams.end() && !idle->second.empty()) {
    const cudaStream_t stream = idle->second.back();
    idle->second.pop_back();
    return stream;
  }
  return partition.make_stream();
}

void give_back_partition_stream(DeviceSplit& split, const et::GreenContext* partition, const cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_splits_mutex);
  split.idle_streams[partition].push_back(stream);
}

}  // namespace trtet_triton
