// Runs the trtet-run binary as a user does (through the shell), capturing its output and exit status.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace trtet_run_test {

struct Ran {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// `trtet-run <args> 2>&1`; args are passed to the shell as written.
inline Ran run_trtet(const std::string& args) {
  Ran ran;
  const std::string command = std::string("'") + TRTET_RUN_BINARY + "' " + args + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return ran;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) ran.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

/// A generated program (tests/tools/CMakeLists.txt).
inline std::string run_program(const std::string& name) {
  return std::string(TRTET_RUN_PROGRAM_DIR) + "/" + name + ".pte";
}

}  // namespace trtet_run_test
