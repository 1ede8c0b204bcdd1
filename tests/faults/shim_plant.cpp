// Planted bugs through the seam (Note [planted bugs] in shim_state.h).
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "faults/shim_state.h"

namespace trtet_faults_shim {
namespace {

struct PlantSpec {
  Plant action = Plant::kNone;
  std::string api;
  std::string object;
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
};

std::atomic<unsigned long> g_hits{0};

/// Appends `count` to TRTET_FAULTS_PLANT_LOG, if set.
void log_hits(unsigned long count) {
  const char* log = std::getenv("TRTET_FAULTS_PLANT_LOG");
  if (log == nullptr || *log == '\0' || count == 0) return;
  if (std::FILE* f = std::fopen(log, "a")) {
    std::fprintf(f, "%lu\n", count);
    std::fclose(f);
  }
}

/// At exit: the calls after the first, which planted() logged at once (a process that is killed,
/// or hangs until a timeout ends it, has still said that its plant was reached).
void report_hits() {
  const unsigned long hits = g_hits.load();
  if (hits > 1) log_hits(hits - 1);
}

/// The plant of `text` (empty: none, kNone); nullopt where `text` is malformed.
std::optional<PlantSpec> parse(const char* text) {
  PlantSpec made;
  if (text == nullptr || *text == '\0') return made;
  std::istringstream in(text);
  std::string action, start, size;
  if (!(in >> action >> made.api >> made.object >> start >> size)) return std::nullopt;
  if (action == "drop") {
    made.action = Plant::kDrop;
  } else if (action == "sync_first") {
    made.action = Plant::kSyncFirst;
  } else if (action == "destroy_fresh") {
    made.action = Plant::kDestroyFresh;
  } else {
    return std::nullopt;
  }
  char* end = nullptr;
  made.start = std::strtoull(start.c_str(), &end, 16);
  if (end == start.c_str() || *end != '\0') return std::nullopt;
  const std::uintptr_t bytes = std::strtoull(size.c_str(), &end, 16);
  if (end == size.c_str() || *end != '\0' || bytes == 0) return std::nullopt;
  made.end = made.start + bytes;
  return made;
}

std::mutex g_mutex;
PlantSpec* g_spec = nullptr;  // made on first use, from TRTET_FAULTS_PLANT; never destroyed

PlantSpec& spec_locked() {
  if (g_spec == nullptr) {
    const char* text = std::getenv("TRTET_FAULTS_PLANT");
    std::optional<PlantSpec> parsed = parse(text);
    if (!parsed) {
      std::fprintf(stderr, "libtrtet_faults: TRTET_FAULTS_PLANT=\"%s\" is not ACTION API OBJECT START SIZE "
                           "(ACTION: drop, sync_first or destroy_fresh; START, SIZE: hexadecimal)\n", text);
      std::abort();  // a plant asked for and not made would pass every test
    }
    g_spec = new PlantSpec(std::move(*parsed));
    std::atexit(report_hits);
  }
  return *g_spec;
}

}  // namespace

Plant planted(const char* api, const void* ret) {
  std::lock_guard<std::mutex> lock(g_mutex);  // held over dladdr too, which calls nothing of the shim
  const PlantSpec& p = spec_locked();
  if (p.action == Plant::kNone || p.api != api) return Plant::kNone;
  Dl_info info{};
  if (dladdr(ret, &info) == 0 || info.dli_fname == nullptr || std::strstr(info.dli_fname, p.object.c_str()) == nullptr) {
    return Plant::kNone;
  }
  const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(ret) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  if (offset < p.start || offset >= p.end) return Plant::kNone;
  if (g_hits.fetch_add(1) == 0) log_hits(1);
  return p.action;
}

}  // namespace trtet_faults_shim

extern "C" unsigned long trtet_faults_plant_hits(void) { return trtet_faults_shim::g_hits.load(); }

extern "C" int trtet_faults_set_plant(const char* spec) {
  using namespace trtet_faults_shim;  // NOLINT: the shim's own state
  std::lock_guard<std::mutex> lock(g_mutex);
  std::optional<PlantSpec> parsed = parse(spec);
  if (!parsed) return -1;
  spec_locked() = std::move(*parsed);
  g_hits.store(0);
  return 0;
}
