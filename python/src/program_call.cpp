// A Program's call: its arguments checked and made tensors over the arrays' own memory, the method
// run with the GIL released, its results handed back as arrays (program.h).
#include <nanobind/ndarray.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor_ptr_maker.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "program.h"

namespace trtet_py {

std::shared_ptr<Program::Prepared> Program::prepare(const std::string& name, nb::sequence inputs, nb::object outputs) {
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

nb::list Program::run(const Prepared& pr, bool keep_args) {
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

double Program::time_cpp(const std::string& name, nb::sequence inputs, nb::object outputs, int n) {
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

void Program::check_against(const ArrayArg& a, const IoInfo& io, const std::string& what) {
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

TensorPtr Program::make(const ArrayArg& a) {
  auto device = a.cuda ? ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                                    static_cast<::executorch::runtime::etensor::DeviceIndex>(a.device))
                       : ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
  return ::executorch::extension::from_blob(a.data, a.sizes, a.type, device);
}

bool Program::on_device(const ::executorch::aten::Tensor& t) {
  if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU) return true;
  if (t.const_data_ptr() == nullptr) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice;
}

int Program::device_of(const ::executorch::aten::Tensor& t) {
  if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU)
    return t.unsafeGetTensorImpl()->device().index();
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attr.device;
}

nb::object Program::export_tensor(const ::executorch::aten::Tensor& t, std::vector<std::uint8_t>& host) {
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

}  // namespace trtet_py
