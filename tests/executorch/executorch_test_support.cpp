#include "executorch/executorch_test_support.h"

#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "blob/write.h"
#include "engines/test_engine_factory.h"

namespace trtet_test {
namespace {

std::mutex& log_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string& log_text() {
  static std::string text;
  return text;
}

void capture_log(et_timestamp_t, et_pal_log_level_t level, const char* filename, const char*, size_t line,
                 const char* message, size_t length) {
  std::string_view text(message, length);
  {
    std::lock_guard<std::mutex> lock(log_mutex());
    log_text().append(text).append("\n");
  }
  std::fprintf(stderr, "[et %c %s:%zu] %.*s\n", static_cast<char>(level), filename, line, static_cast<int>(length),
               message);
}

}  // namespace

void ensure_executorch_runtime() {
  static const bool ready = [] {
    etr::register_pal(etr::PalImpl::create(&capture_log, __FILE__));
    etr::runtime_init();
    return true;
  }();
  (void)ready;
}

std::string captured_log() {
  std::lock_guard<std::mutex> lock(log_mutex());
  return log_text();
}

std::string error_with_log(etr::Error error) {
  return std::string("ExecuTorch error ") + etr::to_string(error) + "; log: " + captured_log();
}

void clear_log() {
  std::lock_guard<std::mutex> lock(log_mutex());
  log_text().clear();
}

std::string program_path(const std::string& name) { return std::string(TRTET_TEST_PROGRAM_DIR) + "/" + name + ".pte"; }

bool have_test_programs() { return TRTET_HAVE_TEST_PROGRAMS; }

RecordingFactory::RecordingFactory()
    : scope_([state = state_, last = &last_engine_](const ex::EngineRequest& request) -> Result<ex::engine::EnginePtr> {
        SeenRequest seen;
        seen.spec.assign(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size);
        seen.device = request.device;
        seen.budget = request.weight_streaming_budget;
        seen.runtime_library = request.runtime_library;
        seen.allow_engine_host_code = request.allow_engine_host_code;
        seen.method_name = request.method_name != nullptr ? request.method_name : "";
        seen.io_bindings = request.metadata != nullptr ? request.metadata->io_bindings.size() : 0;
        {
          std::lock_guard<std::mutex> lock(state->mutex);
          state->requests.push_back(seen);
        }
        auto engine = make_test_engine(std::string_view(seen.spec), request.device);
        if (engine.ok()) last->store(engine.value().get());
        return engine;
      }) {}

std::vector<SeenRequest> RecordingFactory::requests() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->requests;
}

InitHarness::InitHarness(std::size_t arena_bytes) : arena_(arena_bytes) {
  ensure_executorch_runtime();
  backend_ = etr::get_backend_class("TensorRTBackend");
  allocator_ = std::make_unique<etr::MemoryAllocator>(static_cast<std::uint32_t>(arena_.size()), arena_.data());
}

InitHarness::~InitHarness() {
  if (handle_ != nullptr && backend_ != nullptr) backend_->destroy(handle_);
}

etr::Error InitHarness::init(const std::vector<std::uint8_t>& blob,
                             const std::vector<std::pair<std::string, std::string>>& specs,
                             std::vector<etr::BackendOption> options) {
  if (backend_ == nullptr) return etr::Error::NotFound;
  std::vector<etr::CompileSpec> compile_specs;
  for (const auto& [key, value] : specs) {
    compile_specs.push_back({key.c_str(), {const_cast<char*>(value.data()), value.size()}});
  }
  etr::FreeableBuffer processed(
      blob.data(), blob.size(), [](void* context, void*, size_t) { ++*static_cast<int*>(context); }, &frees_);
  etr::BackendInitContext context(allocator_.get(), nullptr, "forward", nullptr,
                                  etr::Span<const etr::BackendOption>(options.data(), options.size()));
  auto handle = backend_->init(context, &processed,
                               etr::ArrayRef<etr::CompileSpec>(compile_specs.data(), compile_specs.size()));
  freed_by_init_ = processed.data() == nullptr;
  if (!handle.ok()) return handle.error();
  handle_ = handle.get();
  return etr::Error::Ok;
}

etr::Error DirectMethod::load_program(const std::string& name) {
  auto file = ::executorch::extension::FileDataLoader::from(program_path(name).c_str());
  if (!file.ok()) return file.error();
  loader = std::make_unique<::executorch::extension::FileDataLoader>(std::move(file.get()));
  auto loaded = etr::Program::load(loader.get(), etr::Program::Verification::InternalConsistency);
  if (!loaded.ok()) return loaded.error();
  program = std::make_unique<etr::Program>(std::move(loaded.get()));
  return etr::Error::Ok;
}

etr::Result<etr::Method> DirectMethod::load_method(const etr::LoadBackendOptionsMap* options) {
  auto meta = program->method_meta("forward");
  if (!meta.ok()) return meta.error();
  planned.clear();
  spans.clear();
  for (std::size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    planned.emplace_back(static_cast<std::size_t>(meta->memory_planned_buffer_size(i).get()));
  }
  for (auto& buffer : planned) spans.emplace_back(buffer.data(), buffer.size());
  method_allocator =
      std::make_unique<etr::MemoryAllocator>(static_cast<std::uint32_t>(method_pool.size()), method_pool.data());
  planned_allocator =
      std::make_unique<etr::HierarchicalAllocator>(etr::Span<etr::Span<std::uint8_t>>(spans.data(), spans.size()));
  memory = std::make_unique<etr::MemoryManager>(method_allocator.get(), planned_allocator.get());
  return program->load_method("forward", memory.get(), nullptr, nullptr, options);
}

std::vector<std::uint8_t> blob_with_io(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                       const std::string& spec) {
  ex::blob::Metadata metadata;
  for (const auto* names : {&inputs, &outputs}) {
    for (const std::string& name : *names) {
      ex::blob::IoBinding io;
      io.name = name;
      io.is_input = names == &inputs;
      metadata.io_bindings.push_back(io);
    }
  }
  return ex::blob::write_blob(metadata, spec.data(), spec.size());
}

std::vector<std::uint8_t> elementwise_blob(const std::string& spec) { return blob_with_io({"x", "y"}, {"out"}, spec); }

namespace {
etr::BackendOption keyed(const char* key) {
  etr::BackendOption option;
  std::strncpy(option.key, key, sizeof(option.key) - 1);
  return option;
}
}  // namespace

etr::BackendOption int_option(const char* key, int value) {
  etr::BackendOption option = keyed(key);
  option.value = value;
  return option;
}

etr::BackendOption string_option(const char* key, const char* value) {
  etr::BackendOption option = keyed(key);
  std::array<char, etr::kMaxOptionValueLength> text{};
  std::strncpy(text.data(), value, text.size() - 1);
  option.value = text;
  return option;
}

etr::BackendOption bool_option(const char* key, bool value) {
  etr::BackendOption option = keyed(key);
  option.value = value;
  return option;
}

}  // namespace trtet_test
