#include "staging/arena.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/driver.h"
#include "cuda/stream_facts.h"
#include "cuda/stream_id.h"

namespace torch_tensorrt::executorch_backend::staging {

// Note [staging arena]: the process's staging pools (Note [shared staging pools] in
// pool.cpp) map memory in units of their own, 32 MiB on the H200 with driver 580 even with a
// maxSize of 4 MiB (staging_reserve in docs/PERFORMANCE.md), so one model with 3 MiB of staging
// reserved 32 MiB of device memory and 32 MiB of page-locked host memory, and 16 of them 64 MiB for
// 48. An arena maps the memory itself, in the driver's granularity (2 MiB on the H200):
//  - One virtual address range per device and kind, reserved once (cuMemAddressReserve; the
//    device's memory size, at most 256 GiB, costs no memory), backed chunk by chunk
//    (cuMemCreate of the granularity's minimum, at least 2 MiB, each mapped on its own so it can
//    be unmapped on its own) as use grows. Pinned host memory is physical memory at a host
//    location (CU_MEM_LOCATION_TYPE_HOST, else HOST_NUMA at the device's nearest node), mapped for
//    the device and the host (cuMemSetAccess).
//  - Allocations take exact sizes (rounded to 512 bytes for device memory, 4 KiB for host
//    memory) from the mapped chunks, smallest fitting free block first; the range is contiguous,
//    so new chunks extend the free memory beside them and an allocation may span chunks.
//  - Frees are stream-ordered and never wait: a free records an event on its stream; the memory
//    is reused once that event completed (asked with cudaEventQuery, at the next allocation or
//    trim) or, for device memory, by a later allocation on the same stream (stream order covers
//    it; the stream told apart by its id, never its handle). Host memory is written by the host,
//    which stream order does not cover: it waits for its event. Otherwise the arena maps more.
//  - Freed memory stays mapped (and page-locked) for later loads; trim() unmaps every chunk that
//    lies wholly in completed free memory (the process's staging is trimmed on request only).
// The bookkeeping is ArenaBook's (arena_book.h), which the CPU suite tests; this file only maps,
// records and asks events. Where the device or the driver has no virtual memory management for a
// kind, the staging comes from the pools (StagingPool, pool.cpp).

namespace {

constexpr std::size_t kMinChunk = std::size_t{2} << 20;
constexpr std::size_t kMaxRange = std::size_t{256} << 30;

std::size_t round_up(std::size_t value, std::size_t unit) { return (value + unit - 1) / unit * unit; }

int attribute(const cuda::VmmApi& api, CUdevice device, CUdevice_attribute which) {
  int value = 0;
  if (api.cuDeviceGetAttribute(&value, which, device) != CUDA_SUCCESS) return 0;  // unknown to this driver
  return value;
}

}  // namespace

const char* location_name(int location_type) noexcept {
  switch (location_type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return "device";
    case CU_MEM_LOCATION_TYPE_HOST: return "host";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return "host NUMA node";
    default: return "unknown";
  }
}

Result<std::unique_ptr<StagingArena>> StagingArena::create(PoolKind kind, int device) {
  TRTET_ASSIGN_OR_RETURN(const cuda::VmmApi* api, cuda::vmm_driver());
  cuda::DeviceGuard guard(device);
  TRTET_RETURN_IF_ERROR(guard.status());
  // A runtime call binds the device's context before the driver is asked, as a free would, but
  // without a free's device-wide wait; its total is the device memory behind the range.
  std::size_t free_bytes = 0;
  std::size_t device_bytes = 0;
  TRTET_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &device_bytes));
  CUdevice dev = 0;
  TRTET_CU_CHECK(api->cuDeviceGet(&dev, device));
  TRTET_CHECK_OR_RETURN(attribute(*api, dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0,
                        kNotSupported, "device %d has no virtual memory management", device);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  ArenaFacts facts;
  std::size_t memory = 0;
  if (kind == PoolKind::kDevice) {
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    memory = device_bytes;
    facts.alignment = 512;
  } else {
    if (attribute(*api, dev, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0) {
      prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
      prop.location.id = 0;
    } else if (attribute(*api, dev, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0) {
      int node = 0;
      if (api->cuDeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) != CUDA_SUCCESS || node < 0) node = 0;
      prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
      prop.location.id = node;
    } else {
      return make_error(ErrorCode::kNotSupported,
                        "device %d supports neither host nor host NUMA locations for virtual memory management",
                        device);
    }
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGE_SIZE);
    memory = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : kMaxRange;
    facts.alignment = 4096;
  }
  facts.location_type = static_cast<int>(prop.location.type);
  facts.location_id = prop.location.id;
  std::size_t granularity = 0;
  const CUresult asked = api->cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  TRTET_CHECK_OR_RETURN(asked == CUDA_SUCCESS && granularity != 0, kNotSupported,
                        "no allocation granularity for %s memory of device %d: %s", location_name(facts.location_type),
                        device, cuda::driver_error_string(asked));
  facts.granularity = granularity;
  facts.chunk_bytes = round_up(std::max(granularity, kMinChunk), granularity);
  facts.range_bytes = round_up(std::min(std::max(memory, facts.chunk_bytes), kMaxRange), facts.chunk_bytes);
  CUdeviceptr base = 0;
  const CUresult reserved = api->cuMemAddressReserve(&base, facts.range_bytes, facts.chunk_bytes, 0, 0);
  TRTET_CHECK_OR_RETURN(reserved == CUDA_SUCCESS, kNotSupported, "cuMemAddressReserve of %zu bytes failed: %s",
                        facts.range_bytes, cuda::driver_error_string(reserved));
  return std::unique_ptr<StagingArena>(new StagingArena(kind, device, prop, facts, base));
}

StagingArena::StagingArena(PoolKind kind, int device, const CUmemAllocationProp& prop, ArenaFacts facts,
                           CUdeviceptr base)
    : kind_(kind),
      device_(device),
      prop_(prop),
      facts_(std::move(facts)),
      base_(base),
      book_(facts_.chunk_bytes, facts_.range_bytes / facts_.chunk_bytes, facts_.alignment,
            /*same_stream_reuse=*/kind == PoolKind::kDevice) {}

StagingArena::~StagingArena() {
  auto api = cuda::vmm_driver();
  if (!api.ok()) return;
  for (std::size_t c = 0; c < book_.chunks(); ++c) {
    if (book_.is_mapped(c)) (void)(*api)->cuMemUnmap(base_ + c * facts_.chunk_bytes, facts_.chunk_bytes);
  }
  (void)(*api)->cuMemAddressFree(base_, facts_.range_bytes);
}

Status StagingArena::set_access_locked(CUdeviceptr ptr, std::size_t bytes) {
  TRTET_ASSIGN_OR_RETURN(const cuda::VmmApi* api, cuda::vmm_driver());
  CUmemAccessDesc access[2]{};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = device_;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (kind_ == PoolKind::kDevice) {
    TRTET_CU_CHECK(api->cuMemSetAccess(ptr, bytes, access, 1));
    return Status::Ok();
  }
  access[1].location = prop_.location;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  // Variant 0: the device and the host, in one call. Variant 1: the device only, where the host
  // reads and writes the memory already (the driver says so).
  if (access_variant_ <= 0) {
    const CUresult both = api->cuMemSetAccess(ptr, bytes, access, 2);
    if (both == CUDA_SUCCESS) {
      if (access_variant_ < 0) facts_.host_access = std::string("granted to the device and the ") +
                                                    location_name(facts_.location_type) + " (cuMemSetAccess)";
      access_variant_ = 0;
      return Status::Ok();
    }
    if (access_variant_ == 0) return cuda::driver_status(both, "cuMemSetAccess(device and host)", __FILE__, __LINE__);
    facts_.host_access =
        std::string("device and host in one cuMemSetAccess refused (") + cuda::driver_error_string(both) + ")";
  }
  TRTET_CU_CHECK(api->cuMemSetAccess(ptr, bytes, access, 1));
  unsigned long long flags = 0;
  const CUresult got = api->cuMemGetAccess(&flags, &prop_.location, ptr);
  if (got != CUDA_SUCCESS || flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    facts_.host_access += "; the host has no read-write access";
    return make_error(ErrorCode::kNotSupported,
                      "pinned host staging of device %d: the host cannot be given access to memory at the %s (%s)",
                      device_, location_name(facts_.location_type),
                      got != CUDA_SUCCESS ? cuda::driver_error_string(got) : "cuMemGetAccess: not read-write");
  }
  if (access_variant_ < 0) facts_.host_access += "; granted to the device, the host has it by default";
  access_variant_ = 1;
  return Status::Ok();
}

Status StagingArena::map_locked(ArenaBook::Run run) {
  TRTET_ASSIGN_OR_RETURN(const cuda::VmmApi* api, cuda::vmm_driver());
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  const std::size_t chunk = facts_.chunk_bytes;
  std::size_t mapped = 0;
  auto undo = [&] {
    for (std::size_t c = 0; c < mapped; ++c) (void)api->cuMemUnmap(base_ + (run.first + c) * chunk, chunk);
  };
  for (; mapped < run.count; ++mapped) {
    CUmemGenericAllocationHandle handle = 0;
    const CUresult made = api->cuMemCreate(&handle, chunk, &prop_, 0);
    if (made != CUDA_SUCCESS) {
      undo();
      return cuda::driver_status(made, "cuMemCreate(staging chunk)", __FILE__, __LINE__);
    }
    const CUresult put = api->cuMemMap(base_ + (run.first + mapped) * chunk, chunk, 0, handle, 0);
    (void)api->cuMemRelease(handle);  // the mapping keeps the memory; cuMemUnmap gives it back
    if (put != CUDA_SUCCESS) {
      undo();
      return cuda::driver_status(put, "cuMemMap(staging chunk)", __FILE__, __LINE__);
    }
  }
  const Status access = set_access_locked(base_ + run.first * chunk, run.count * chunk);
  if (!access.ok()) undo();
  return access;
}

void StagingArena::settle_locked() {
  book_.settle([this](std::uint64_t token) {
    const Result<bool> done = events_[token].query();
    if (!done.ok()) (void)cudaGetLastError();
    return done.ok() && *done;  // an event that cannot be asked keeps its memory from reuse
  });
  for (const std::uint64_t token : book_.drain_released_tokens()) idle_events_.push_back(token);
}

Result<void*> StagingArena::allocate(std::size_t bytes, cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(bytes > 0, kInvalidArgument, "a staging allocation of 0 bytes");
  const cuda::StreamId id = cuda::id_of(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();
  const std::uint64_t stream_key = id.known() ? id.value() : 0;
  std::size_t offset = book_.take(bytes, stream_key);
  if (offset == ArenaBook::kNone) {
    const ArenaBook::Run run = book_.plan_growth(bytes);
    TRTET_CHECK_OR_RETURN(run.count != 0, kMemoryAllocationFailed,
                          "%zu bytes of %s staging do not fit in the arena's %zu-byte range (%llu bytes in use)",
                          bytes, kind_ == PoolKind::kDevice ? "device" : "pinned host", facts_.range_bytes,
                          static_cast<unsigned long long>(book_.used_bytes()));
    TRTET_RETURN_IF_ERROR(map_locked(run));
    book_.add_mapped(run);
    offset = book_.take(bytes, stream_key);
    TRTET_CHECK_OR_RETURN(offset != ArenaBook::kNone, kInternal, "staging arena: %zu bytes do not fit after growth",
                          bytes);
  }
  for (const std::uint64_t token : book_.drain_released_tokens()) idle_events_.push_back(token);
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(base_ + offset));
}

void StagingArena::free(void* data, cudaStream_t stream) noexcept {
  const std::size_t offset = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(data) - base_);
  const cuda::StreamId id = cuda::id_of(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  if (book_.live_size(offset) == 0) {
    log(LogLevel::kWarning, "staging arena: free of %p, which it did not allocate (ignored)", data);
    return;
  }
  const Result<bool> capturing = cuda::stream_is_capturing(stream);
  if (!capturing.ok() || *capturing) {
    // An event recorded into a capture marks nothing on the stream: the memory stays allocated.
    (void)cudaGetLastError();
    log(LogLevel::kWarning, "staging arena: %p freed on a stream that is capturing or cannot be asked; kept", data);
    return;
  }
  std::uint64_t token = 0;
  if (!idle_events_.empty()) {
    token = idle_events_.back();
    idle_events_.pop_back();
  } else {
    cuda::DeviceGuard guard(device_);  // the event belongs to the arena's device
    Result<cuda::Event> made = guard.status().ok() ? cuda::Event::create() : Result<cuda::Event>(guard.status());
    if (!made.ok()) {
      (void)cudaGetLastError();
      log(LogLevel::kWarning, "staging arena: no event for a free (%s); %p stays allocated",
          made.status().to_string().c_str(), data);
      return;
    }
    try {
      events_.push_back(std::move(made).value());
    } catch (...) {
      log(LogLevel::kWarning, "staging arena: no room to track a free; %p stays allocated", data);
      return;
    }
    token = events_.size() - 1;
  }
  const Status recorded = events_[token].record(stream);
  if (!recorded.ok()) {
    (void)cudaGetLastError();
    idle_events_.push_back(token);
    log(LogLevel::kWarning, "staging arena: %s; %p stays allocated", recorded.to_string().c_str(), data);
    return;
  }
  try {
    (void)book_.give_back(offset, id.known() ? id.value() : 0, token);
  } catch (...) {
    log(LogLevel::kWarning, "staging arena: no room to track a free; %p stays allocated", data);
  }
}

cuda::PoolUsage StagingArena::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  cuda::PoolUsage usage;
  usage.reserved = book_.mapped_bytes();
  usage.used = book_.used_bytes();
  usage.reserved_high = book_.mapped_high_bytes();
  usage.used_high = book_.used_high_bytes();
  return usage;
}

Status StagingArena::trim() {
  TRTET_ASSIGN_OR_RETURN(const cuda::VmmApi* api, cuda::vmm_driver());
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  Status first_error;
  const std::size_t chunk = facts_.chunk_bytes;
  for (const ArenaBook::Run run : book_.take_trimmable()) {
    for (std::size_t c = run.first; c < run.first + run.count; ++c) {
      const CUresult gone = api->cuMemUnmap(base_ + c * chunk, chunk);
      if (gone == CUDA_SUCCESS) continue;
      book_.add_mapped(ArenaBook::Run{c, 1});  // still mapped: back in the book
      if (first_error.ok()) first_error = cuda::driver_status(gone, "cuMemUnmap(staging chunk)", __FILE__, __LINE__);
    }
  }
  return first_error;
}

ArenaFacts StagingArena::facts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return facts_;
}

}  // namespace torch_tensorrt::executorch_backend::staging
