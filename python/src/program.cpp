// Program: a .pte loaded with ExecuTorch's Module, its methods called with numpy, DLPack and
// __cuda_array_interface__ arrays without a copy (docs/PYTHON.md, "Arrays").
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor_ptr_maker.h>
#include <executorch/runtime/backend/backend_options_map.h>
#if TRTET_PY_HAVE_ETDUMP
#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common.h"

namespace trtet_py {

namespace {

using ::executorch::aten::ScalarType;
using ::executorch::aten::SizesType;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;
namespace dl = nb::dlpack;

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "uint8";
    case ScalarType::Char: return "int8";
    case ScalarType::Short: return "int16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Half: return "float16";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Bool: return "bool";
    case ScalarType::BFloat16: return "bfloat16";
    default: return "an unsupported dtype";
  }
}

bool dtype_of(dl::dtype d, ScalarType& out) {
  if (d.lanes != 1) return false;
  const auto code = static_cast<dl::dtype_code>(d.code);
  switch (code) {
    case dl::dtype_code::Float:
      if (d.bits == 16) { out = ScalarType::Half; return true; }
      if (d.bits == 32) { out = ScalarType::Float; return true; }
      if (d.bits == 64) { out = ScalarType::Double; return true; }
      return false;
    case dl::dtype_code::Bfloat:
      if (d.bits == 16) { out = ScalarType::BFloat16; return true; }
      return false;
    case dl::dtype_code::Int:
      if (d.bits == 8) { out = ScalarType::Char; return true; }
      if (d.bits == 16) { out = ScalarType::Short; return true; }
      if (d.bits == 32) { out = ScalarType::Int; return true; }
      if (d.bits == 64) { out = ScalarType::Long; return true; }
      return false;
    case dl::dtype_code::UInt:
      if (d.bits == 8) { out = ScalarType::Byte; return true; }
      return false;
    case dl::dtype_code::Bool:
      if (d.bits == 8) { out = ScalarType::Bool; return true; }
      return false;
    default: return false;
  }
}

dl::dtype dl_of(ScalarType t) {
  dl::dtype d{};
  d.lanes = 1;
  switch (t) {
    case ScalarType::Byte: d.code = (uint8_t)dl::dtype_code::UInt; d.bits = 8; break;
    case ScalarType::Char: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 8; break;
    case ScalarType::Short: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 16; break;
    case ScalarType::Int: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 32; break;
    case ScalarType::Long: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 64; break;
    case ScalarType::Half: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 16; break;
    case ScalarType::Float: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 32; break;
    case ScalarType::Double: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 64; break;
    case ScalarType::Bool: d.code = (uint8_t)dl::dtype_code::Bool; d.bits = 8; break;
    case ScalarType::BFloat16: d.code = (uint8_t)dl::dtype_code::Bfloat; d.bits = 16; break;
    default: d.bits = 0; break;
  }
  return d;
}


std::string shape_text(const std::vector<SizesType>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// One tensor argument as the call sees it: its data where it is, the array object kept alive.
struct ArrayArg {
  void* data = nullptr;
  ScalarType type = ScalarType::Float;
  std::vector<SizesType> sizes;
  bool cuda = false;  // device memory (kDLCUDA, or managed)
  int device = 0;
  nb::object keep;
};

/// Reads `obj` (a DLPack / buffer-protocol array through nb::ndarray, else __cuda_array_interface__)
/// without copying it; rejects what the delegate cannot take as it is (a non-contiguous array, a
/// device other than the CPU or CUDA, a dtype ExecuTorch has no name for).
ArrayArg array_arg(nb::handle obj, const std::string& what) {
  ArrayArg a;
  a.keep = nb::borrow(obj);
  std::vector<std::int64_t> shape, strides;  // strides in elements
  dl::dtype dtype{};
  int device_type = kDLCPU;
  nb::ndarray<> arr;
  if (nb::try_cast<nb::ndarray<>>(obj, arr, /*convert=*/false)) {
    a.data = arr.data();
    for (std::size_t i = 0; i < arr.ndim(); ++i) {
      shape.push_back(static_cast<std::int64_t>(arr.shape(i)));
      strides.push_back(arr.stride(i));
    }
    dtype = arr.dtype();
    device_type = arr.device_type();
    a.device = arr.device_id();
    a.keep = nb::cast(arr);  // holds the exporter's capsule: the memory stays valid
    a.keep = nb::borrow(obj);
  } else if (nb::hasattr(obj, "__cuda_array_interface__")) {
    nb::dict cai = nb::cast<nb::dict>(obj.attr("__cuda_array_interface__"));
    nb::tuple data = nb::cast<nb::tuple>(cai["data"]);
    a.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(data[0]));
    for (nb::handle d : nb::cast<nb::tuple>(cai["shape"])) shape.push_back(nb::cast<std::int64_t>(d));
    std::string typestr = nb::cast<std::string>(cai["typestr"]);
    if (typestr.size() < 3 || (typestr[0] != '<' && typestr[0] != '|'))
      raise(et::ErrorCode::kInvalidArgument, what + ": __cuda_array_interface__ typestr '" + typestr +
                                                 "' is not a little-endian type");
    const char kind = typestr[1];
    const int bytes = std::atoi(typestr.c_str() + 2);
    dtype.lanes = 1;
    dtype.bits = static_cast<uint8_t>(bytes * 8);
    dtype.code = static_cast<uint8_t>(kind == 'f' ? dl::dtype_code::Float : kind == 'i' ? dl::dtype_code::Int
                                      : kind == 'u' ? dl::dtype_code::UInt : kind == 'b' ? dl::dtype_code::Bool
                                      : dl::dtype_code::Complex);
    const std::size_t es = static_cast<std::size_t>(bytes > 0 ? bytes : 1);
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      for (nb::handle s : nb::cast<nb::tuple>(cai["strides"])) {
        const std::int64_t b = nb::cast<std::int64_t>(s);
        if (b % static_cast<std::int64_t>(es) != 0)
          raise(et::ErrorCode::kInvalidArgument, what + ": strides that are not whole elements");
        strides.push_back(b / static_cast<std::int64_t>(es));
      }
    }
    device_type = kDLCUDA;
    cudaPointerAttributes attr{};
    if (a.data != nullptr && cudaPointerGetAttributes(&attr, a.data) == cudaSuccess) {
      a.device = attr.device;
      if (attr.type == cudaMemoryTypeHost) device_type = kDLCUDAHost;
    } else {
      (void)cudaGetLastError();
    }
  } else {
    raise(et::ErrorCode::kInvalidArgument,
          what + ": " + nb::cast<std::string>(nb::str(obj.type())) +
              " is not an array (numpy, DLPack (__dlpack__) or __cuda_array_interface__)");
  }

  if (!dtype_of(dtype, a.type)) {
    raise(et::ErrorCode::kInvalidArgument, what + ": dtype (DLPack code " + std::to_string(dtype.code) + ", " +
                                               std::to_string(dtype.bits) + " bits) has no ExecuTorch scalar type");
  }
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) {
    a.cuda = true;
  } else if (device_type != kDLCPU && device_type != kDLCUDAHost) {
    raise(et::ErrorCode::kInvalidArgument, what + ": an array on DLPack device type " + std::to_string(device_type) +
                                               "; the program takes CPU or CUDA memory");
  }
  // C-contiguous, ignoring dimensions of one element (their strides mean nothing).
  if (!strides.empty()) {
    std::int64_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expected)
        raise(et::ErrorCode::kInvalidArgument,
              what + ": the array is not C-contiguous (dimension " + std::to_string(i) + " has stride " +
                  std::to_string(strides[i]) + " elements where " + std::to_string(expected) +
                  " is needed); pass a contiguous copy (e.g. .contiguous(), numpy.ascontiguousarray)");
      expected *= shape[i];
    }
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || shape[i] > std::numeric_limits<SizesType>::max())
      raise(et::ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(i) + " is " +
                                                 std::to_string(shape[i]) + ", beyond ExecuTorch's sizes");
    a.sizes.push_back(static_cast<SizesType>(shape[i]));
  }
  return a;
}

struct IoInfo {
  bool tensor = false;
  ScalarType type = ScalarType::Float;
  std::vector<SizesType> sizes;
  bool planned = false;
  std::string name;
};

struct MethodInfo {
  std::vector<IoInfo> inputs, outputs;
};

/// What the module needs to stay alive for: the Program, and every device output view of it.
struct Loaded {
  std::unique_ptr<Module> module;
  etr::EventTracer* tracer = nullptr;
};

std::string io_name(const IoInfo& io, const char* kind, std::size_t i) {
  return std::string(kind) + " " + std::to_string(i) + (io.name.empty() ? "" : " (" + io.name + ")");
}

class Program {
 public:
  Program(const std::string& path, nb::dict options, const std::string& etdump_path, bool load_methods)
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
    const etr::Error loaded = opts.empty() ? loaded_->module->load() : loaded_->module->load(map);
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
      method_names_.push_back(name);
      if (load_methods) {
        nb::gil_scoped_acquire gil;
        load_method(name);
      }
    }
  }

  ~Program() {
    try {
      close_impl();
    } catch (...) {
    }
  }

  const std::vector<std::string>& method_names() const { return method_names_; }
  const std::string& path() const { return path_; }
  bool closed() const { return loaded_ == nullptr; }

  MethodInfo& load_method(const std::string& name) {
    auto found = methods_.find(name);
    if (found != methods_.end()) return found->second;
    Module& module = live();
    etr::Error e;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      clear_backend_message();
      e = module.load_method(name, nullptr, loaded_->tracer, nullptr);
    }
    if (e != etr::Error::Ok) {
      bool known = false;
      for (const auto& n : method_names_) known = known || n == name;
      if (!known) raise(et::ErrorCode::kNotFound, "the program has no method '" + name + "'");
      raise_executorch(e, "loading method '" + name + "' of '" + path_ + "'");
    }
    auto meta = module.method_meta(name);
    if (!meta.ok()) raise_executorch(meta.error(), "reading the metadata of method '" + name + "'");
    MethodInfo info;
    for (std::size_t i = 0; i < meta->num_inputs(); ++i) {
      IoInfo io;
      auto tag = meta->input_tag(i);
      io.tensor = tag.ok() && *tag == etr::Tag::Tensor;
      if (io.tensor) {
        auto t = meta->input_tensor_meta(i);
        if (!t.ok()) raise_executorch(t.error(), "reading input " + std::to_string(i));
        io.type = t->scalar_type();
        io.sizes.assign(t->sizes().begin(), t->sizes().end());
        io.planned = t->is_memory_planned();
        io.name = std::string(t->name());
      }
      info.inputs.push_back(std::move(io));
    }
    for (std::size_t i = 0; i < meta->num_outputs(); ++i) {
      IoInfo io;
      auto tag = meta->output_tag(i);
      io.tensor = tag.ok() && *tag == etr::Tag::Tensor;
      if (io.tensor) {
        auto t = meta->output_tensor_meta(i);
        if (!t.ok()) raise_executorch(t.error(), "reading output " + std::to_string(i));
        io.type = t->scalar_type();
        io.sizes.assign(t->sizes().begin(), t->sizes().end());
        io.planned = t->is_memory_planned();
        io.name = std::string(t->name());
      }
      info.outputs.push_back(std::move(io));
    }
    return methods_.emplace(name, std::move(info)).first->second;
  }

  nb::list io_specs(const std::string& name, bool inputs) {
    MethodInfo& info = load_method(name);
    nb::list out;
    for (const IoInfo& io : inputs ? info.inputs : info.outputs) {
      nb::dict d;
      d["tensor"] = io.tensor;
      d["name"] = io.name;
      d["dtype"] = io.tensor ? std::string(dtype_name(io.type)) : std::string();
      nb::list shape;
      for (SizesType s : io.sizes) shape.append(s);
      d["shape"] = nb::tuple(shape);
      d["planned"] = io.planned;
      out.append(d);
    }
    return out;
  }

  /// A call's arguments, checked, as tensors over the arrays' own memory (no copy).
  struct Prepared {
    std::string name;
    std::vector<ArrayArg> in, out;
    std::vector<bool> given;
    std::vector<TensorPtr> tin, tout;
  };

  /// Checks the inputs (and preallocated outputs) against the method and makes their tensors.
  std::shared_ptr<Prepared> prepare(const std::string& name, nb::sequence inputs, nb::object outputs) {
    (void)live_loaded();  // closed, or its ETDump written: InvalidState
    MethodInfo& info = load_method(name);
    auto pr = std::make_shared<Prepared>();
    pr->name = name;
    const std::size_t n_in = nb::len(inputs);
    if (n_in != info.inputs.size())
      raise(et::ErrorCode::kInvalidArgument, "method '" + name + "' takes " + std::to_string(info.inputs.size()) +
                                                 " inputs; " + std::to_string(n_in) + " were given");
    pr->in.reserve(n_in);
    for (std::size_t i = 0; i < n_in; ++i) {
      const IoInfo& io = info.inputs[i];
      const std::string what = io_name(io, "input", i);
      if (!io.tensor) raise(et::ErrorCode::kNotSupported, what + " is not a tensor: not supported from Python");
      ArrayArg a = array_arg(inputs[i], what);
      check_against(a, io, what);
      if (io.planned && a.cuda)
        raise(et::ErrorCode::kInvalidArgument, what + " is planned in the program's host memory (ExecuTorch copies it "
                                                      "with memcpy): pass a host array");
      pr->in.push_back(std::move(a));
    }
    pr->given.assign(info.outputs.size(), false);
    if (!outputs.is_none()) {
      nb::sequence outs = nb::cast<nb::sequence>(outputs);
      const std::size_t n_out = nb::len(outs);
      if (n_out != info.outputs.size())
        raise(et::ErrorCode::kInvalidArgument, "method '" + name + "' has " + std::to_string(info.outputs.size()) +
                                                   " outputs; " + std::to_string(n_out) + " were given");
      for (std::size_t i = 0; i < n_out; ++i) {
        if (outs[i].is_none()) {
          pr->out.emplace_back();
          continue;
        }
        const IoInfo& io = info.outputs[i];
        const std::string what = io_name(io, "output", i);
        if (!io.tensor) raise(et::ErrorCode::kInvalidArgument, what + " is not a tensor: pass None for it");
        if (io.planned)
          raise(et::ErrorCode::kInvalidArgument, what + " is planned by the program: pass None for it");
        ArrayArg a = array_arg(outs[i], what);
        check_against(a, io, what);
        pr->given[i] = true;
        pr->out.push_back(std::move(a));
      }
    }
    for (std::size_t i = 0; i < info.outputs.size(); ++i) {
      if (info.outputs[i].tensor && !info.outputs[i].planned && !pr->given[i])
        raise(et::ErrorCode::kInvalidArgument, io_name(info.outputs[i], "output", i) +
                                                   " is not planned by the program: pass an array for it in outputs=");
    }
    for (const ArrayArg& a : pr->in) pr->tin.push_back(make(a));
    for (std::size_t i = 0; i < pr->out.size(); ++i) pr->tout.push_back(pr->given[i] ? make(pr->out[i]) : TensorPtr());
    return pr;
  }

  /// Runs a prepared call with the GIL released; outputs returned (given outputs as given; host
  /// outputs as numpy copies; device outputs the program planned as DLPack views of its memory).
  nb::list run(const Prepared& pr, bool keep_args) {
    const std::string& name = pr.name;
    std::vector<etr::EValue> results;
    std::vector<std::vector<std::uint8_t>> host_copies(pr.given.size());
    etr::Error failed = etr::Error::Ok;
    std::string failed_what;
    bool closed = false;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Module* module = loaded_ && !etdump_written_ ? loaded_->module.get() : nullptr;
      if (module == nullptr) {
        closed = true;
      } else {
        clear_backend_message();
        for (std::size_t i = 0; i < pr.tin.size() && failed == etr::Error::Ok; ++i) {
          failed = module->set_input(name, etr::EValue(*pr.tin[i]), i);
          if (failed != etr::Error::Ok) failed_what = "setting input " + std::to_string(i);
        }
        for (std::size_t i = 0; i < pr.tout.size() && failed == etr::Error::Ok; ++i) {
          if (!pr.tout[i]) continue;
          failed = module->set_output(name, etr::EValue(*pr.tout[i]), i);
          if (failed != etr::Error::Ok) failed_what = "setting output " + std::to_string(i);
        }
        if (failed == etr::Error::Ok) {
          auto r = module->execute(name);
          if (!r.ok()) {
            failed = r.error();
            failed_what = "executing method '" + name + "'";
          } else {
            results = std::move(*r);
          }
        }
        // Host outputs the program planned: copied out now, before another call reuses the memory.
        for (std::size_t i = 0; failed == etr::Error::Ok && i < results.size(); ++i) {
          if ((i < pr.given.size() && pr.given[i]) || !results[i].isTensor()) continue;
          const auto& t = results[i].toTensor();
          if (on_device(t)) continue;
          host_copies[i].resize(t.nbytes());
          if (t.nbytes() != 0) std::memcpy(host_copies[i].data(), t.const_data_ptr(), t.nbytes());
        }
      }
    }
    if (closed) (void)live_loaded();  // raises InvalidState with the reason
    if (failed != etr::Error::Ok) raise_executorch(failed, failed_what);

    nb::list out;
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (i < pr.given.size() && pr.given[i]) {
        out.append(pr.out[i].keep);
        continue;
      }
      const etr::EValue& v = results[i];
      if (v.isTensor()) {
        out.append(export_tensor(v.toTensor(), host_copies[i]));
      } else if (v.isInt()) {
        out.append(v.toInt());
      } else if (v.isDouble()) {
        out.append(v.toDouble());
      } else if (v.isBool()) {
        out.append(v.toBool());
      } else {
        out.append(nb::none());
      }
    }
    if (keep_args) {
      // The arrays of the last call stay referenced until the next one (their memory may still be
      // read by work queued on the caller's stream; keep your own references until it is done).
      last_args_.clear();
      for (const ArrayArg& a : pr.in) last_args_.push_back(a.keep);
      for (const ArrayArg& a : pr.out) if (a.keep.is_valid()) last_args_.push_back(a.keep);
    }
    return out;
  }

  nb::list call(const std::string& name, nb::sequence inputs, nb::object outputs) {
    std::shared_ptr<Prepared> pr = prepare(name, inputs, outputs);
    return run(*pr, true);
  }

  /// The benchmark's C++ reference: the last call's set_input/execute repeated `n` times without
  /// Python (the same tensors), returning the mean host microseconds per call.
  double time_cpp(const std::string& name, nb::sequence inputs, nb::object outputs, int n) {
    MethodInfo& info = load_method(name);
    (void)info;
    std::vector<TensorPtr> tin, tout;
    std::vector<ArrayArg> keep;
    for (std::size_t i = 0; i < nb::len(inputs); ++i) {
      keep.push_back(array_arg(inputs[i], "input"));
      tin.push_back(make(keep.back()));
    }
    if (!outputs.is_none()) {
      nb::sequence outs = nb::cast<nb::sequence>(outputs);
      for (std::size_t i = 0; i < nb::len(outs); ++i) {
        keep.push_back(array_arg(outs[i], "output"));
        tout.push_back(make(keep.back()));
      }
    }
    etr::Error failed = etr::Error::Ok;
    double us = 0;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Module& module = *loaded_->module;
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < n && failed == etr::Error::Ok; ++k) {
        for (std::size_t i = 0; i < tin.size() && failed == etr::Error::Ok; ++i)
          failed = module.set_input(name, etr::EValue(*tin[i]), i);
        for (std::size_t i = 0; i < tout.size() && failed == etr::Error::Ok; ++i)
          failed = module.set_output(name, etr::EValue(*tout[i]), i);
        if (failed == etr::Error::Ok) {
          auto r = module.execute(name);
          if (!r.ok()) failed = r.error();
        }
      }
      us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
    }
    if (failed != etr::Error::Ok) raise_executorch(failed, "the C++ timing loop");
    return us;
  }

  std::size_t flush_profiling() {
    Loaded& l = live_loaded();
    if (l.tracer == nullptr) raise(et::ErrorCode::kInvalidState, "this program was loaded without etdump=");
    if (etdump_written_) raise(et::ErrorCode::kInvalidState, "the ETDump was already written");
    std::lock_guard<std::mutex> lock(mu_);
    auto pending = et::flush_profiling(l.tracer);
    if (!pending.ok()) raise(pending.error());
    return *pending;
  }

  /// Flushes and writes the ETDump file; the tracer takes no more events after this (later calls
  /// are refused). Returns the calls whose GPU times were still unknown.
  std::size_t write_etdump() {
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

  void close() { close_impl(); }

  bool profiling() const { return loaded_ && loaded_->tracer != nullptr; }
  bool etdump_written() const { return etdump_written_; }

 private:
  void close_impl() {
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

  Module& live() { return *live_loaded().module; }
  Loaded& live_loaded() {
    if (!loaded_) raise(et::ErrorCode::kInvalidState, "program '" + path_ + "' was closed");
    if (etdump_written_) raise(et::ErrorCode::kInvalidState, "program '" + path_ + "': its ETDump was written; "
                                                             "the tracer takes no more calls (load it again)");
    return *loaded_;
  }

  static void check_against(const ArrayArg& a, const IoInfo& io, const std::string& what) {
    if (a.type != io.type)
      raise(et::ErrorCode::kInvalidArgument, what + ": " + dtype_name(a.type) + " where the method takes " +
                                                 dtype_name(io.type));
    if (a.sizes.size() != io.sizes.size())
      raise(et::ErrorCode::kInvalidArgument, what + ": shape " + shape_text(a.sizes) + " has " +
                                                 std::to_string(a.sizes.size()) + " dimensions; the method takes " +
                                                 std::to_string(io.sizes.size()) + " (" + shape_text(io.sizes) + ")");
    if (io.planned) {
      for (std::size_t d = 0; d < a.sizes.size(); ++d) {
        if (a.sizes[d] > io.sizes[d])
          raise(et::ErrorCode::kInvalidArgument, what + ": shape " + shape_text(a.sizes) +
                                                     " is larger than the program planned for (" +
                                                     shape_text(io.sizes) + ")");
      }
    }
  }

  static TensorPtr make(const ArrayArg& a) {
    auto device = a.cuda ? ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                                      static_cast<::executorch::runtime::etensor::DeviceIndex>(a.device))
                         : ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
    return ::executorch::extension::from_blob(a.data, a.sizes, a.type, device);
  }

  /// Whether an output lives in device memory: its tensor's device, or, for a tensor tagged CPU,
  /// what CUDA says of its pointer (never read device memory with memcpy).
  static bool on_device(const ::executorch::aten::Tensor& t) {
    if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU) return true;
    if (t.const_data_ptr() == nullptr) return false;
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return attr.type == cudaMemoryTypeDevice;
  }

  static int device_of(const ::executorch::aten::Tensor& t) {
    if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU)
      return t.unsafeGetTensorImpl()->device().index();
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return attr.device;
  }

  nb::object export_tensor(const ::executorch::aten::Tensor& t, std::vector<std::uint8_t>& host) {
    std::vector<std::size_t> shape(t.sizes().begin(), t.sizes().end());
    const dl::dtype dtype = dl_of(t.scalar_type());
    if (!on_device(t)) {
      auto* owned = new std::vector<std::uint8_t>(std::move(host));
      nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
      return nb::cast(nb::ndarray<nb::numpy>(owned->data(), shape.size(), shape.data(), owner, nullptr, dtype,
                                             nb::device::cpu::value, 0));
    }
    // Device memory the program planned: a view that keeps the module alive; valid until the next
    // call of this method writes it again.
    auto* keep = new std::shared_ptr<Loaded>(loaded_);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<Loaded>*>(p); });
    // nb::array_api: an object with __dlpack__ and __dlpack_device__ (a bare nb::ndarray<> becomes a
    // DLPack capsule, which has neither: seen on the H200 with nanobind 3.1).
    return nb::cast(nb::ndarray<nb::array_api>(const_cast<void*>(t.const_data_ptr()), shape.size(), shape.data(),
                                               owner, nullptr, dtype, nb::device::cuda::value, device_of(t)));
  }

  std::string path_, etdump_path_;
  std::shared_ptr<Loaded> loaded_;
  std::vector<std::string> method_names_;
  std::map<std::string, MethodInfo> methods_;
  std::vector<nb::object> last_args_;
  std::mutex mu_;
  bool etdump_written_ = false;
};

/// A call bound to its arrays once (Method.bind): each call runs the method on the same arrays
/// without converting them again; it holds them (and the program) alive.
struct BoundCall {
  std::shared_ptr<Program> program;
  std::shared_ptr<Program::Prepared> prepared;
  nb::list operator()() { return program->run(*prepared, false); }
};

}  // namespace

void bind_program(nb::module_& m) {
  nb::class_<Program>(m, "_Program")
      .def(nb::init<const std::string&, nb::dict, const std::string&, bool>(), nb::arg("path"), nb::arg("options"),
           nb::arg("etdump"), nb::arg("load_methods"))
      .def_prop_ro("method_names", &Program::method_names)
      .def_prop_ro("path", &Program::path)
      .def_prop_ro("closed", &Program::closed)
      .def_prop_ro("profiling", &Program::profiling)
      .def("load_method", [](Program& p, const std::string& name) { p.load_method(name); })
      .def("inputs", [](Program& p, const std::string& name) { return p.io_specs(name, true); })
      .def("outputs", [](Program& p, const std::string& name) { return p.io_specs(name, false); })
      .def("call", &Program::call, nb::arg("method"), nb::arg("inputs"), nb::arg("outputs").none())
      .def("bind", [](std::shared_ptr<Program> p, const std::string& name, nb::sequence inputs, nb::object outputs) {
        return BoundCall{p, p->prepare(name, inputs, outputs)};
      }, nb::arg("method"), nb::arg("inputs"), nb::arg("outputs").none())
      .def("time_cpp", &Program::time_cpp, nb::arg("method"), nb::arg("inputs"), nb::arg("outputs").none(), nb::arg("n"))
      .def("flush_profiling", &Program::flush_profiling)
      .def("write_etdump", &Program::write_etdump)
      .def("close", &Program::close);
#if TRTET_PY_HAVE_ETDUMP
  nb::class_<BoundCall>(m, "_BoundCall").def("__call__", &BoundCall::operator());
  m.attr("HAVE_ETDUMP") = true;
#else
  m.attr("HAVE_ETDUMP") = false;
#endif
#if TRTET_PY_HAVE_KERNELS
  m.attr("HAVE_KERNELS") = true;
#else
  m.attr("HAVE_KERNELS") = false;
#endif
  m.def("backend_registered", [] { return ::torch_tensorrt::executorch_backend::detail::kTensorRTBackendRegistered; },
        "True when loading the backend library registered \"TensorRTBackend\" with ExecuTorch.");
}

}  // namespace trtet_py
