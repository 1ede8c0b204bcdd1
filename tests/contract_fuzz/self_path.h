// The running binary's path (for shrink trials and the reproduce line).
#pragma once

#include <unistd.h>

#include <string>

namespace trtet_test::fuzz {

inline std::string self_path() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace trtet_test::fuzz
