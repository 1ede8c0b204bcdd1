#include "contract_fuzz/trial.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

extern char** environ;

namespace trtet_test::fuzz {

std::optional<Category> run_trial(const std::string& self, const FuzzConfig& config,
                                  const std::vector<std::size_t>& keep, double timeout_s) {
  std::vector<std::string> words = {self,
                                    "--trial",
                                    "--leg",
                                    to_string(config.leg),
                                    "--seed",
                                    std::to_string(config.seed),
                                    "--length",
                                    std::to_string(config.length),
                                    "--max-bytes",
                                    std::to_string(config.max_bytes),
                                    "--concurrent-max-bytes",
                                    std::to_string(config.concurrent_max_bytes),
                                    "--max-spin-us",
                                    std::to_string(config.max_spin_us),
                                    "--steps",
                                    to_string(keep)};
  if (!config.green) words.push_back("--no-green");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Category::kCrashOrHang;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFSIGNALED(status)) return Category::kCrashOrHang;
  if (!WIFEXITED(status)) return std::nullopt;
  const int code = WEXITSTATUS(status);
  if (code > kTrialExitBase && code <= kTrialExitBase + static_cast<int>(Category::kPromise)) {
    return static_cast<Category>(code - kTrialExitBase);
  }
  return std::nullopt;
}

}  // namespace trtet_test::fuzz
