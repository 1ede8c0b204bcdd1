// libFuzzer target (docs/SECURITY.md): untrusted programs through the ExecuTorch backend on the
// CPU, with the project's test engines as the engine factory (the engine bytes of a test program
// are a test-engine spec: tests/engines; "fake" engines build without a GPU, the others answer
// NoDevice and the method loads with execute reporting it). Two ways in, chosen by the first byte:
//   < 0x80: a whole .pte through ExecuTorch's Module (internal-consistency verification, then every
//           method loaded): one of the programs in tests/fuzz/pte/programs (first byte modulo their
//           count) with its delegate's processed blob replaced by the rest of the input (up to the
//           blob's room in the program; the flatbuffer stays valid). The blob reaches the backend
//           as ExecuTorch hands it over: header, metadata, engine spec, tensor shapes, aliases,
//           beside the program's compile specs;
//   >= 0x80: the input is split into compile specs, load-time options and a processed blob of any
//           size, handed to TensorRTBackend::init() as ExecuTorch's Method would.
// Mutating the flatbuffer itself is left out: ExecuTorch 1.5.1 dereferences a delegate's missing
// optional fields in BackendDelegate::Init (a null read in libexecutorch.so on a program that passed
// its internal-consistency verification), which would stop every run before the backend.
// Beyond "no crash, no leak, no UB": no line the backend logs carries a raw control character.
// Methods whose memory-planned buffers exceed 64 MiB are not loaded (Module would allocate them: a
// cautious application bounds that itself).
#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace etr = ::executorch::runtime;

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

// ExecuTorch's log, checked and dropped (printing every rejection would slow the fuzzer tenfold).
void check_log(et_timestamp_t, et_pal_log_level_t, const char*, const char*, size_t, const char* message,
               size_t length) {
  for (size_t i = 0; i < length; ++i) check(message[i] != '\x1b' && message[i] != '\x07');
}

constexpr std::size_t kMaxPlannedBytes = std::size_t{64} << 20;

/// A program to carry fuzzed blobs: its bytes, and where its delegate's processed blob lies (the
/// flatbuffer vector's u32 length at `blob_at` - 4).
struct Template {
  std::vector<std::uint8_t> bytes;
  std::size_t blob_at = 0;
  std::size_t room = 0;
};

std::vector<Template>& templates() {
  static std::vector<Template> all;
  return all;
}

void load_templates(const char* dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".pte") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    Template t;
    t.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    const char magic[] = {'T', 'R', '0'};
    const auto at = std::search(t.bytes.begin(), t.bytes.end(), magic, magic + 3);
    check(at != t.bytes.end() && at - t.bytes.begin() >= 4);
    t.blob_at = static_cast<std::size_t>(at - t.bytes.begin());
    std::uint32_t room = 0;
    std::memcpy(&room, t.bytes.data() + t.blob_at - 4, 4);
    check(t.blob_at + room <= t.bytes.size());
    t.room = room;
    templates().push_back(std::move(t));
  }
  check(!templates().empty());
}

void fuzz_module(const std::uint8_t* data, std::size_t size) {
  const Template& base = templates()[size > 0 ? data[0] % templates().size() : 0];
  const std::size_t blob_size = std::min(size > 0 ? size - 1 : 0, base.room);
  std::vector<std::uint8_t> program = base.bytes;
  std::fill(program.begin() + static_cast<std::ptrdiff_t>(base.blob_at),
            program.begin() + static_cast<std::ptrdiff_t>(base.blob_at + base.room), 0);
  if (blob_size > 0) std::memcpy(program.data() + base.blob_at, data + 1, blob_size);
  const auto length = static_cast<std::uint32_t>(blob_size);
  std::memcpy(program.data() + base.blob_at - 4, &length, 4);

  ::executorch::extension::Module module(
      std::make_unique<::executorch::extension::BufferDataLoader>(program.data(), program.size()));
  if (module.load(etr::Program::Verification::InternalConsistency) != etr::Error::Ok) return;
  auto names = module.method_names();
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    auto meta = module.method_meta(name);
    if (!meta.ok()) continue;
    std::size_t planned = 0;
    bool too_large = false;
    for (std::size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      auto bytes = meta->memory_planned_buffer_size(i);
      if (!bytes.ok() || *bytes < 0 || static_cast<std::uint64_t>(*bytes) > kMaxPlannedBytes - planned) {
        too_large = true;
        break;
      }
      planned += static_cast<std::size_t>(*bytes);
    }
    if (too_large) continue;
    (void)module.load_method(name);
  }
}

/// Reads the direct-init input: little pieces off the front, the rest is the blob.
struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::uint8_t byte() {
    if (size == 0) return 0;
    --size;
    return *data++;
  }
  std::string text(std::size_t most) {
    const std::size_t n = std::min<std::size_t>(byte(), std::min(most, size));
    std::string out(reinterpret_cast<const char*>(data), n);
    data += n;
    size -= n;
    return out;
  }
};

// The keys the backend reads, and one it does not.
const char* const kKeys[] = {"weight_streaming_budget", "use_cuda_graphs",        "staging_budget_mb",
                             "cuda_graph_cache_size",   "tensorrt_runtime",       "allow_engine_host_code",
                             "max_blob_metadata_bytes", "max_program_staging_budget_mb", "unknown_key"};
constexpr std::size_t kKeyCount = sizeof(kKeys) / sizeof(kKeys[0]);

void fuzz_init(const std::uint8_t* data, std::size_t size) {
  static etr::BackendInterface* backend = etr::get_backend_class("TensorRTBackend");
  check(backend != nullptr);
  Reader in{data, size};
  std::vector<std::string> values;
  std::vector<const char*> spec_keys;
  const int spec_count = in.byte() % 4;
  for (int i = 0; i < spec_count; ++i) {
    spec_keys.push_back(kKeys[in.byte() % kKeyCount]);
    values.push_back(in.text(32));
  }
  std::vector<etr::CompileSpec> specs;
  for (std::size_t i = 0; i < spec_keys.size(); ++i) {
    specs.push_back({spec_keys[i], {const_cast<char*>(values[i].data()), values[i].size()}});
  }
  std::vector<etr::BackendOption> options;
  const int option_count = in.byte() % 4;
  for (int i = 0; i < option_count; ++i) {
    etr::BackendOption option{};
    std::strncpy(option.key, kKeys[in.byte() % kKeyCount], sizeof(option.key) - 1);
    const std::uint8_t kind = in.byte() % 3;
    if (kind == 0) {
      option.value = (in.byte() & 1) != 0;
    } else if (kind == 1) {
      int number = 0;
      for (int b = 0; b < 4; ++b) number = static_cast<int>(static_cast<unsigned>(number) << 8 | in.byte());
      option.value = number;
    } else {
      std::array<char, etr::kMaxOptionValueLength> text{};
      const std::string given = in.text(text.size() - 1);
      std::memcpy(text.data(), given.data(), given.size());
      option.value = text;
    }
    options.push_back(option);
  }
  // The blob: copied, so an over-read past it is ASan's to see.
  std::vector<std::uint8_t> blob(in.data, in.data + in.size);
  std::vector<std::uint8_t> pool(1 << 20);
  etr::MemoryAllocator allocator(static_cast<std::uint32_t>(pool.size()), pool.data());
  etr::FreeableBuffer processed(blob.data(), blob.size(), nullptr);
  etr::BackendInitContext context(&allocator, nullptr, "forward", nullptr,
                                  etr::Span<const etr::BackendOption>(options.data(), options.size()));
  auto handle = backend->init(context, &processed, etr::ArrayRef<etr::CompileSpec>(specs.data(), specs.size()));
  if (handle.ok()) backend->destroy(handle.get());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* programs = std::getenv("TRTET_PTE_FUZZ_PROGRAMS");
  load_templates(programs != nullptr ? programs : TRTET_PTE_FUZZ_PROGRAMS);
  etr::runtime_init();
  etr::register_pal(etr::PalImpl::create(&check_log, __FILE__));
  torch_tensorrt::executorch_backend::set_engine_factory(
      [](const torch_tensorrt::executorch_backend::EngineRequest& request)
          -> torch_tensorrt::executorch_backend::Result<torch_tensorrt::executorch_backend::engine::EnginePtr> {
        const std::string_view text(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size);
        TRTET_ASSIGN_OR_RETURN(const trtet_test::TestEngineSpec spec, trtet_test::parse_test_engine_spec(text));
        return trtet_test::make_test_engine(spec, request.device);
      });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 0 && data[0] >= 0x80) {
    fuzz_init(data + 1, size - 1);
  } else {
    fuzz_module(data, size);
  }
  return 0;
}
