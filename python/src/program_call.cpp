// A Program's call: its arguments read (arrays.cpp) and checked, the method run with the GIL
// released on ExecuTorch's Method directly, its results handed back as arrays (program.h).
//
// Outputs, per kind (docs/PYTHON.md, "What a call returns"):
//   planned by the program   host: a numpy copy; device: a DLPack view of the program's memory
//   passed by the caller     the method's output is resized to the array's shape, then bound to its
//                            memory; what the engine produces is checked against it
//   neither                  allocated by the package at the bound (on the inputs' device, ordered
//                            on the call's stream, or host memory for a host call) and returned as
//                            a view of the produced shape; freed, ordered on that stream, when the
//                            last holder lets go
#include <nanobind/ndarray.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor_ptr_maker.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "program.h"

namespace trtet_py {

namespace {

using ::executorch::aten::Tensor;
using ::executorch::aten::TensorImpl;

std::atomic<long> g_live_device_outputs{0};

/// A bug planted on purpose by the test suite (_C._plant): "early-free" frees allocated outputs on
/// the calling thread's default stream, unordered with the work that writes them, so the test that
/// checks the order is seen to fail. Empty in every other use.
std::atomic<bool> g_plant_early_free{false};

// ---- the package's memory: one stream-ordered pool per device ----

constexpr int kMaxDevices = 64;
/// What a pool keeps reserved after frees (cudaMemPoolAttrReleaseThreshold): a serving loop's
/// outputs are reused from it instead of mapped again on every call.
constexpr std::uint64_t kPoolKeepBytes = 64ull << 20;

std::mutex g_pool_mu;
cudaMemPool_t g_pools[kMaxDevices] = {};

cudaMemPool_t pool_of(int device, std::string& error) {
  if (device < 0 || device >= kMaxDevices) {
    error = "device " + std::to_string(device) + " is beyond the package's " + std::to_string(kMaxDevices);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (g_pools[device] != nullptr) return g_pools[device];
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  cudaError_t e = cudaMemPoolCreate(&pool, &props);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    error = std::string("cudaMemPoolCreate: ") + cudaGetErrorString(e);
    return nullptr;
  }
  std::uint64_t keep = kPoolKeepBytes;
  (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  (void)cudaGetLastError();
  g_pools[device] = pool;
  return pool;
}

/// Memory the package allocated for one output of one call.
struct Buffer {
  void* ptr = nullptr;
  bool device = false;
  int device_id = 0;
  std::size_t bytes = 0;
};

bool allocate(Buffer& b, std::size_t bytes, bool device, int device_id, cudaStream_t stream, std::string& error) {
  b = Buffer{};
  b.bytes = bytes;
  b.device = device;
  b.device_id = device_id;
  const std::size_t n = bytes == 0 ? 1 : bytes;
  if (!device) {
    b.ptr = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (b.ptr == nullptr) error = "cannot allocate " + std::to_string(bytes) + " bytes of host memory";
    return b.ptr != nullptr;
  }
  cudaMemPool_t pool = pool_of(device_id, error);
  if (pool == nullptr) return false;
  const cudaError_t e = cudaMallocFromPoolAsync(&b.ptr, n, pool, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    b.ptr = nullptr;
    error = "cannot allocate " + std::to_string(bytes) + " bytes on device " + std::to_string(device_id) + ": " +
            cudaGetErrorString(e);
    return false;
  }
  ++g_live_device_outputs;
  return true;
}

void release(Buffer& b, cudaStream_t stream) noexcept {
  if (b.ptr == nullptr) return;
  if (b.device) {
    if (cudaFreeAsync(b.ptr, stream) != cudaSuccess) (void)cudaGetLastError();
    --g_live_device_outputs;
  } else {
    std::free(b.ptr);
  }
  b.ptr = nullptr;
}

/// The owner of an allocated device output handed to Python: freed with cudaFreeAsync on the
/// call's stream when the last holder lets go (ordered after the work that wrote it, and after
/// whatever was queued on that stream since). Keeps the selected stream object alive until then.
struct DeviceOutput {
  void* ptr;
  cudaStream_t stream;
  PyObject* stream_object;           // a strong reference, or null
  std::shared_ptr<void> partition;   // the partition whose stream it is, kept alive
};

void free_device_output(void* p) noexcept {
  auto* d = static_cast<DeviceOutput*>(p);
  const cudaStream_t stream = g_plant_early_free.load() ? cudaStreamPerThread : d->stream;
  if (cudaFreeAsync(d->ptr, stream) != cudaSuccess) (void)cudaGetLastError();
  --g_live_device_outputs;
  Py_XDECREF(d->stream_object);  // capsule destructors run with the GIL held
  delete d;  // last: a partition kept only by this output goes now, after the free is queued
}

// ---- checks ----

[[noreturn, gnu::cold, gnu::noinline]] void refuse_against(const ArrayArg& a, const IoInfo& io, const Where& w) {
  if (a.type != io.type)
    raise(et::ErrorCode::kInvalidArgument, w.text() + ": " + dtype_name(a.type) + " where the method takes " +
                                               dtype_name(io.type));
  if (a.ndim != static_cast<int>(io.sizes.size()))
    raise(et::ErrorCode::kInvalidArgument, w.text() + ": shape " + shape_text(a.sizes, a.ndim) + " has " +
                                               std::to_string(a.ndim) + " dimensions; the method takes " +
                                               std::to_string(io.sizes.size()) + " (" + shape_text(io.sizes) + ")");
  for (int d = 0; d < a.ndim; ++d) {
    if (!io.dynamic && a.sizes[d] != io.sizes[d])
      raise(et::ErrorCode::kInvalidArgument, w.text() + ": shape " + shape_text(a.sizes, a.ndim) + " where the method's " +
                                                 w.kind + " has the static shape " + shape_text(io.sizes));
    if (a.sizes[d] > io.sizes[d])
      raise(et::ErrorCode::kInvalidArgument,
            w.text() + ": shape " + shape_text(a.sizes, a.ndim) + " is beyond the method's bound " +
                shape_text(io.sizes) + " (dimension " + std::to_string(d) + ": " + std::to_string(a.sizes[d]) + " > " +
                std::to_string(io.sizes[d]) + "; " + std::to_string(a.numel()) + " elements where the bound holds " +
                std::to_string(io.bound_numel) + ")");
  }
  raise(et::ErrorCode::kInternal, w.text() + ": refused without a reason");  // not reached
}

/// The array against the method's input or output: its dtype, rank and shape (the static shape, or
/// within the bound). The checks inline; the refusal, with its words, out of line.
inline void check_against(const ArrayArg& a, const IoInfo& io, const Where& w) {
  bool ok = a.type == io.type && a.ndim == static_cast<int>(io.sizes.size());
  const SizesType* bound = io.sizes.data();
  if (io.dynamic) {
    for (int d = 0; ok && d < a.ndim; ++d) ok = a.sizes[d] <= bound[d];
  } else {
    for (int d = 0; ok && d < a.ndim; ++d) ok = a.sizes[d] == bound[d];
  }
  if (!ok) refuse_against(a, io, w);
}

bool same_shape(const ArrayArg& a, const std::vector<SizesType>& s) {
  if (static_cast<std::size_t>(a.ndim) != s.size()) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.sizes[d] != s[static_cast<std::size_t>(d)]) return false;
  return true;
}

std::int64_t numel_of(const std::vector<SizesType>& s) {
  std::int64_t n = 1;
  for (SizesType v : s) n *= v;
  return n;
}

// ---- a call's state while it runs (GIL released, the program's mutex held) ----

enum class Out : std::uint8_t { kValue, kPlanned, kGiven, kAllocated, kScratch };

/// An output as the call left it: read under the program's mutex, turned into Python objects after.
struct Produced {
  std::vector<SizesType> sizes;
  const void* data = nullptr;
  ScalarType type = ScalarType::Float;
  bool on_device = false;
  int device = 0;
  etr::EValue value;  // a non-tensor output (int, double, bool)
  std::vector<std::uint8_t> host;  // a planned host output, copied out
};

struct CallState {
  cudaStream_t stream = cudaStreamPerThread;
  bool guarded = false;
  std::vector<Out> mode;
  std::vector<Buffer> buf;
  std::vector<Produced> produced;
  std::string key;  // the input shapes, where a learned output shape is needed
  // A failure: ExecuTorch's (et_error, what) or the package's own (code, message).
  etr::Error et_error = etr::Error::Ok;
  std::string what;
  bool own_error = false;
  et::ErrorCode code = et::ErrorCode::kInternal;
  std::string message;

  bool failed() const { return et_error != etr::Error::Ok || own_error; }
  void fail(et::ErrorCode c, std::string m) {
    own_error = true;
    code = c;
    message = std::move(m);
  }
  void release_all() noexcept {
    for (Buffer& b : buf) release(b, stream);
  }
};

/// Whether an output lives in device memory: its tensor's device, or, for a tensor tagged CPU,
/// what CUDA says of its pointer (never read device memory with memcpy).
bool on_device(const Tensor& t) {
  if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU) return true;
  if (t.const_data_ptr() == nullptr) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice;
}

int device_of(const Tensor& t) {
  if (t.unsafeGetTensorImpl()->device_type() != ::executorch::aten::DeviceType::CPU)
    return t.unsafeGetTensorImpl()->device().index();
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, t.const_data_ptr()) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attr.device;
}

std::string input_key(const CallArgs& args) {
  std::string key;
  for (const ArrayArg& a : args.in) {
    key.push_back(static_cast<char>(a.ndim));
    key.append(reinterpret_cast<const char*>(a.sizes), static_cast<std::size_t>(a.ndim) * sizeof(SizesType));
  }
  return key;
}

constexpr std::size_t kMaxLearned = 4096;

/// A T of this thread's, reused from call to call (its vectors keep their capacity: no allocation
/// in the steady state), or a fresh one where this thread's is in use (a call made while another
/// is being turned into Python objects on the same thread).
template <class T>
class ThreadScratch {
 public:
  ThreadScratch() {
    Slot& s = slot();  // one thread-local lookup per use: the slot kept for the destructor
    if (!s.busy) {
      s.busy = true;
      slot_ = &s;
      p_ = &s.value;
    } else {
      own_ = std::make_unique<T>();
      p_ = own_.get();
    }
  }
  ~ThreadScratch() {
    if (slot_ != nullptr) slot_->busy = false;
  }
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
  T& operator*() { return *p_; }
  T* operator->() { return p_; }

 private:
  struct Slot {
    T value;
    bool busy = false;
  };
  static Slot& slot() {
    thread_local Slot s;
    return s;
  }
  Slot* slot_ = nullptr;  // this thread's, where this use has it
  T* p_ = nullptr;
  std::unique_ptr<T> own_;
};

/// One call of the method on read arguments: inputs set, outputs resized and bound, executed, the
/// outputs read. Runs with the GIL released and the program's mutex held; never throws (a failure
/// is left in `st`, its buffers released).
void execute_locked(MethodInfo& mi, const CallArgs& args, CallState& st) {
  Method& method = *mi.method;
  const std::size_t n_out = mi.outputs.size();
  st.mode.assign(n_out, Out::kValue);
  st.buf.assign(n_out, Buffer{});
  st.produced.resize(n_out);
  for (Produced& p : st.produced) {  // cleared in place: a reused state keeps its vectors' memory
    p.sizes.clear();
    p.host.clear();
    p.data = nullptr;
    p.on_device = false;
    p.device = 0;
    p.value = etr::EValue();
  }
  st.key.clear();
  st.et_error = etr::Error::Ok;
  st.what.clear();
  st.own_error = false;
  st.message.clear();
  const std::optional<cudaStream_t> selected = et::caller_stream();
  st.guarded = selected.has_value();
  st.stream = selected.value_or(cudaStreamPerThread);

  // Inputs: a tensor over the array's own memory (nothing allocated), which the Method shares
  // (unplanned) or copies into its plan (planned host inputs); either way resized to its shape.
  for (std::size_t i = 0; i < args.in.size(); ++i) {
    const ArrayArg& a = args.in[i];
    SizesType sizes[kMaxDims];
    ::executorch::aten::DimOrderType order[kMaxDims];
    ::executorch::aten::StridesType strides[kMaxDims];
    std::int64_t stride = 1;
    for (int d = a.ndim; d-- > 0;) {
      sizes[d] = a.sizes[d];
      order[d] = static_cast<::executorch::aten::DimOrderType>(d);
      strides[d] = static_cast<::executorch::aten::StridesType>(stride);
      stride *= a.sizes[d] > 0 ? a.sizes[d] : 1;
    }
    TensorImpl impl(a.type, a.ndim, sizes, a.data, order, strides, ::executorch::aten::TensorShapeDynamism::STATIC,
                    a.cuda ? ::executorch::aten::DeviceType::CUDA : ::executorch::aten::DeviceType::CPU,
                    static_cast<::executorch::runtime::etensor::DeviceIndex>(a.cuda ? a.device : 0));
    st.et_error = method.set_input(etr::EValue(Tensor(&impl)), i);
    if (st.et_error != etr::Error::Ok) {
      st.what = "setting input " + std::to_string(i);
      return;
    }
  }

  // Outputs: each one's mode, then its memory bound.
  bool need_key = false;
  for (std::size_t o = 0; o < n_out; ++o) {
    const IoInfo& io = mi.outputs[o];
    if (!io.tensor) continue;
    if (io.planned) {
      st.mode[o] = Out::kPlanned;
    } else if (args.out[o].obj != nullptr) {
      st.mode[o] = Out::kGiven;
      need_key = need_key || args.out[o].numel() < io.bound_numel;
    } else {
      st.mode[o] = Out::kAllocated;
    }
  }
  const std::vector<std::vector<SizesType>>* learned = nullptr;
  if (need_key) {
    st.key = input_key(args);
    auto found = mi.learned.find(st.key);
    if (found != mi.learned.end()) learned = &found->second;
  }
  for (std::size_t o = 0; o < n_out; ++o) {
    const IoInfo& io = mi.outputs[o];
    const Tensor t = method.get_output(o).isTensor() ? method.get_output(o).toTensor() : Tensor(nullptr);
    if (st.mode[o] == Out::kGiven) {
      const ArrayArg& a = args.out[o];
      if (a.numel() < io.bound_numel) {
        if (learned == nullptr) {
          // Input shapes not seen before: what the engine makes of them is not known yet, and
          // the array is smaller than what it may write. It writes into the package's memory at
          // the bound; the result is copied into the array once its shape is known to match.
          st.mode[o] = Out::kScratch;
        } else if (!same_shape(a, (*learned)[o])) {
          st.fail(et::ErrorCode::kInvalidArgument,
                  Where{"output", o, &io.name}.text() + ": shape " + shape_text(a.sizes, a.ndim) +
                      " where the engine produces " + shape_text((*learned)[o]) + " for these inputs; pass an array of shape " +
                      shape_text((*learned)[o]));
          st.release_all();
          return;
        }
      }
    }
    if (st.mode[o] == Out::kGiven) {
      const ArrayArg& a = args.out[o];
      // The method's output still has the previous call's shape: the array's shape first, so the
      // array is checked against it rather than against whatever ran last.
      st.et_error = ::executorch::runtime::resize_tensor(t, ::executorch::aten::ArrayRef<SizesType>(a.sizes, static_cast<std::size_t>(a.ndim)));
      if (st.et_error == etr::Error::Ok) st.et_error = method.set_output_data_ptr(a.data, a.nbytes(), o);
      if (st.et_error != etr::Error::Ok) {
        st.what = "setting output " + std::to_string(o) + " to an array of shape " + shape_text(a.sizes, a.ndim);
        st.release_all();
        return;
      }
    } else if (st.mode[o] == Out::kAllocated || st.mode[o] == Out::kScratch) {
      const bool device = st.mode[o] == Out::kScratch ? args.out[o].cuda : args.alloc_device >= 0;
      const int device_id = st.mode[o] == Out::kScratch ? args.out[o].device : args.alloc_device;
      std::string error;
      if (!allocate(st.buf[o], io.bound_bytes, device, device_id, st.stream, error)) {
        st.fail(et::ErrorCode::kMemoryAllocationFailed, Where{"output", o, &io.name}.text() + " (" + std::to_string(io.bound_bytes) +
                                                      " bytes at the bound " + shape_text(io.sizes) + "): " + error);
        st.release_all();
        return;
      }
      st.et_error = ::executorch::runtime::resize_tensor(t, ::executorch::aten::ArrayRef<SizesType>(io.sizes.data(), io.sizes.size()));
      if (st.et_error == etr::Error::Ok) st.et_error = method.set_output_data_ptr(st.buf[o].ptr, io.bound_bytes, o);
      if (st.et_error != etr::Error::Ok) {
        st.what = "setting output " + std::to_string(o) + " to the package's memory at the bound " + shape_text(io.sizes);
        st.release_all();
        return;
      }
    }
  }

  st.et_error = method.execute();
  if (st.et_error != etr::Error::Ok) {
    st.what = "executing method '" + mi.name + "'";
    st.release_all();
    return;
  }
  if (!st.key.empty()) {  // what the engine makes of these input shapes, for the next call's check
    std::vector<std::vector<SizesType>> shapes(n_out);
    for (std::size_t o = 0; o < n_out; ++o)
      if (method.get_output(o).isTensor()) {
        const auto s = method.get_output(o).toTensor().sizes();
        shapes[o].assign(s.begin(), s.end());
      }
    if (mi.learned.size() >= kMaxLearned) mi.learned.clear();
    mi.learned[st.key] = std::move(shapes);
  }

  // What the engine produced, checked against what was passed.
  bool copied = false;
  for (std::size_t o = 0; o < n_out; ++o) {
    const etr::EValue& v = method.get_output(o);
    Produced& p = st.produced[o];
    if (!v.isTensor()) {
      p.value = v;
      continue;
    }
    const Tensor& t = v.toTensor();
    p.sizes.assign(t.sizes().begin(), t.sizes().end());
    p.type = t.scalar_type();
    p.data = t.const_data_ptr();
    const IoInfo& io = mi.outputs[o];
    const Where w{"output", o, &io.name};
    if (st.mode[o] == Out::kGiven || st.mode[o] == Out::kScratch) {
      const ArrayArg& a = args.out[o];
      if (!same_shape(a, p.sizes)) {
        const std::size_t made = static_cast<std::size_t>(numel_of(p.sizes)) * element_size(p.type);
        st.fail(et::ErrorCode::kInvalidArgument,
                w.text() + ": the engine produced shape " + shape_text(p.sizes) + " (" + std::to_string(made) +
                    " bytes) where the array passed has shape " + shape_text(a.sizes, a.ndim) + " (" +
                    std::to_string(a.nbytes()) + " bytes)" +
                    (st.mode[o] == Out::kScratch ? std::string("; the array was not written")
                     : made > a.nbytes()         ? std::string("; the engine wrote past the array's end")
                                                 : std::string()) +
                    "; pass an array of shape " + shape_text(p.sizes));
        continue;
      }
      if (st.mode[o] == Out::kScratch && a.nbytes() != 0) {
        if (st.buf[o].device || a.cuda) {
          const cudaError_t e = cudaMemcpyAsync(a.data, st.buf[o].ptr, a.nbytes(), cudaMemcpyDefault, st.stream);
          if (e != cudaSuccess) {
            (void)cudaGetLastError();
            st.fail(et::ErrorCode::kInternal, w.text() + ": copying the result into the array: " + cudaGetErrorString(e));
            continue;
          }
          copied = true;
        } else {
          std::memcpy(a.data, st.buf[o].ptr, a.nbytes());
        }
      }
    } else if (st.mode[o] == Out::kPlanned) {
      p.on_device = on_device(t);
      if (p.on_device) {
        p.device = device_of(t);
      } else {
        // Host outputs the program planned: copied out now, before another call reuses the memory.
        p.host.resize(t.nbytes());
        if (t.nbytes() != 0) std::memcpy(p.host.data(), t.const_data_ptr(), t.nbytes());
      }
    }
  }
  // Scratch memory goes back now (ordered after the copies on the stream); a call without a guard
  // returns with its results in place, as the delegate's own do.
  for (std::size_t o = 0; o < n_out; ++o)
    if (st.mode[o] == Out::kScratch) release(st.buf[o], st.stream);
  if (copied && !st.guarded) {
    const cudaError_t e = cudaStreamSynchronize(st.stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      st.fail(et::ErrorCode::kInternal, std::string("waiting for the outputs' copies: ") + cudaGetErrorString(e));
    }
  }
  if (st.failed()) st.release_all();
}

nb::object export_planned(const Produced& p, const std::shared_ptr<Loaded>& loaded) {
  std::vector<std::size_t> shape(p.sizes.begin(), p.sizes.end());  // a planned output: not the hot path
  const dl::dtype dtype = dl_of(p.type);
  if (!p.on_device) {
    auto* owned = new std::vector<std::uint8_t>(p.host);
    nb::capsule owner(owned, [](void* q) noexcept { delete static_cast<std::vector<std::uint8_t>*>(q); });
    return nb::cast(nb::ndarray<nb::numpy>(owned->data(), shape.size(), shape.data(), owner, nullptr, dtype,
                                           nb::device::cpu::value, 0));
  }
  // Device memory the program planned: a view that keeps the module alive; valid until the next
  // call of this method writes it again.
  auto* keep = new std::shared_ptr<Loaded>(loaded);
  nb::capsule owner(keep, [](void* q) noexcept { delete static_cast<std::shared_ptr<Loaded>*>(q); });
  // nb::array_api: an object with __dlpack__ and __dlpack_device__ (a bare nb::ndarray<> becomes a
  // DLPack capsule, which has neither: seen on the H200 with nanobind 3.1).
  return nb::cast(nb::ndarray<nb::array_api>(const_cast<void*>(p.data), shape.size(), shape.data(), owner, nullptr,
                                             dtype, nb::device::cuda::value, p.device));
}

nb::object export_allocated(Buffer& b, const Produced& p, const CallState& st) {
  std::size_t shape[kMaxDims];
  const std::size_t ndim = p.sizes.size();
  for (std::size_t d = 0; d < ndim; ++d) shape[d] = static_cast<std::size_t>(p.sizes[d]);
  const dl::dtype dtype = dl_of(p.type);
  void* ptr = b.ptr;
  if (!b.device) {
    nb::capsule owner(ptr, [](void* q) noexcept { std::free(q); });
    b.ptr = nullptr;  // the capsule owns it now
    return nb::cast(nb::ndarray<nb::numpy>(ptr, ndim, shape, owner, nullptr, dtype, nb::device::cpu::value, 0));
  }
  auto* d = new DeviceOutput{ptr, st.stream, nullptr, nullptr};
  if (st.guarded) {
    d->stream_object = selected_stream_object(reinterpret_cast<std::uintptr_t>(st.stream)).release().ptr();
    d->partition = stream_owner(reinterpret_cast<std::uintptr_t>(st.stream));
  }
  nb::capsule owner(d, &free_device_output);
  b.ptr = nullptr;
  return nb::cast(nb::ndarray<nb::array_api>(ptr, ndim, shape, owner, nullptr, dtype, nb::device::cuda::value,
                                             b.device_id));
}

}  // namespace

nb::list Program::call(MethodInfo& mi, PyObject* const* inputs, std::size_t n_in, PyObject* outputs) {
  ThreadScratch<CallArgs> scratch;
  CallArgs& args = *scratch;
  struct Clear {  // the reused arguments hold no reference past the call
    CallArgs& a;
    ~Clear() {
      a.refs.clear();
      a.alloc_device = -1;
    }
  } clear{args};
  prepare(mi, inputs, n_in, outputs, args);
  return run(mi, args, true);
}

void Program::prepare(const MethodInfo& mi, PyObject* const* inputs, std::size_t n_in, PyObject* outputs,
                      CallArgs& args) {
  if (!loaded_ || etdump_written_) (void)live_loaded();  // closed, or its ETDump written: InvalidState
  if (n_in != mi.inputs.size())
    raise(et::ErrorCode::kInvalidArgument, "method '" + mi.name + "' takes " + std::to_string(mi.inputs.size()) +
                                               " inputs; " + std::to_string(n_in) + " were given");
  args.alloc_device = -1;
  args.in.resize(n_in);
  for (std::size_t i = 0; i < n_in; ++i) {
    const IoInfo& io = mi.inputs[i];
    const Where w{"input", i, &io.name};
    if (!io.tensor) raise(et::ErrorCode::kNotSupported, w.text() + " is not a tensor: not supported from Python");
    ArrayArg& a = args.in[i];
    read_array(inputs[i], a, w, /*writable=*/false);
    check_against(a, io, w);
    if (io.planned && a.cuda)
      raise(et::ErrorCode::kInvalidArgument, w.text() + " is planned in the program's host memory (ExecuTorch copies it "
                                                        "with memcpy): pass a host array");
    if (a.cuda && args.alloc_device < 0) args.alloc_device = a.device;
  }
  const std::size_t n_out = mi.outputs.size();
  args.out.resize(n_out);
  for (ArrayArg& a : args.out) a.obj = nullptr;  // none given (the rest is read only where obj is set)
  if (outputs == nullptr || outputs == Py_None) return;
  PyObject* seq = PySequence_Fast(outputs, "outputs= takes a sequence (one array or None per output)");
  if (seq == nullptr) throw nb::python_error();
  nb::object hold = nb::steal(seq);
  const std::size_t given = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(seq));
  if (given != n_out)
    raise(et::ErrorCode::kInvalidArgument, "method '" + mi.name + "' has " + std::to_string(n_out) + " outputs; " +
                                               std::to_string(given) + " were given");
  if (seq != outputs) args.refs.push_back(hold);  // a sequence made here holds the arrays
  // A list may change while the GIL is released (another thread): its arrays are held for the call.
  const bool hold_items = seq == outputs && PyList_Check(outputs);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (std::size_t o = 0; o < n_out; ++o) {
    if (items[o] == Py_None) continue;
    if (hold_items) args.refs.push_back(nb::borrow(items[o]));
    const IoInfo& io = mi.outputs[o];
    const Where w{"output", o, &io.name};
    if (!io.tensor) raise(et::ErrorCode::kInvalidArgument, w.text() + " is not a tensor: pass None for it");
    if (io.planned) raise(et::ErrorCode::kInvalidArgument, w.text() + " is planned by the program: pass None for it");
    read_array(items[o], args.out[o], w, /*writable=*/true);
    check_against(args.out[o], io, w);
  }
}

nb::list Program::run(MethodInfo& mi, CallArgs& args, bool keep_args) {
  ThreadScratch<CallState> scratch;
  CallState& st = *scratch;
  bool closed = false;
  std::shared_ptr<Loaded> loaded;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    if (!loaded_ || etdump_written_) {
      closed = true;
    } else {
      clear_backend_message();
      execute_locked(mi, args, st);
      // A planned output's view keeps the module alive (close() may reset loaded_ once the lock
      // is let go): taken only where there is one, no reference count touched otherwise.
      for (Out m : st.mode)
        if (m == Out::kPlanned) {
          loaded = loaded_;
          break;
        }
    }
  }
  if (closed) (void)live_loaded();  // raises InvalidState with the reason
  if (st.own_error) raise(st.code, st.message);
  if (st.et_error != etr::Error::Ok) raise_executorch(st.et_error, st.what);

  const std::size_t n_out = mi.outputs.size();
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n_out)));
  if (!out.is_valid()) {
    st.release_all();
    throw nb::python_error();
  }
  try {
    for (std::size_t o = 0; o < n_out; ++o) {
      const Produced& p = st.produced[o];
      nb::object item;
      switch (st.mode[o]) {
        case Out::kGiven:
        case Out::kScratch: item = nb::borrow(args.out[o].obj); break;
        case Out::kAllocated: item = export_allocated(st.buf[o], p, st); break;
        case Out::kPlanned: item = export_planned(p, loaded); break;
        case Out::kValue:
          if (p.value.isInt()) {
            item = nb::int_(p.value.toInt());
          } else if (p.value.isDouble()) {
            item = nb::float_(p.value.toDouble());
          } else if (p.value.isBool()) {
            item = nb::bool_(p.value.toBool());
          } else {
            item = nb::none();
          }
          break;
      }
      PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(o), item.release().ptr());
    }
  } catch (...) {
    st.release_all();
    throw;
  }
  if (keep_args) {
    // The arrays of the last call stay referenced until the next one (their memory may still be
    // read by work queued on the caller's stream; keep your own references until it is done).
    // The same arrays as last time (a serving loop's) are kept without a reference taken and dropped.
    last_args_.resize(args.in.size() + args.out.size());
    std::size_t k = 0;
    auto keep = [&](PyObject* o) {
      nb::object& slot = last_args_[k++];
      if (slot.ptr() != o) slot = o != nullptr ? nb::borrow(o) : nb::object();
    };
    for (const ArrayArg& a : args.in) keep(a.obj);
    for (const ArrayArg& a : args.out) keep(a.obj);
  }
  return out;
}

nb::dict Program::time_cpp(MethodInfo& mi, nb::sequence inputs, nb::object outputs, int n) {
  std::vector<PyObject*> in;
  for (nb::handle h : inputs) in.push_back(h.ptr());
  CallArgs args;
  prepare(mi, in.data(), in.size(), outputs.ptr(), args);
  // ExecuTorch's Module, as a C++ application calls it, on the same arrays (every unplanned
  // output passed: a Module call cannot allocate them).
  bool module_path = true;
  std::vector<TensorPtr> tin, tout;
  auto make = [](const ArrayArg& a) {
    auto device = a.cuda ? ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                                      static_cast<::executorch::runtime::etensor::DeviceIndex>(a.device))
                         : ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
    return ::executorch::extension::from_blob(a.data, a.shape(), a.type, device);
  };
  for (const ArrayArg& a : args.in) tin.push_back(make(a));
  for (std::size_t o = 0; o < args.out.size(); ++o) {
    if (args.out[o].obj != nullptr) {
      tout.push_back(make(args.out[o]));
    } else {
      tout.emplace_back();
      if (mi.outputs[o].tensor && !mi.outputs[o].planned) module_path = false;
    }
  }
  etr::Error failed = etr::Error::Ok;
  std::string failed_what;
  double module_us = std::nan(""), package_us = 0;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    Module& module = *loaded_->module;
    if (module_path) {
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < n && failed == etr::Error::Ok; ++k) {
        for (std::size_t i = 0; i < tin.size() && failed == etr::Error::Ok; ++i)
          failed = module.set_input(mi.name, etr::EValue(*tin[i]), i);
        for (std::size_t i = 0; i < tout.size() && failed == etr::Error::Ok; ++i)
          if (tout[i]) failed = module.set_output(mi.name, etr::EValue(*tout[i]), i);
        if (failed == etr::Error::Ok) {
          auto r = module.execute(mi.name);
          if (!r.ok()) failed = r.error();
        }
      }
      module_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
      if (failed != etr::Error::Ok) failed_what = "the C++ timing loop (Module)";
    }
    if (failed == etr::Error::Ok) {
      const auto start = std::chrono::steady_clock::now();
      CallState st;  // reused, as a thread's calls reuse theirs
      for (int k = 0; k < n; ++k) {
        execute_locked(mi, args, st);
        st.release_all();  // allocated outputs: freed on the stream at once
        if (st.failed()) {
          failed = st.et_error != etr::Error::Ok ? st.et_error : etr::Error::Internal;
          failed_what = "the C++ timing loop (package): " + (st.own_error ? st.message : st.what);
          break;
        }
      }
      package_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
    }
  }
  if (failed != etr::Error::Ok) raise_executorch(failed, failed_what);
  nb::dict d;
  d["module"] = module_us;
  d["package"] = package_us;
  return d;
}

double Program::time_prepare(MethodInfo& mi, nb::sequence inputs, nb::object outputs, int n) {
  std::vector<PyObject*> in;
  for (nb::handle h : inputs) in.push_back(h.ptr());
  CallArgs args;
  prepare(mi, in.data(), in.size(), outputs.ptr(), args);  // warm: the types known, the vectors sized
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < n; ++k) {
    args.refs.clear();
    prepare(mi, in.data(), in.size(), outputs.ptr(), args);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / (n > 0 ? n : 1);
}

void plant(const std::string& bug) {
  if (bug != "" && bug != "early-free") raise(et::ErrorCode::kInvalidArgument, "no such planted bug: '" + bug + "'");
  g_plant_early_free = bug == "early-free";
}

void trim_output_pool(int device) {
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (device >= 0 && device < kMaxDevices) pool = g_pools[device];
  }
  if (pool != nullptr && cudaMemPoolTrimTo(pool, 0) != cudaSuccess) (void)cudaGetLastError();
}

nb::dict output_memory_stats(int device) {
  nb::dict d;
  d["live_device_outputs"] = g_live_device_outputs.load();
  std::uint64_t reserved = 0, used = 0;
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (device >= 0 && device < kMaxDevices) pool = g_pools[device];
  }
  if (pool != nullptr) {
    (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    (void)cudaGetLastError();
  }
  d["pool_reserved_bytes"] = reserved;
  d["pool_used_bytes"] = used;
  return d;
}

}  // namespace trtet_py
