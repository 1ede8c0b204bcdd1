// Runs the trtet-run binary as a user does (through the shell), capturing its output and exit status.
#pragma once

#include <string>

#include "common/shell.h"

namespace trtet_run_test {

using trtet_test::Ran;

/// `trtet-run <args> 2>&1`; args are passed to the shell as written.
inline Ran run_trtet(const std::string& args) {
  return trtet_test::run_shell(std::string("'") + TRTET_RUN_BINARY + "' " + args);
}

/// A generated program (tests/tools/CMakeLists.txt).
inline std::string run_program(const std::string& name) {
  return std::string(TRTET_RUN_PROGRAM_DIR) + "/" + name + ".pte";
}

}  // namespace trtet_run_test
