#include "device_split.h"

namespace trtet_triton {

// ---- one split per device, shared by the server's models ----

std::mutex g_splits_mutex;
std::map<int, std::shared_ptr<DeviceSplit>> g_splits;

// Releases a model's hold on a device's split; the last holder destroys it (its partitions wait for
// their own streams).
void release_split(const std::shared_ptr<DeviceSplit>& split, const std::vector<std::string>& partitions_taken) {
  std::shared_ptr<DeviceSplit> last;
  {
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    for (const std::string& name : partitions_taken) split->taken.erase(name);
    if (--split->models == 0) {
      auto it = g_splits.find(split->device);
      if (it != g_splits.end() && it->second == split) g_splits.erase(it);
      last = split;
    }
  }
}

}  // namespace trtet_triton
