// The backend setting keep-cores-awake (triton/src/keep_awake.h, Note [cores kept awake]): the core
// list it reads and refuses, and the threads it starts: one per core, pinned there, at SCHED_IDLE,
// gone when stopped; a core the process may not run on starts none. No server and no GPU.
#include "keep_awake.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using trtet_triton::CoresKeptAwake;
using trtet_triton::keep_cores_awake;
using trtet_triton::parse_core_list;

struct Task {
  int tid = 0;
  std::string name;
};

// This process's threads named trtet-awake-*.
std::vector<Task> awake_threads() {
  std::vector<Task> found;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return found;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("trtet-awake-", 0) == 0) found.push_back({std::stoi(entry->d_name), name});
  }
  closedir(dir);
  return found;
}

// Whether this process's threads named trtet-awake-* are all gone within `limit`. A joined thread has
// run its last instruction, but the kernel may list it under /proc/self/task a moment longer, until it
// has released it; a thread still spinning stays there, and this returns false.
bool awake_threads_gone_within(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!awake_threads().empty()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

constexpr std::chrono::milliseconds kReleased{2000};

std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

TEST(KeepCoresAwake, ReadsCoreListsAndRanges) {
  std::vector<int> cores;
  std::string why;
  ASSERT_TRUE(parse_core_list("0", cores, why)) << why;
  EXPECT_EQ(cores, (std::vector<int>{0}));
  ASSERT_TRUE(parse_core_list("0-3", cores, why)) << why;
  EXPECT_EQ(cores, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_TRUE(parse_core_list("0,2,4-5,9", cores, why)) << why;
  EXPECT_EQ(cores, (std::vector<int>{0, 2, 4, 5, 9}));
  ASSERT_TRUE(parse_core_list("7-7", cores, why)) << why;
  EXPECT_EQ(cores, (std::vector<int>{7}));
}

TEST(KeepCoresAwake, RefusesListsThatAreNotAscendingCoresWithTheReason) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"", "an empty core list"},
      {"a", "'a' is not a core (0 to 1023)"},
      {"0,", "'' is not a core"},
      {"-1", "'-1' is not a core"},
      {"1024", "'1024' is not a core (0 to 1023)"},
      {"0-", "'0-' is not a core"},
      {"1-2-3", "'1-2-3' is not a core"},
      {"3-1", "the range '3-1' runs backwards"},
      {"1,1", "'1' repeats or goes back below core 1"},
      {"2,1", "'1' repeats or goes back below core 2"},
      {"0-4,3", "'3' repeats or goes back below core 4"},
      {" 1", "' 1' is not a core"},
  };
  for (const auto& c : cases) {
    std::vector<int> cores{42};
    std::string why;
    EXPECT_FALSE(parse_core_list(c.text, cores, why)) << c.text;
    EXPECT_NE(why.find(c.says), std::string::npos) << c.text << ": " << why;
  }
}

TEST(KeepCoresAwake, OneThreadPerCorePinnedThereAtSchedIdleUntilStopped) {
  const std::vector<int> allowed = allowed_cores();
  ASSERT_FALSE(allowed.empty());
  // The first and the last core this process may run on (one core where it has one).
  std::vector<int> cores{allowed.front()};
  if (allowed.size() > 1) cores.push_back(allowed.back());
  CoresKeptAwake awake;
  std::string why;
  ASSERT_TRUE(awake.start(cores, why)) << why;
  EXPECT_EQ(awake.threads(), cores.size());
  const std::vector<Task> tasks = awake_threads();
  ASSERT_EQ(tasks.size(), cores.size());
  for (const Task& task : tasks) {
    const int core = std::stoi(task.name.substr(std::string("trtet-awake-").size()));
    EXPECT_NE(std::find(cores.begin(), cores.end(), core), cores.end()) << task.name;
    EXPECT_EQ(sched_getscheduler(task.tid), SCHED_IDLE) << task.name;
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(task.tid, sizeof set, &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1) << task.name;
    EXPECT_TRUE(CPU_ISSET(core, &set)) << task.name;
  }
  // This thread (the caller) keeps its own policy and cores.
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  EXPECT_EQ(allowed_cores(), allowed);
  awake.stop();
  EXPECT_EQ(awake.threads(), 0u);
  EXPECT_TRUE(awake_threads_gone_within(kReleased));
  // Started again after a stop, and stopped by its destructor.
  {
    CoresKeptAwake again;
    ASSERT_TRUE(again.start({allowed.front()}, why)) << why;
    EXPECT_EQ(awake_threads().size(), 1u);
  }
  EXPECT_TRUE(awake_threads_gone_within(kReleased));
}

TEST(KeepCoresAwake, ACoreTheProcessMayNotRunOnStartsNoThread) {
  const std::vector<int> allowed = allowed_cores();
  ASSERT_FALSE(allowed.empty());
  // A core this machine does not have (above every one it has configured).
  const int outside = std::max(static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)), allowed.back() + 1);
  ASSERT_LT(outside, CPU_SETSIZE);
  CoresKeptAwake awake;
  std::string why;
  // The allowed core comes first: its thread, started and pinned, is gone when start refuses.
  EXPECT_FALSE(awake.start({allowed.front(), outside}, why));
  EXPECT_NE(why.find("core " + std::to_string(outside) + " is not one this process may run on"), std::string::npos)
      << why;
  EXPECT_EQ(awake.threads(), 0u);
  EXPECT_TRUE(awake_threads_gone_within(kReleased));
}

TEST(KeepCoresAwake, TheBackendSettingNamesItselfInItsRefusal) {
  CoresKeptAwake awake;
  std::string why;
  EXPECT_FALSE(keep_cores_awake("3-1", awake, why));
  EXPECT_EQ(why, "backend setting keep-cores-awake=3-1: the range '3-1' runs backwards");
  EXPECT_FALSE(keep_cores_awake("0\n1", awake, why));
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;  // the value is escaped, not printed raw
  EXPECT_EQ(awake.threads(), 0u);
  ASSERT_TRUE(keep_cores_awake(std::to_string(allowed_cores().front()), awake, why)) << why;
  EXPECT_EQ(awake.threads(), 1u);
}

}  // namespace
