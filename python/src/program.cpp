// Program: a .pte loaded with ExecuTorch's Module, its methods called with numpy, DLPack and
// __cuda_array_interface__ arrays without a copy (docs/PYTHON.md, "Arrays").
#include "program.h"
#include "program_shapes.h"

#include "common/escape.h"

#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/runtime/backend/backend_options_map.h>
#if TRTET_PY_HAVE_ETDUMP
#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace trtet_py {

std::string io_name(const IoInfo& io, const char* kind, std::size_t i) {
  return std::string(kind) + " " + std::to_string(i) + (io.name.empty() ? "" : " (" + io.name + ")");
}

Program::Program(const std::string& path, nb::dict options, const std::string& etdump_path, bool load_methods)
    : path_(path), etdump_path_(etdump_path) {
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) raise(et::ErrorCode::kNotFound, "cannot open program '" + path + "'");
  }
  std::unique_ptr<etr::EventTracer> tracer;
  if (!etdump_path.empty()) {
#if TRTET_PY_HAVE_ETDUMP
    tracer = std::make_unique<::executorch::etdump::ETDumpGen>();
#else
    raise(et::ErrorCode::kNotSupported, "etdump: this build has no ExecuTorch ETDump library (libexecutorch_etdump.so)");
#endif
  }
  loaded_ = std::make_shared<Loaded>();
  loaded_->tracer = tracer.get();
  loaded_->module = std::make_unique<Module>(path, Module::LoadMode::File, std::move(tracer));

  // Load-time options for "TensorRTBackend" (types checked by the Python side).
  std::vector<etr::BackendOption> opts;
  for (auto [key, value] : options) {
    const std::string k = nb::cast<std::string>(key);
    if (k.empty() || k.size() >= etr::kMaxOptionKeyLength)
      raise(et::ErrorCode::kInvalidArgument, "load option key '" + k + "' must be 1 to " +
                                                 std::to_string(etr::kMaxOptionKeyLength - 1) + " characters");
    etr::BackendOption o;
    std::memcpy(o.key, k.data(), k.size());
    if (nb::isinstance<nb::bool_>(value)) {
      o.value = nb::cast<bool>(value);
    } else if (nb::isinstance<nb::int_>(value)) {
      long long v = 0;
      if (!nb::try_cast<long long>(value, v) || v < INT32_MIN || v > INT32_MAX)
        raise(et::ErrorCode::kInvalidArgument, "load option " + k + ": " + nb::cast<std::string>(nb::str(value)) +
                                                   " does not fit ExecuTorch's int option; pass it as a string of digits");
      o.value = static_cast<int>(v);
    } else if (nb::isinstance<nb::str>(value)) {
      const std::string s = nb::cast<std::string>(value);
      if (s.size() >= etr::kMaxOptionValueLength)
        raise(et::ErrorCode::kInvalidArgument, "load option " + k + ": a string of " + std::to_string(s.size()) +
                                                   " characters; ExecuTorch takes at most " +
                                                   std::to_string(etr::kMaxOptionValueLength - 1));
      std::array<char, etr::kMaxOptionValueLength> a{};
      std::memcpy(a.data(), s.data(), s.size());
      o.value = a;
    } else {
      raise(et::ErrorCode::kInvalidArgument, "load option " + k + ": a bool, int or str, not " +
                                                 nb::cast<std::string>(nb::str(value.type())));
    }
    opts.push_back(o);
  }
  etr::LoadBackendOptionsMap map;
  if (!opts.empty()) {
    const etr::Error e = map.set_options(et::TensorRTBackend::kBackendId, etr::Span<etr::BackendOption>(opts.data(), opts.size()));
    if (e != etr::Error::Ok) raise_executorch(e, "setting the load options");
  }
  nb::gil_scoped_release release;
  clear_backend_message();
  // A program is untrusted: its flatbuffer is verified before anything of it is read (ExecuTorch's
  // default, Minimal, checks the header only, and a damaged table crashes the reads that follow).
  constexpr auto verification = ::executorch::runtime::Program::Verification::InternalConsistency;
  const etr::Error loaded = opts.empty() ? loaded_->module->load(verification) : loaded_->module->load(map, verification);
  if (loaded != etr::Error::Ok) {
    nb::gil_scoped_acquire gil;
    raise_executorch(loaded, "loading program '" + path + "'");
  }
  auto names = loaded_->module->method_names();
  if (!names.ok()) {
    nb::gil_scoped_acquire gil;
    raise_executorch(names.error(), "reading the methods of '" + path + "'");
  }
  for (const std::string& name : *names) {
    if (!et::is_valid_utf8(name)) {  // Python names a method by a str, which holds Unicode only
      nb::gil_scoped_acquire gil;
      raise(et::ErrorCode::kInvalidProgram, "program '" + path + "': method name '" + et::escape_for_message(name, 256) +
                                                "' is not valid UTF-8");
    }
    method_names_.push_back(name);
    if (load_methods) {
      nb::gil_scoped_acquire gil;
      load_method(name);
    }
  }
}

Program::~Program() {
  try {
    close_impl();
  } catch (...) {
  }
}

std::shared_ptr<MethodInfo> Program::load_method(const std::string& name) {
  auto found = methods_.find(name);
  if (found != methods_.end()) return found->second;
  Module& module = live();
  const bool known = std::find(method_names_.begin(), method_names_.end(), name) != method_names_.end();
  // ExecuTorch 1.5.1 reads a delegate's id, processed data and compile specs (and each spec's key and
  // value) without checking that the program has them, and a program without one crashes the
  // process in the method's load: the program's own flatbuffer is walked first, every read bounds-
  // checked (triton/src/program_shapes.h, Note [a delegate's fields]).
  if (known) {
    std::vector<trtet_triton::Dynamism> inputs, outputs;
    std::string why;
    if (!trtet_triton::method_dynamism(path_, name, inputs, outputs, why)) {
      raise(et::ErrorCode::kInvalidProgram, "loading method '" + name + "' of '" + path_ + "': " + why);
    }
  }
  etr::Error e;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    clear_backend_message();
    e = module.load_method(name, nullptr, loaded_->tracer, nullptr);
  }
  if (e != etr::Error::Ok) {
    if (!known) raise(et::ErrorCode::kNotFound, "the program has no method '" + name + "'");
    raise_executorch(e, "loading method '" + name + "' of '" + path_ + "'");
  }
  auto meta = module.method_meta(name);
  if (!meta.ok()) raise_executorch(meta.error(), "reading the metadata of method '" + name + "'");
  auto info = std::make_shared<MethodInfo>();
  info->name = name;
  // The Method itself: a call sets its inputs and outputs directly (Module's by-name lookups are
  // the same calls with a map lookup each). The Module keeps it for as long as the program lives.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  auto method = module.method(name);
  if (!method.ok()) raise_executorch(method.error(), "loading method '" + name + "'");
  info->method = *method;
  auto fill = [&](IoInfo& io, const etr::TensorInfo& t, const etr::EValue& value) {
    io.type = t.scalar_type();
    io.sizes.assign(t.sizes().begin(), t.sizes().end());
    io.planned = t.is_memory_planned();
    io.name = std::string(t.name());
    io.dynamic = value.isTensor() &&
                 value.toTensor().shape_dynamism() != ::executorch::aten::TensorShapeDynamism::STATIC;
    io.bound_numel = 1;
    for (SizesType s : io.sizes) io.bound_numel *= s;
    io.bound_bytes = static_cast<std::size_t>(io.bound_numel) * element_size(io.type);
  };
  for (std::size_t i = 0; i < meta->num_inputs(); ++i) {
    IoInfo io;
    auto tag = meta->input_tag(i);
    io.tensor = tag.ok() && *tag == etr::Tag::Tensor;
    if (io.tensor) {
      auto t = meta->input_tensor_meta(i);
      if (!t.ok()) raise_executorch(t.error(), "reading input " + std::to_string(i));
      fill(io, *t, info->method->get_input(i));
    }
    info->inputs.push_back(std::move(io));
  }
  for (std::size_t i = 0; i < meta->num_outputs(); ++i) {
    IoInfo io;
    auto tag = meta->output_tag(i);
    io.tensor = tag.ok() && *tag == etr::Tag::Tensor;
    if (io.tensor) {
      auto t = meta->output_tensor_meta(i);
      if (!t.ok()) raise_executorch(t.error(), "reading output " + std::to_string(i));
      fill(io, *t, info->method->get_output(i));
    }
    info->outputs.push_back(std::move(io));
  }
#pragma GCC diagnostic pop
  methods_.emplace(name, info);
  return info;
}

nb::list Program::io_specs(const std::string& name, bool inputs) {
  std::shared_ptr<MethodInfo> info = load_method(name);
  nb::list out;
  for (const IoInfo& io : inputs ? info->inputs : info->outputs) {
    nb::dict d;
    d["tensor"] = io.tensor;
    d["name"] = io.name;
    d["dtype"] = io.tensor ? std::string(dtype_name(io.type)) : std::string();
    nb::list shape;
    for (SizesType s : io.sizes) shape.append(s);
    d["shape"] = nb::tuple(shape);
    d["planned"] = io.planned;
    d["dynamic"] = io.dynamic;
    out.append(d);
  }
  return out;
}

std::size_t Program::flush_profiling() {
  Loaded& l = live_loaded();
  if (l.tracer == nullptr) raise(et::ErrorCode::kInvalidState, "this program was loaded without etdump=");
  if (etdump_written_) raise(et::ErrorCode::kInvalidState, "the ETDump was already written");
  std::lock_guard<std::mutex> lock(mu_);
  auto pending = et::flush_profiling(l.tracer);
  if (!pending.ok()) raise(pending.error());
  return *pending;
}

std::size_t Program::write_etdump() {
#if TRTET_PY_HAVE_ETDUMP
  const std::size_t pending = flush_profiling();
  std::lock_guard<std::mutex> lock(mu_);
  auto* gen = static_cast<::executorch::etdump::ETDumpGen*>(loaded_->tracer);
  const ::executorch::etdump::ETDumpResult dump = gen->get_etdump_data();
  etdump_written_ = true;
  if (dump.buf == nullptr || dump.size == 0) raise(et::ErrorCode::kInternal, "ETDumpGen produced no data");
  std::ofstream f(etdump_path_, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(dump.buf), static_cast<std::streamsize>(dump.size));
  std::free(dump.buf);
  if (!f) raise(et::ErrorCode::kInternal, "cannot write the ETDump to '" + etdump_path_ + "'");
  return pending;
#else
  raise(et::ErrorCode::kNotSupported, "this build has no ETDump library");
#endif
}

void Program::close_impl() {
  if (!loaded_) return;
  if (loaded_->tracer != nullptr && !etdump_written_ && !etdump_path_.empty()) {
    try {
      write_etdump();
    } catch (...) {
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.reset();  // the module goes when the last device output view of it does
  methods_.clear();
  last_args_.clear();
}

Loaded& Program::live_loaded() {
  if (!loaded_) raise(et::ErrorCode::kInvalidState, "program '" + path_ + "' was closed");
  if (etdump_written_) raise(et::ErrorCode::kInvalidState, "program '" + path_ + "': its ETDump was written; "
                                                           "the tracer takes no more calls (load it again)");
  return *loaded_;
}

}  // namespace trtet_py
