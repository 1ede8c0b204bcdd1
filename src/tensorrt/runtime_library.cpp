#include "tensorrt/runtime_library.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

std::atomic<int> g_open_libraries{0};

/// dlerror()'s text, or `fallback` when it has none.
std::string loader_error(const char* fallback) {
  const char* error = dlerror();
  return error != nullptr ? error : fallback;
}

/// The path the loader opened for `handle` (dlinfo's link map), else `fallback`.
std::string loaded_path(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name != '\0') {
    return map->l_name;
  }
  return fallback;
}

std::string header_text(std::int32_t header_version) {
  return std::to_string(header_version / 10000) + "." + std::to_string(header_version / 100 % 100);
}

}  // namespace

RuntimeLibrary::~RuntimeLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  g_open_libraries.fetch_sub(1, std::memory_order_relaxed);
}

std::string RuntimeLibrary::version_string() const { return tensorrt::version_string(version_); }

std::string RuntimeLibrary::label() const {
  return "TensorRT " + version_string() + " (" + (kind_ == RuntimeKind::kPath ? std::string("runtime at ") + path_
                                                                              : std::string(to_string(kind_)) + " runtime") +
         ")";
}

void* RuntimeLibrary::create_runtime(void* logger, std::int32_t header_version) const noexcept {
  return create_(logger, header_version);
}

std::string version_string(std::int32_t version) {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

Result<std::shared_ptr<const RuntimeLibrary>> load_runtime_library(const RuntimeSearch& search,
                                                                   std::int32_t header_version) {
  const std::int32_t header_major = header_version / 10000;
  const std::int32_t header_minor = header_version / 100 % 100;
  std::string tried;      // every candidate with its reason
  std::string not_found;  // the candidates the loader did not find
  bool all_not_found = true;
  bool opened_any = false;
  for (const RuntimeCandidate& candidate : search.candidates) {
    const std::string name = candidate.file + " (" + to_string(candidate.kind) + ")";
    if (!tried.empty()) tried += "; ";
    tried += name + ": ";
    dlerror();  // clear
    void* handle = dlopen(candidate.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      // dlerror() starts with the file name, which `tried` already has.
      std::string error = loader_error("dlopen failed");
      const std::string prefix = candidate.file + ": ";
      if (error.compare(0, prefix.size(), prefix) == 0) error.erase(0, prefix.size());
      if (error.find("No such file or directory") != std::string::npos) {
        not_found += (not_found.empty() ? "" : ", ") + name;
        tried += "not found";
      } else {
        all_not_found = false;
        tried += error;
      }
      continue;
    }
    opened_any = true;
    all_not_found = false;
    std::shared_ptr<RuntimeLibrary> library(new RuntimeLibrary());
    g_open_libraries.fetch_add(1, std::memory_order_relaxed);
    library->handle_ = handle;  // closed by the destructor from here
    library->path_ = loaded_path(handle, candidate.file);
    library->kind_ = candidate.kind == RuntimeKind::kPath ? runtime_kind_of_file(library->path_) : candidate.kind;
    dlerror();
    library->create_ = reinterpret_cast<RuntimeLibrary::CreateRuntimeFn>(dlsym(handle, "createInferRuntime_INTERNAL"));
    const auto version = reinterpret_cast<RuntimeLibrary::VersionFn>(dlsym(handle, "getInferLibVersion"));
    if (library->create_ == nullptr || version == nullptr) {
      tried += library->path_ + " is no TensorRT runtime (it exports no " +
               (version == nullptr ? "getInferLibVersion" : "createInferRuntime_INTERNAL") + ")";
      continue;
    }
    library->version_ = version();
    const std::int32_t major = library->version_ / 10000;
    const std::int32_t minor = library->version_ / 100 % 100;
    if (major != header_major || minor < header_minor) {
      tried += library->path_ + " is TensorRT " + library->version_string() + ", which cannot serve TensorRT " +
               header_text(header_version) + " headers (it needs " + header_text(header_version) + " or a newer " +
               std::to_string(header_major) + ".x)";
      continue;
    }
    return std::shared_ptr<const RuntimeLibrary>(std::move(library));
  }
  // The common case, kept short (a host's log line may be short): nothing was found at all.
  const std::string what =
      !all_not_found                ? tried
      : search.candidates.size() > 1 ? "none of " + not_found + " was found"
                                     : not_found + " was not found";
  return make_error(opened_any ? ErrorCode::kIncompatible : ErrorCode::kNotSupported,
                    "no TensorRT runtime library %s for TensorRT %s headers: %s (search order \"%s\" from %s). "
                    "Install TensorRT %d (the full runtime, or the lean and dispatch runtimes: "
                    "scripts/install-tensorrt-runtime) where the dynamic loader finds it (LD_LIBRARY_PATH), or name "
                    "the library: the load-time option tensorrt_runtime or %s, e.g. \"lean\" or a path",
                    opened_any ? "served" : "could be loaded", header_text(header_version).c_str(), what.c_str(),
                    search.spec.c_str(), search.source.c_str(), static_cast<int>(header_major),
                    kRuntimeEnvironmentVariable);
}

Result<std::shared_ptr<const RuntimeLibrary>> acquire_runtime_library(const RuntimeSearch& search,
                                                                      std::int32_t header_version) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::weak_ptr<const RuntimeLibrary>>();  // never destroyed
  const std::string key = std::to_string(header_version) + "|" + describe(search.candidates);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache->find(key);
  if (found != cache->end()) {
    if (std::shared_ptr<const RuntimeLibrary> held = found->second.lock()) return held;
  }
  TRTET_ASSIGN_OR_RETURN(std::shared_ptr<const RuntimeLibrary> library, load_runtime_library(search, header_version));
  if (library->kind() == RuntimeKind::kPath) {
    log(LogLevel::kInfo, "loaded %s (search order from %s)", library->label().c_str(), search.source.c_str());
  } else {
    log(LogLevel::kInfo, "loaded %s from %s (search order \"%s\" from %s)", library->label().c_str(),
        library->path().c_str(), search.spec.c_str(), search.source.c_str());
  }
  (*cache)[key] = library;
  return library;
}

int open_runtime_library_count() noexcept { return g_open_libraries.load(std::memory_order_relaxed); }

}  // namespace torch_tensorrt::executorch_backend::tensorrt
