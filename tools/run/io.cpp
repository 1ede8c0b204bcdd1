#include "run/io.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <random>

#include "engine/types.h"

#include "run/npy.h"

namespace trtet_run {
namespace {

namespace etr = ::executorch::runtime;
using ::executorch::aten::SizesType;

constexpr std::size_t kHostAlignment = 256;

std::string shape_text(const std::vector<SizesType>& sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

}  // namespace

ex::Result<std::vector<SizesType>> tensor_sizes(const std::vector<std::int64_t>& dims, const std::string& what) {
  std::vector<SizesType> sizes;
  sizes.reserve(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    TRTET_CHECK_OR_RETURN(dims[d] >= 0 && dims[d] <= std::numeric_limits<SizesType>::max(), kInvalidArgument,
                          "%s: dimension %zu is %lld; ExecuTorch's tensors take 0 to %lld", what.c_str(), d,
                          static_cast<long long>(dims[d]), static_cast<long long>(std::numeric_limits<SizesType>::max()));
    sizes.push_back(static_cast<SizesType>(dims[d]));
  }
  return sizes;
}

ex::Result<std::size_t> tensor_bytes(const std::vector<SizesType>& sizes, ScalarType type, const std::string& what) {
  const std::vector<std::int64_t> dims(sizes.begin(), sizes.end());
  const std::optional<std::int64_t> count = ex::checked_element_count(dims.data(), dims.size());
  const std::optional<std::size_t> bytes =
      count.has_value() ? ex::checked_byte_count(*count, dtype_size(type)) : std::nullopt;
  TRTET_CHECK_OR_RETURN(bytes.has_value(), kInvalidArgument, "%s: shape %s of %s has more bytes than fit in 64 bits",
                        what.c_str(), shape_text(sizes).c_str(), dtype_name(type).c_str());
  return *bytes;
}

namespace {

// A buffer of `bytes` in `memory` (device, pinned or pageable host), owned by the returned tensor:
// its deleter frees it. Setup only: this allocates with cudaMalloc / cudaHostAlloc. `host_data`, when
// given, holds exactly the tensor's bytes.
ex::Result<TensorPtr> make_tensor(IoMemory memory, ScalarType type, const std::vector<SizesType>& sizes,
                                  const void* host_data, int device) {
  TRTET_ASSIGN_OR_RETURN(const std::size_t data_bytes, tensor_bytes(sizes, type, "a tensor"));
  TRTET_CHECK_OR_RETURN(data_bytes <= std::numeric_limits<std::size_t>::max() - kHostAlignment, kInvalidArgument,
                        "a tensor of %zu bytes is too large", data_bytes);
  const std::size_t bytes = std::max<std::size_t>(1, data_bytes);
  void* data = nullptr;
  std::function<void(void*)> deleter;
  auto device_kind = ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
  switch (memory) {
    case IoMemory::kDevice: {
      const cudaError_t e = cudaMalloc(&data, bytes);
      TRTET_CHECK_OR_RETURN(e == cudaSuccess, kMemoryAllocationFailed, "cudaMalloc(%zu): %s", bytes,
                            cudaGetErrorString(e));
      deleter = [](void* p) { (void)cudaFree(p); };
      device_kind = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                               static_cast<::executorch::runtime::etensor::DeviceIndex>(device));
      if (host_data != nullptr) {
        // From pageable memory cudaMemcpy may return before the copy lands, and the runner's
        // non-blocking streams do not wait for the legacy stream: wait for it here (setup only).
        cudaError_t c = cudaMemcpy(data, host_data, data_bytes, cudaMemcpyHostToDevice);
        if (c == cudaSuccess) c = cudaStreamSynchronize(cudaStreamLegacy);
        if (c != cudaSuccess) {
          (void)cudaFree(data);
          return ex::make_error(ex::ErrorCode::kInternal, "uploading an input: %s", cudaGetErrorString(c));
        }
      }
      break;
    }
    case IoMemory::kPinned: {
      const cudaError_t e = cudaHostAlloc(&data, bytes, cudaHostAllocDefault);
      TRTET_CHECK_OR_RETURN(e == cudaSuccess, kMemoryAllocationFailed, "cudaHostAlloc(%zu): %s", bytes,
                            cudaGetErrorString(e));
      deleter = [](void* p) { (void)cudaFreeHost(p); };
      if (host_data != nullptr && data_bytes != 0) std::memcpy(data, host_data, data_bytes);
      break;
    }
    case IoMemory::kHost: {
      data = std::aligned_alloc(kHostAlignment, (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment);
      TRTET_CHECK_OR_RETURN(data != nullptr, kMemoryAllocationFailed, "aligned_alloc(%zu) failed", bytes);
      deleter = [](void* p) { std::free(p); };
      if (host_data != nullptr && data_bytes != 0) std::memcpy(data, host_data, data_bytes);
      break;
    }
  }
  return ::executorch::extension::from_blob(data, sizes, type, device_kind, std::move(deleter));
}

ex::Status et_error(etr::Error error, const std::string& what) {
  return ex::make_error(error == etr::Error::InvalidArgument ? ex::ErrorCode::kInvalidArgument : ex::ErrorCode::kInternal,
                        "%s: ExecuTorch error %s (0x%x)", what.c_str(), etr::to_string(error),
                        static_cast<unsigned>(error));
}

}  // namespace

ex::Result<std::unique_ptr<MethodIo>> MethodIo::prepare(Module& module, const RunOptions& options) {
  auto meta = module.method_meta(options.method);
  if (!meta.ok()) return et_error(meta.error(), "reading the metadata of method '" + options.method + "'");
  auto io = std::make_unique<MethodIo>();
  io->memory_ = options.io;
  io->overwrite_ = options.overwrite;
  const std::size_t inputs = meta->num_inputs();
  TRTET_CHECK_OR_RETURN(options.inputs.empty() || options.inputs.size() == inputs, kInvalidArgument,
                        "method '%s' takes %zu inputs; %zu --input files were given", options.method.c_str(), inputs,
                        options.inputs.size());
  TRTET_CHECK_OR_RETURN(options.shapes.size() <= 1 || options.shapes.size() == inputs, kInvalidArgument,
                        "method '%s' takes %zu inputs; give --shape once for all or once per input (got %zu)",
                        options.method.c_str(), inputs, options.shapes.size());
  std::mt19937 rng(options.seed);

  for (std::size_t i = 0; i < inputs; ++i) {
    auto tag = meta->input_tag(i);
    TRTET_CHECK_OR_RETURN(tag.ok() && *tag == etr::Tag::Tensor, kInvalidArgument,
                          "input %zu of '%s' is not a tensor; trtet-run fills tensor inputs only", i,
                          options.method.c_str());
    auto info = meta->input_tensor_meta(i);
    if (!info.ok()) return et_error(info.error(), "reading input " + std::to_string(i));
    Slot slot;
    slot.name = info->name().empty() ? "input " + std::to_string(i) : std::string(info->name());
    slot.type = info->scalar_type();
    slot.planned = info->is_memory_planned();
    slot.sizes.assign(info->sizes().begin(), info->sizes().end());
    TRTET_CHECK_OR_RETURN(dtype_size(slot.type) != 0, kNotSupported, "input %zu (%s) has a dtype trtet-run cannot fill (%s)",
                          i, slot.name.c_str(), dtype_name(slot.type).c_str());

    std::vector<std::uint8_t> host;
    if (!options.inputs.empty()) {
      TRTET_ASSIGN_OR_RETURN(NpyArray array, read_npy(options.inputs[i]));
      ScalarType file_type;
      TRTET_CHECK_OR_RETURN(dtype_of_npy(array.descr, file_type) && file_type == slot.type, kInvalidArgument,
                            "input %zu (%s) is %s; %s holds '%s'", i, slot.name.c_str(),
                            dtype_name(slot.type).c_str(), options.inputs[i].c_str(), array.descr.c_str());
      // Checked, not truncated to ExecuTorch's 32-bit sizes (parse_npy checked the data's size).
      TRTET_ASSIGN_OR_RETURN(slot.sizes, tensor_sizes(array.shape, options.inputs[i]));
      host = std::move(array.data);
      slot.source = options.inputs[i];
    } else {
      if (!options.shapes.empty()) {
        TRTET_ASSIGN_OR_RETURN(const std::vector<long long> dims,
                               parse_dims(options.shapes.size() == 1 ? options.shapes[0] : options.shapes[i]));
        TRTET_ASSIGN_OR_RETURN(slot.sizes, tensor_sizes(std::vector<std::int64_t>(dims.begin(), dims.end()), "--shape"));
      }
      TRTET_ASSIGN_OR_RETURN(const std::size_t bytes, tensor_bytes(slot.sizes, slot.type, "input " + slot.name));
      try {
        host.resize(bytes);
      } catch (const std::bad_alloc&) {
        return ex::make_error(ex::ErrorCode::kMemoryAllocationFailed, "no host memory for random input %zu (%zu bytes)",
                              i, bytes);
      }
      fill_random(slot.type, host.data(), bytes / std::max<std::size_t>(1, dtype_size(slot.type)), rng);
      slot.source = "random";
    }
    // The buffer made below is the shape's size: the data must be exactly that.
    TRTET_ASSIGN_OR_RETURN(const std::size_t needed, tensor_bytes(slot.sizes, slot.type, "input " + slot.name));
    TRTET_CHECK_OR_RETURN(host.size() == needed, kInvalidArgument, "input %zu (%s): %zu data bytes where shape %s of %s "
                          "needs %zu", i, slot.name.c_str(), host.size(), shape_text(slot.sizes).c_str(),
                          dtype_name(slot.type).c_str(), needed);
    // A planned input is copied into the program's host memory by set_input: give it host data.
    const IoMemory memory = slot.planned ? IoMemory::kHost : options.io;
    slot.on_device = memory == IoMemory::kDevice;
    TRTET_ASSIGN_OR_RETURN(slot.tensor, make_tensor(memory, slot.type, slot.sizes, host.data(), options.device));
    const etr::Error set = module.set_input(options.method, etr::EValue(*slot.tensor), i);
    if (set != etr::Error::Ok) {
      return et_error(set, "setting input " + std::to_string(i) + " (" + slot.name + ", " + shape_text(slot.sizes) +
                               ")");
    }
    io->inputs_.push_back(std::move(slot));
  }

  for (std::size_t i = 0; i < meta->num_outputs(); ++i) {
    auto info = meta->output_tensor_meta(i);
    Slot slot;
    if (!info.ok()) {  // a non-tensor output: left to the program
      slot.name = "output " + std::to_string(i) + " (not a tensor)";
      slot.planned = true;
      io->outputs_.push_back(std::move(slot));
      continue;
    }
    slot.name = info->name().empty() ? "output " + std::to_string(i) : std::string(info->name());
    slot.type = info->scalar_type();
    slot.planned = info->is_memory_planned();
    slot.sizes.assign(info->sizes().begin(), info->sizes().end());
    if (!slot.planned) {
      TRTET_CHECK_OR_RETURN(dtype_size(slot.type) != 0, kNotSupported,
                            "output %zu (%s) has a dtype trtet-run cannot hold (%s)", i, slot.name.c_str(),
                            dtype_name(slot.type).c_str());
      slot.on_device = options.io == IoMemory::kDevice;
      TRTET_ASSIGN_OR_RETURN(slot.tensor, make_tensor(options.io, slot.type, slot.sizes, nullptr, options.device));
      const etr::Error set = module.set_output(options.method, etr::EValue(*slot.tensor), i);
      if (set != etr::Error::Ok) return et_error(set, "setting output " + std::to_string(i) + " (" + slot.name + ")");
    }
    io->outputs_.push_back(std::move(slot));
  }
  return io;
}

std::string MethodIo::line(const char* kind, std::size_t index, const Slot& slot, IoMemory memory) {
  std::string where = slot.planned ? "planned by the program" : slot.on_device ? "device" : to_string(memory);
  std::string text = std::string(kind) + " " + std::to_string(index) + ": " + slot.name + "  " +
                     dtype_name(slot.type) + " " + shape_text(slot.sizes) + "  " + where;
  if (!slot.source.empty()) text += "  (" + slot.source + ")";
  return text;
}

std::vector<std::string> MethodIo::describe() const {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < inputs_.size(); ++i) lines.push_back(line("input ", i, inputs_[i], memory_));
  for (std::size_t i = 0; i < outputs_.size(); ++i) lines.push_back(line("output", i, outputs_[i], memory_));
  return lines;
}

ex::Status MethodIo::save_outputs(const std::vector<etr::EValue>& outputs, const std::string& dir,
                                  cudaStream_t stream) const {
  const cudaError_t synced = cudaStreamSynchronize(stream);
  TRTET_CHECK_OR_RETURN(synced == cudaSuccess, kInternal, "waiting for the last call: %s", cudaGetErrorString(synced));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    TRTET_CHECK_OR_RETURN(outputs[i].isTensor(), kNotSupported, "output %zu is not a tensor: not saved", i);
    const auto& tensor = outputs[i].toTensor();
    NpyArray array;
    array.descr = npy_descr(tensor.scalar_type());
    TRTET_CHECK_OR_RETURN(!array.descr.empty(), kNotSupported, "output %zu is %s, which .npy cannot hold", i,
                          dtype_name(tensor.scalar_type()).c_str());
    array.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
    array.data.resize(tensor.nbytes());
    // Wherever the output lives (a CUDA-planned arena, the caller's device buffer, host memory):
    // device memory is read by the driver, never by a host memcpy.
    cudaPointerAttributes attributes{};
    const bool device_memory = cudaPointerGetAttributes(&attributes, tensor.const_data_ptr()) == cudaSuccess &&
                               (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged);
    (void)cudaGetLastError();  // no driver: host memory, as it must be there
    if (device_memory) {
      const cudaError_t copied =
          cudaMemcpy(array.data.data(), tensor.const_data_ptr(), tensor.nbytes(), cudaMemcpyDeviceToHost);
      TRTET_CHECK_OR_RETURN(copied == cudaSuccess, kInternal, "downloading output %zu: %s", i,
                            cudaGetErrorString(copied));
    } else if (tensor.nbytes() != 0) {
      std::memcpy(array.data.data(), tensor.const_data_ptr(), tensor.nbytes());
    }
    TRTET_RETURN_IF_ERROR(write_npy(dir + "/output_" + std::to_string(i) + ".npy", array, overwrite_));
  }
  return ex::Status::Ok();
}

}  // namespace trtet_run
