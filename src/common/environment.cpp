#include "common/environment.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend {

const char* read_environment(const char* name) noexcept {
  if (name == nullptr) return nullptr;
  if (const char* value = std::getenv(name)) return value;
  const std::size_t prefix = std::strlen(kEnvironmentPrefix);
  if (std::strncmp(name, kEnvironmentPrefix, prefix) != 0) return nullptr;
  try {
    const std::string old_name = std::string(kDeprecatedEnvironmentPrefix) + (name + prefix);
    const char* value = std::getenv(old_name.c_str());
    if (value == nullptr) return nullptr;
    static std::mutex mutex;
    static std::set<std::string>* warned = new std::set<std::string>();  // never freed: read at exit too
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      first = warned->insert(old_name).second;
    }
    if (first) {
      log(LogLevel::kWarning, "the environment variable %s is deprecated; it is read as %s (docs/OPTIONS.md)",
          old_name.c_str(), name);
    }
    return value;
  } catch (...) {
    return nullptr;  // no memory for the name: the old spelling is not read
  }
}

}  // namespace torch_tensorrt::executorch_backend
