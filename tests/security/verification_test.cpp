// ExecuTorch's verification of an untrusted program (docs/SECURITY.md, "How ExecuTorch verifies the
// program"): a test program with four random bytes changed in its flatbuffer's first 4 KiB, 400
// times, loaded and its methods' metadata read, each in a child process so that a crash is counted
// as one. With Verification::InternalConsistency (what this project's loaders ask for) no load
// reads out of bounds (no SIGSEGV or SIGBUS); its one gap is an unknown scalar type on a dynamic
// tensor, on which MethodMeta aborts (SIGABRT, ExecuTorch's own check; the Triton backend reads the
// type first: Note [verifying a program] in triton/src/model.h). With ExecuTorch's default, Minimal,
// loads crash by the hundred (the counts are printed: the reason the loaders ask for more).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

namespace etr = ::executorch::runtime;

// 0: loaded and read; 1: refused.
int load_and_read(const std::vector<char>& bytes, etr::Program::Verification verification) {
  ::executorch::extension::BufferDataLoader loader(bytes.data(), bytes.size());
  auto program = etr::Program::load(&loader, verification);
  if (!program.ok()) return 1;
  for (std::size_t i = 0; i < program->num_methods(); ++i) {
    auto name = program->get_method_name(i);
    if (!name.ok()) continue;
    auto meta = program->method_meta(*name);
    if (!meta.ok()) continue;
    for (std::size_t k = 0; k < meta->num_inputs(); ++k) {
      auto tensor = meta->input_tensor_meta(k);
      if (tensor.ok()) (void)tensor->sizes().size();
    }
  }
  return 0;
}

struct Counts {
  int crashed = 0, aborted = 0, refused = 0, loaded = 0;  // crashed: any signal; aborted: SIGABRT among them
};

Counts damage(const std::string& path, etr::Program::Verification verification) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> original((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Counts counts;
  if (original.size() < 64) return counts;
  std::mt19937 rng(7);
  for (int i = 0; i < 400; ++i) {
    std::vector<char> bytes = original;
    for (int k = 0; k < 4; ++k) bytes[8 + rng() % (std::min<std::size_t>(bytes.size(), 4096) - 8)] = static_cast<char>(rng());
    const pid_t pid = fork();
    if (pid == 0) {
      // ExecuTorch's log of each refusal, out of the way (where this fails, it stays on the terminal).
      if (std::freopen("/dev/null", "w", stderr) == nullptr) {
      }
      _exit(load_and_read(bytes, verification));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      ++counts.crashed;
      if (WTERMSIG(status) == SIGABRT) ++counts.aborted;
    }
    else if (WEXITSTATUS(status) == 1) ++counts.refused;
    else ++counts.loaded;
  }
  return counts;
}

TEST(ProgramVerification, InternalConsistencyRefusesDamageThatCrashesTheDefault) {
  etr::runtime_init();
  for (const char* name : {"fake.pte", "elementwise_profiles.pte"}) {
    const std::string path = std::string(TRTET_SOURCE_DIR) + "/tests/fuzz/pte/programs/" + name;
    const Counts checked = damage(path, etr::Program::Verification::InternalConsistency);
    const Counts minimal = damage(path, etr::Program::Verification::Minimal);
    std::printf("%s, 400 damaged loads: InternalConsistency %d crashed (%d aborted), %d refused, %d loaded; Minimal "
                "%d crashed (%d aborted), %d refused, %d loaded\n",
                name, checked.crashed, checked.aborted, checked.refused, checked.loaded, minimal.crashed, minimal.aborted,
                minimal.refused, minimal.loaded);
    ASSERT_EQ(checked.crashed + checked.refused + checked.loaded, 400) << name << " could not be read";
    EXPECT_EQ(checked.crashed, checked.aborted) << name << ": a verified program was read out of bounds";
    EXPECT_GT(checked.refused, 300) << name;
    EXPECT_GT(minimal.crashed, 0) << name << ": the default no longer crashes on these; the docs say it does";
  }
}

}  // namespace
