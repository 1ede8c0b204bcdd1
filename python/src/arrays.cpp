#include "arrays.h"

#include <structmember.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace trtet_py {

namespace {

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

// ---- the DLPack C exchange API (DLPack 1.2's DLPackExchangeAPI, declared here by its ABI) ----
// A producer's type (torch.Tensor where torch has it) carries a capsule "dlpack_exchange_api" under
// __dlpack_c_exchange_api__ (earlier __c_dlpack_exchange_api__); its dltensor_from_py_object_no_sync
// fills a non-owning DLTensor straight from the object, without any Python call.
struct DLDeviceAbi {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataTypeAbi {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensorAbi {
  void* data;
  DLDeviceAbi device;
  std::int32_t ndim;
  DLDataTypeAbi dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct ExchangeApi {
  std::uint32_t version_major;
  std::uint32_t version_minor;
  const void* prev_api;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensorAbi* out);
  void* current_work_stream;
};

// kProbe: a type with a buffer protocol that also says it may live on a device (__dlpack_device__):
// each object is asked where it lives, the buffer protocol read only for one in host memory.
enum class Path : std::uint8_t { kGeneric, kExchange, kBuffer, kTorch, kCupy, kProbe };

struct TypeEntry {
  PyTypeObject* type = nullptr;  // a strong reference: the pointer stays this type's
  Path path = Path::kGeneric;
  const ExchangeApi* api = nullptr;
  bool torch = false;  // a torch.Tensor type: read by its attributes where the exchange API declines
  bool checked = false;  // the exchange API's reading was compared with the attributes' once
  // A type with a buffer protocol that also offers device arrays (__dlpack__, __dlpack_device__ or
  // __cuda_array_interface__), other than numpy's and the builtins': the general path never falls
  // back to its buffer protocol (cupy 14's, e.g., raises for device memory and hands managed memory
  // out as if it were host memory).
  bool guard_buffer = false;
  bool has_dlpack = false;
  bool has_cai = false;
  bool numpy = false;  // numpy.ndarray itself: its dtype read first, the buffer asked for no format
};

constexpr int kTypeCacheSize = 32;
TypeEntry g_types[kTypeCacheSize];
int g_type_count = 0;

PyObject* interned(const char* s) {
  PyObject* o = PyUnicode_InternFromString(s);
  if (o == nullptr) throw nb::python_error();
  return o;  // kept for the life of the process
}

struct Names {
  PyObject* data_ptr = interned("data_ptr");
  PyObject* shape = interned("shape");
  PyObject* strides = interned("strides");
  PyObject* dtype = interned("dtype");
  PyObject* is_cuda = interned("is_cuda");
  PyObject* is_cpu = interned("is_cpu");
  PyObject* get_device = interned("get_device");
  PyObject* is_contiguous = interned("is_contiguous");
  PyObject* stride = interned("stride");
  PyObject* data = interned("data");
  PyObject* ptr = interned("ptr");
  PyObject* device_id = interned("device_id");
  PyObject* str = interned("str");
  PyObject* c_contiguous = interned("_c_contiguous");
  PyObject* dlpack = interned("__dlpack__");
  PyObject* dlpack_device = interned("__dlpack_device__");
};

const Names& names() {
  static const Names n;
  return n;
}

/// The module `name` if it is imported (sys.modules), else null (borrowed).
PyObject* imported(const char* name) {
  PyObject* modules = PyImport_GetModuleDict();
  return modules ? PyDict_GetItemString(modules, name) : nullptr;
}

/// `module.attr` as a type, if it is one (a new reference or null; no error set).
PyTypeObject* type_attr(PyObject* module, const char* attr) {
  if (module == nullptr) return nullptr;
  PyObject* t = PyObject_GetAttrString(module, attr);
  if (t == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  if (!PyType_Check(t)) {
    Py_DECREF(t);
    return nullptr;
  }
  return reinterpret_cast<PyTypeObject*>(t);
}

const ExchangeApi* exchange_api_of(PyTypeObject* type) {
  for (const char* attr : {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"}) {
    PyObject* a = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), attr);
    if (a == nullptr) {
      PyErr_Clear();
      continue;
    }
    const ExchangeApi* api = nullptr;
    if (PyCapsule_CheckExact(a) && PyCapsule_IsValid(a, "dlpack_exchange_api")) {
      api = static_cast<const ExchangeApi*>(PyCapsule_GetPointer(a, "dlpack_exchange_api"));
    } else if (PyLong_Check(a)) {
      api = static_cast<const ExchangeApi*>(PyLong_AsVoidPtr(a));
    }
    PyErr_Clear();
    Py_DECREF(a);
    if (api != nullptr && api->version_major == 1 && api->dltensor_from_py_object_no_sync != nullptr) return api;
  }
  return nullptr;
}

bool g_use_exchange = true;

/// Whether the type (or a base) has the attribute (a method, property or class attribute).
bool type_has(PyTypeObject* type, const char* attr) {
  PyObject* a = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), attr);
  if (a == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(a);
  return true;
}

bool subtype_of(PyTypeObject* type, const char* module, const char* attr) {
  PyTypeObject* t = type_attr(imported(module), attr);
  if (t == nullptr) return false;
  const bool is = PyType_IsSubtype(type, t) != 0;
  Py_DECREF(t);
  return is;
}

/// How objects of `type` are read, decided once per type. Device array types first (the exchange
/// API, torch, cupy), so that a device array type which also has a buffer protocol (cupy 14) is
/// never read through it; the buffer protocol for numpy arrays, the builtins and types that say
/// nothing of a device; the others per object (kProbe) or by DLPack / __cuda_array_interface__.
TypeEntry classify(PyTypeObject* type) {
  TypeEntry e;
  e.type = type;
  e.torch = subtype_of(type, "torch", "Tensor");
  if (g_use_exchange && (e.api = exchange_api_of(type)) != nullptr) {
    e.path = Path::kExchange;
    return e;
  }
  if (e.torch) {
    e.path = Path::kTorch;
    return e;
  }
  if (subtype_of(type, "cupy", "ndarray")) {
    e.path = Path::kCupy;
    e.guard_buffer = e.has_dlpack = true;  // where its attributes fail: DLPack, never its buffer
    return e;
  }
  e.has_dlpack = type_has(type, "__dlpack__");
  e.has_cai = type_has(type, "__cuda_array_interface__");
  const bool has_device = type_has(type, "__dlpack_device__");
  if (type->tp_as_buffer != nullptr && type->tp_as_buffer->bf_getbuffer != nullptr) {
    PyTypeObject* np_type = type_attr(imported("numpy"), "ndarray");
    const bool is_numpy = np_type != nullptr && PyType_IsSubtype(type, np_type) != 0;
    e.numpy = np_type != nullptr && type == np_type;
    Py_XDECREF(reinterpret_cast<PyObject*>(np_type));
    const bool host_type = type == &PyMemoryView_Type || type == &PyBytes_Type || type == &PyByteArray_Type || is_numpy;
    if (host_type || (!e.has_dlpack && !e.has_cai && !has_device)) {
      e.path = Path::kBuffer;
      return e;
    }
    e.guard_buffer = true;
    if (has_device) e.path = Path::kProbe;
  }
  return e;
}

TypeEntry& entry_of(PyTypeObject* type) {
  for (int i = 0; i < g_type_count; ++i)
    if (g_types[i].type == type) return g_types[i];
  static thread_local TypeEntry uncached;
  TypeEntry e = classify(type);
  if (g_type_count < kTypeCacheSize) {
    Py_INCREF(reinterpret_cast<PyObject*>(type));
    g_types[g_type_count] = e;
    return g_types[g_type_count++];
  }
  uncached = e;
  return uncached;
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

[[noreturn]] void refuse(const Where& where, const std::string& what) {
  raise(et::ErrorCode::kInvalidArgument, where.text() + ": " + what);
}

[[noreturn, gnu::cold, gnu::noinline]] void refuse_strides(const Where& where, int i, std::int64_t stride,
                                                            std::int64_t expected) {
  refuse(where, "the array is not C-contiguous (dimension " + std::to_string(i) + " has stride " +
                    std::to_string(stride) + " elements where " + std::to_string(expected) +
                    " is needed); pass a contiguous copy (e.g. .contiguous(), numpy.ascontiguousarray)");
}

[[noreturn, gnu::cold, gnu::noinline]] void refuse_dimension(const Where& where, int i, std::int64_t n) {
  refuse(where, "dimension " + std::to_string(i) + " is " + std::to_string(n) + ", beyond ExecuTorch's sizes");
}

[[noreturn, gnu::cold, gnu::noinline]] void refuse_rank(const Where& where, int ndim) {
  refuse(where, std::to_string(ndim) + " dimensions; ExecuTorch takes at most " + std::to_string(kMaxDims));
}

/// The shape part of finish() (a.type and a.cuda already set): the array C-contiguous (dimensions of
/// one element ignored: their strides mean nothing), the sizes within ExecuTorch's. `strides` in
/// elements, or null for a contiguous array. The refusals out of line: the checks are a few
/// compares per dimension.
inline void finish_shape(ArrayArg& a, const Where& where, int ndim, const std::int64_t* shape,
                         const std::int64_t* strides) {
  if (ndim > kMaxDims) refuse_rank(where, ndim);
  if (strides != nullptr) {
    std::int64_t expected = 1;
    for (int i = ndim; i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expected) refuse_strides(where, i, strides[i], expected);
      expected *= shape[i];
    }
  }
  for (int i = 0; i < ndim; ++i) {
    if (static_cast<std::uint64_t>(shape[i]) > static_cast<std::uint64_t>(std::numeric_limits<SizesType>::max()))
      refuse_dimension(where, i, shape[i]);
    a.sizes[i] = static_cast<SizesType>(shape[i]);
  }
  a.ndim = ndim;
}

/// What every path shares once it has the raw facts: the dtype named, the device accepted, then
/// finish_shape().
void finish(ArrayArg& a, const Where& where, int ndim, const std::int64_t* shape, const std::int64_t* strides,
            dl::dtype dtype, int device_type, const char* dtype_text) {
  if (!dtype_of(dtype, a.type)) {
    if (dtype_text != nullptr) refuse(where, std::string("dtype '") + dtype_text + "' has no ExecuTorch scalar type");
    refuse(where, "dtype (DLPack code " + std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) +
                      " bits, " + std::to_string(dtype.lanes) + " lanes) has no ExecuTorch scalar type");
  }
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) {
    a.cuda = true;
  } else if (device_type == kDLCPU || device_type == kDLCUDAHost) {
    a.cuda = false;
  } else {
    refuse(where, "an array on DLPack device type " + std::to_string(device_type) + "; the program takes CPU or CUDA memory");
  }
  finish_shape(a, where, ndim, shape, strides);
}

// ---- the paths ----

/// DLPack through the C exchange API: no Python call. False (no error set) where the producer
/// declines this object; the general path then says why.
bool read_exchange(PyObject* obj, const ExchangeApi* api, ArrayArg& a, const Where& where) {
  DLTensorAbi t{};
  if (api->dltensor_from_py_object_no_sync(obj, &t) != 0) {
    PyErr_Clear();
    return false;
  }
  dl::dtype d{};
  d.code = t.dtype.code;
  d.bits = t.dtype.bits;
  d.lanes = t.dtype.lanes;
  a.data = static_cast<char*>(t.data) + t.byte_offset;
  a.device = t.device.device_id;
  finish(a, where, t.ndim, t.shape, t.strides, d, t.device.device_type, nullptr);
  return true;
}

/// The buffer protocol (numpy arrays, memoryviews): host memory.
bool read_buffer(PyObject* obj, ArrayArg& a, const Where& where, bool writable) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) != 0) {
    PyErr_Clear();
    if (writable && PyObject_GetBuffer(obj, &view, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
      PyBuffer_Release(&view);
      refuse(where, "the array is read-only; an output is written into");
    }
    PyErr_Clear();
    return false;
  }
  struct Release {
    Py_buffer* v;
    ~Release() { PyBuffer_Release(v); }
  } release{&view};
  const char* f = view.format != nullptr ? view.format : "B";
  const char* fmt_text = f;
  if (*f == '>' || *f == '!') refuse(where, std::string("dtype '") + fmt_text + "' is big-endian; pass a native-order array");
  if (*f == '@' || *f == '=' || *f == '<' || *f == '|') ++f;
  dl::dtype d{};
  d.lanes = 1;
  d.bits = static_cast<std::uint8_t>(view.itemsize * 8);
  const bool one = f[0] != '\0' && f[1] == '\0';
  switch (one ? f[0] : '\0') {
    case 'e': case 'f': case 'd': d.code = static_cast<std::uint8_t>(dl::dtype_code::Float); break;
    case 'b': case 'h': case 'i': case 'l': case 'q': d.code = static_cast<std::uint8_t>(dl::dtype_code::Int); break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': d.code = static_cast<std::uint8_t>(dl::dtype_code::UInt); break;
    case '?': d.code = static_cast<std::uint8_t>(dl::dtype_code::Bool); break;
    default: d.code = 255; break;
  }
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  if (view.ndim > kMaxDims) refuse(where, std::to_string(view.ndim) + " dimensions; ExecuTorch takes at most " + std::to_string(kMaxDims));
  for (int i = 0; i < view.ndim; ++i) {
    shape[i] = view.shape[i];
    const Py_ssize_t s = view.strides != nullptr ? view.strides[i] : 0;
    if (view.itemsize > 0 && s % view.itemsize != 0) refuse(where, "strides that are not whole elements");
    strides[i] = view.itemsize > 0 ? s / view.itemsize : 0;
  }
  a.data = view.buf;
  a.device = 0;
  finish(a, where, view.ndim, shape, view.strides != nullptr ? strides : nullptr, d, kDLCPU, fmt_text);
  return true;
}

/// A new reference to obj.name, or null with the error cleared.
PyObject* get(PyObject* obj, PyObject* name) {
  PyObject* r = PyObject_GetAttr(obj, name);
  if (r == nullptr) PyErr_Clear();
  return r;
}

PyObject* call0(PyObject* obj, PyObject* name) {
  PyObject* r = PyObject_CallMethodNoArgs(obj, name);
  if (r == nullptr) PyErr_Clear();
  return r;
}

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  explicit operator bool() const { return p != nullptr; }
};

/// A shape tuple into int64s; false if it is not one.
bool tuple_ints(PyObject* t, std::int64_t* out, int& n) {
  if (t == nullptr || !PyTuple_Check(t)) return false;
  const Py_ssize_t len = PyTuple_GET_SIZE(t);
  if (len > kMaxDims) return false;
  for (Py_ssize_t i = 0; i < len; ++i) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out[i] = v;
  }
  n = static_cast<int>(len);
  return true;
}

/// Dtype objects of a framework (torch.float32, numpy.dtype('float32'), ...) against ScalarTypes.
struct DtypeTable {
  PyObject* objects[10] = {};
  ScalarType types[10] = {};
  int count = 0;
  bool lookup(PyObject* d, ScalarType& out) const {
    for (int i = 0; i < count; ++i)
      if (objects[i] == d) {
        out = types[i];
        return true;
      }
    return false;
  }
};

constexpr struct {
  const char* name;
  ScalarType type;
} kDtypes[] = {{"float32", ScalarType::Float}, {"float16", ScalarType::Half},   {"bfloat16", ScalarType::BFloat16},
               {"float64", ScalarType::Double}, {"int8", ScalarType::Char},    {"uint8", ScalarType::Byte},
               {"int16", ScalarType::Short},    {"int32", ScalarType::Int},    {"int64", ScalarType::Long},
               {"bool", ScalarType::Bool}};

const DtypeTable& torch_dtypes() {
  static DtypeTable t = [] {
    DtypeTable table;
    PyObject* torch = imported("torch");
    for (const auto& d : kDtypes) {
      PyObject* o = torch ? PyObject_GetAttrString(torch, d.name) : nullptr;
      if (o == nullptr) {
        PyErr_Clear();
        continue;
      }
      table.objects[table.count] = o;  // kept: torch's dtypes live as long as torch
      table.types[table.count++] = d.type;
    }
    return table;
  }();
  return t;
}

const DtypeTable& numpy_dtypes() {
  static DtypeTable t = [] {
    DtypeTable table;
    PyObject* np = imported("numpy");
    PyObject* dtype = np ? PyObject_GetAttrString(np, "dtype") : nullptr;
    if (dtype == nullptr) {
      PyErr_Clear();
      return table;
    }
    for (const auto& d : kDtypes) {
      if (d.type == ScalarType::BFloat16) continue;
      PyObject* o = PyObject_CallFunction(dtype, "s", d.name);
      if (o == nullptr) {
        PyErr_Clear();
        continue;
      }
      table.objects[table.count] = o;
      table.types[table.count++] = d.type;
    }
    Py_DECREF(dtype);
    return table;
  }();
  return t;
}

/// How many GPUs the process sees (-1 where CUDA cannot say), asked once.
int device_count() {
  static const int devices = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      n = -1;
    }
    return n;
  }();
  return devices;
}

/// A torch tensor through its own C-implemented attributes (data_ptr(), shape, dtype, is_cuda,
/// get_device(), is_contiguous()): a few attribute reads, no DLPack capsule. False where any read
/// fails (a sparse or meta tensor ...): the general path then says what is wrong.
bool read_torch(PyObject* obj, ArrayArg& a, const Where& where) {
  const Names& n = names();
  Ref dtype(get(obj, n.dtype));
  if (!dtype || !torch_dtypes().lookup(dtype.p, a.type)) return false;
  Ref is_cuda(get(obj, n.is_cuda));
  if (!is_cuda) return false;
  a.cuda = is_cuda.p == Py_True;
  a.device = 0;
  if (a.cuda) {
    // One GPU: device 0 without asking (a read less per tensor).
    if (device_count() != 1) {
      Ref dev(call0(obj, n.get_device));
      if (!dev) return false;
      a.device = static_cast<int>(PyLong_AsLong(dev.p));
    }
  } else {
    Ref is_cpu(get(obj, n.is_cpu));
    if (!is_cpu || is_cpu.p != Py_True) return false;  // mps, meta, xpu ...: the general path refuses
  }
  Ref shape(get(obj, n.shape));
  std::int64_t dims[kMaxDims];
  int ndim = 0;
  if (!tuple_ints(shape.p, dims, ndim)) return false;
  Ref contiguous(call0(obj, n.is_contiguous));
  if (!contiguous) return false;
  std::int64_t st[kMaxDims];
  const bool strided = contiguous.p != Py_True;
  if (strided) {
    Ref stride(call0(obj, n.stride));
    int sn = 0;
    if (!tuple_ints(stride.p, st, sn) || sn != ndim) return false;
  }
  Ref ptr(call0(obj, n.data_ptr));
  if (!ptr) return false;
  a.data = PyLong_AsVoidPtr(ptr.p);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  // Strided: finish() names the dimension that is not C-contiguous (torch's is_contiguous() and
  // the check here agree but for dimensions of one element, which finish() ignores).
  finish_shape(a, where, ndim, dims, strided ? st : nullptr);  // a.type and a.cuda set above
  return true;
}

/// A cupy array through its own attributes: data (its MemoryPointer) .ptr and .device_id (only on
/// a machine of more than one GPU), dtype, shape, and _c_contiguous (strides only where it is not,
/// or where this cupy has no such attribute). No DLPack capsule, no __cuda_array_interface__ dict,
/// never its buffer protocol (cupy 14 raises there for device memory).
/// An attribute of objects of one type read through its descriptor, found once: a C-level data
/// descriptor (a getset or member descriptor, as Cython's cdef attributes and properties are) takes
/// precedence over anything else by Python's rules, so calling it directly reads what getattr
/// would, without the lookup through the type's MRO on every read. Any other type, or a name that
/// is no such descriptor, goes through getattr. Used with the GIL held.
class FastAttr {
 public:
  explicit FastAttr(PyObject* name) : name_(name) {}
  /// A new reference to obj.<name>, or null with the error cleared.
  PyObject* get(PyObject* obj) {
    PyTypeObject* t = Py_TYPE(obj);
    if (t != type_) resolve(t);
    if (member_ != nullptr && (member_->type == T_OBJECT || member_->type == T_OBJECT_EX)) {
      // An object member (Cython's `cdef readonly object`): the field itself, as the descriptor
      // would read it; an empty one through the descriptor (None or its AttributeError).
      PyObject* v = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + member_->offset);
      if (v != nullptr) {
        Py_INCREF(v);
        return v;
      }
    }
    PyObject* r = desc_ != nullptr ? Py_TYPE(desc_)->tp_descr_get(desc_, obj, reinterpret_cast<PyObject*>(t))
                                   : PyObject_GetAttr(obj, name_);
    if (r == nullptr) PyErr_Clear();
    return r;
  }

  /// obj.<name> as an integer: an integer member (Cython's `cdef readonly intptr_t/int/bint`) read
  /// from its field, without a Python int made; anything else through get(). False (no error set)
  /// where it is no integer.
  bool get_int(PyObject* obj, std::int64_t& out) {
    PyTypeObject* t = Py_TYPE(obj);
    if (t != type_) resolve(t);
    if (member_ != nullptr) {
      const char* f = reinterpret_cast<const char*>(obj) + member_->offset;
      switch (member_->type) {
        case T_LONG: out = *reinterpret_cast<const long*>(f); return true;
        case T_LONGLONG: out = *reinterpret_cast<const long long*>(f); return true;
        case T_PYSSIZET: out = *reinterpret_cast<const Py_ssize_t*>(f); return true;
        case T_INT: out = *reinterpret_cast<const int*>(f); return true;
        case T_BOOL: out = *reinterpret_cast<const char*>(f) != 0; return true;
        default: break;  // unsigned, short, char ...: through the descriptor
      }
    }
    PyObject* r = get(obj);
    if (r == nullptr) return false;
    bool ok = true;
    if (r == Py_True || r == Py_False) {
      out = r == Py_True;
    } else if (PyLong_Check(r)) {
      out = PyLong_AsLongLong(r);
      if (out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        ok = false;
      }
    } else {
      ok = false;
    }
    Py_DECREF(r);
    return ok;
  }

 private:
  void resolve(PyTypeObject* t) {
    Py_XDECREF(desc_);
    desc_ = nullptr;
    member_ = nullptr;
    Py_XDECREF(reinterpret_cast<PyObject*>(type_));
    Py_INCREF(reinterpret_cast<PyObject*>(t));
    type_ = t;
    PyObject* d = PyObject_GetAttr(reinterpret_cast<PyObject*>(t), name_);
    if (d == nullptr) {
      PyErr_Clear();
      return;
    }
    const bool data_descriptor = (PyObject_TypeCheck(d, &PyGetSetDescr_Type) || PyObject_TypeCheck(d, &PyMemberDescr_Type)) &&
                                 Py_TYPE(d)->tp_descr_get != nullptr;
    if (data_descriptor) {
      desc_ = d;  // kept with its type
      if (Py_TYPE(d) == &PyMemberDescr_Type) {
        PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d)->d_member;
        if (m != nullptr && (m->flags & READ_RESTRICTED) == 0 && m->offset >= 0 &&
            m->offset + static_cast<Py_ssize_t>(sizeof(void*)) <= t->tp_basicsize)
          member_ = m;  // read from the object's field (get, get_int)
      }
    } else {
      Py_DECREF(d);
    }
  }
  PyObject* name_;
  PyTypeObject* type_ = nullptr;
  PyObject* desc_ = nullptr;
  PyMemberDef* member_ = nullptr;  // desc_'s member, where it is a plain member descriptor
};

struct CupyAttrs {
  FastAttr data{names().data}, ptr{names().ptr}, device_id{names().device_id}, dtype{names().dtype},
      shape{names().shape}, c_contiguous{names().c_contiguous}, strides{names().strides};
};

CupyAttrs& cupy_attrs() {
  static CupyAttrs* a = new CupyAttrs();  // never destroyed: references outlive the interpreter's end
  return *a;
}

bool read_cupy_attrs(PyObject* obj, ArrayArg& a, const Where& where) {
  CupyAttrs& n = cupy_attrs();
  Ref mem(n.data.get(obj));
  if (!mem || mem.p == Py_None) return false;
  std::int64_t value = 0;
  if (!n.ptr.get_int(mem.p, value)) return false;  // MemoryPointer.ptr: read from its field, no int made
  a.data = reinterpret_cast<void*>(static_cast<std::intptr_t>(value));
  a.device = 0;
  if (device_count() != 1) {
    if (!n.device_id.get_int(mem.p, value) || value < 0 || value > std::numeric_limits<int>::max()) return false;
    a.device = static_cast<int>(value);
  }
  Ref dtype(n.dtype.get(obj));
  if (!dtype || !numpy_dtypes().lookup(dtype.p, a.type)) return false;  // the general path names it
  Ref shape(n.shape.get(obj));
  std::int64_t dims[kMaxDims], st[kMaxDims];
  int ndim = 0;
  if (!tuple_ints(shape.p, dims, ndim)) return false;
  std::int64_t contiguous = 0;
  const bool strided = !n.c_contiguous.get_int(obj, contiguous) || contiguous == 0;
  if (strided) {
    Ref strides(n.strides.get(obj));
    int sn = 0;
    if (!tuple_ints(strides.p, st, sn) || sn != ndim) return false;
    const std::int64_t es = static_cast<std::int64_t>(element_size(a.type));
    for (int i = 0; i < ndim; ++i) {
      if (st[i] % es != 0) refuse(where, "strides that are not whole elements");
      st[i] /= es;
    }
  }
  a.cuda = true;
  finish_shape(a, where, ndim, dims, strided ? st : nullptr);
  return true;
}

/// cupy 14's ndarray and MemoryPointer as their Cython classes lay them out (cupy/_core/core.pxd:
/// after the object header and the vtable pointer, __weakref__, size, _shape and _strides (C++
/// vectors of Py_ssize_t), _c_contiguous, _f_contiguous, _index_32_bits (bints), dtype, data, base;
/// a MemoryPointer holds ptr, device_id and mem). Every offset is taken only after the first array
/// of the type was read both ways and agreed field by field (calibrate()); each read then checks
/// what it can (the MemoryPointer's type, the dtype, the rank, the shape's product against size)
/// and goes through the attributes on any doubt. Reading the fields costs no Python object: the
/// attributes make a MemoryPointer reference, an int, a list and a tuple per array.
struct CupyLayout {
  bool tried = false;  // calibrated once, with the first array read through the attributes
  bool ok = false;
  PyTypeObject* type = nullptr;     // the ndarray type calibrated (a strong reference)
  PyTypeObject* mp_type = nullptr;  // its MemoryPointer type (a strong reference)
  Py_ssize_t size = 0, shape = 0, strides = 0, c_contiguous = 0, dtype = 0, data = 0, ptr = 0;
};

CupyLayout& cupy_layout() {
  static CupyLayout* l = new CupyLayout();  // never destroyed, as the attributes
  return *l;
}

/// A C++ vector<Py_ssize_t> of libstdc++ (begin, end, capacity) at `p`: its elements, or null
/// where it does not look like one of at most kMaxDims elements.
const Py_ssize_t* vector_at(const char* p, int& n) {
  const auto* begin = *reinterpret_cast<const Py_ssize_t* const*>(p);
  const auto* end = *reinterpret_cast<const Py_ssize_t* const*>(p + sizeof(void*));
  if (end < begin || end - begin > kMaxDims || (begin == nullptr && end != nullptr)) return nullptr;
  n = static_cast<int>(end - begin);
  return begin != nullptr ? begin : reinterpret_cast<const Py_ssize_t*>(p);  // empty: any non-null
}

/// The layout checked against what the attributes read of `obj` (its dtype, shape, strides,
/// _c_contiguous, size, data and data.ptr): every field at its offset agrees, or the fields are
/// never read.
void calibrate(CupyLayout& l, PyObject* obj, const ArrayArg& a) {
  if (a.ndim == 0 || a.numel() == 0) return;  // too little to tell the fields apart: the next array
  l.tried = true;
  PyTypeObject* t = Py_TYPE(obj);
  const Py_ssize_t w = t->tp_weaklistoffset;
  if (w != 3 * static_cast<Py_ssize_t>(sizeof(void*)) || t->tp_basicsize != 128) return;  // cupy 14's
  CupyLayout c;
  c.size = w + 8;
  c.shape = w + 16;
  c.strides = w + 16 + 24;
  c.c_contiguous = w + 16 + 48;
  c.dtype = w + 80;
  c.data = w + 88;
  const char* o = reinterpret_cast<const char*>(obj);
  CupyAttrs& n = cupy_attrs();
  Ref data(n.data.get(obj)), dtype(n.dtype.get(obj)), strides(n.strides.get(obj));
  std::int64_t contiguous = -1, size = -1;
  static FastAttr* size_attr = new FastAttr(interned("size"));
  if (!data || !dtype || !strides || !n.c_contiguous.get_int(obj, contiguous) || !size_attr->get_int(obj, size)) return;
  if (*reinterpret_cast<PyObject* const*>(o + c.data) != data.p || *reinterpret_cast<PyObject* const*>(o + c.dtype) != dtype.p)
    return;
  if (*reinterpret_cast<const Py_ssize_t*>(o + c.size) != size || size != a.numel()) return;
  if ((*reinterpret_cast<const int*>(o + c.c_contiguous) != 0) != (contiguous != 0)) return;
  int nd = 0, ns = 0;
  const Py_ssize_t* shape = vector_at(o + c.shape, nd);
  const Py_ssize_t* st = vector_at(o + c.strides, ns);
  std::int64_t st_attr[kMaxDims];
  int na = 0;
  if (shape == nullptr || st == nullptr || nd != a.ndim || ns != a.ndim || !tuple_ints(strides.p, st_attr, na) ||
      na != a.ndim)
    return;
  for (int d = 0; d < a.ndim; ++d)
    if (shape[d] != a.sizes[d] || st[d] != st_attr[d]) return;
  // MemoryPointer: the one place among its fields that holds data.ptr.
  PyTypeObject* mt = Py_TYPE(data.p);
  if (mt->tp_basicsize != 48) return;
  int found = 0;
  for (Py_ssize_t off = 24; off + 8 <= 48; off += 8)
    if (*reinterpret_cast<const std::intptr_t*>(reinterpret_cast<const char*>(data.p) + off) ==
        reinterpret_cast<std::intptr_t>(a.data)) {
      c.ptr = off;
      ++found;
    }
  if (found != 1) return;
  c.tried = c.ok = true;
  Py_INCREF(reinterpret_cast<PyObject*>(t));
  Py_INCREF(reinterpret_cast<PyObject*>(mt));
  c.type = t;
  c.mp_type = mt;
  l = c;
}

/// A cupy array of the calibrated type read from its fields; false (nothing set that matters)
/// wherever a check fails: the attributes then read it.
bool read_cupy_fields(PyObject* obj, ArrayArg& a, const Where& where, const CupyLayout& l) {
  const char* o = reinterpret_cast<const char*>(obj);
  PyObject* mem = *reinterpret_cast<PyObject* const*>(o + l.data);
  PyObject* dtype = *reinterpret_cast<PyObject* const*>(o + l.dtype);
  if (mem == nullptr || Py_TYPE(mem) != l.mp_type || dtype == nullptr || !numpy_dtypes().lookup(dtype, a.type))
    return false;
  int ndim = 0;
  const Py_ssize_t* shape = vector_at(o + l.shape, ndim);
  if (shape == nullptr) return false;
  std::int64_t dims[kMaxDims], st[kMaxDims];
  std::int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    dims[d] = shape[d];
    if (dims[d] < 0) return false;
    numel *= dims[d];
  }
  if (numel != *reinterpret_cast<const Py_ssize_t*>(o + l.size)) return false;
  const bool strided = *reinterpret_cast<const int*>(o + l.c_contiguous) == 0;
  if (strided) {
    int ns = 0;
    const Py_ssize_t* s = vector_at(o + l.strides, ns);
    if (s == nullptr || ns != ndim) return false;
    const std::int64_t es = static_cast<std::int64_t>(element_size(a.type));
    for (int d = 0; d < ndim; ++d) {
      if (s[d] % es != 0) return false;  // the attributes' path names it
      st[d] = s[d] / es;
    }
  }
  a.data = reinterpret_cast<void*>(*reinterpret_cast<const std::intptr_t*>(reinterpret_cast<const char*>(mem) + l.ptr));
  a.device = 0;
  if (device_count() != 1) {
    std::int64_t value = 0;
    if (!cupy_attrs().device_id.get_int(mem, value) || value < 0 || value > std::numeric_limits<int>::max()) return false;
    a.device = static_cast<int>(value);
  }
  a.cuda = true;
  finish_shape(a, where, ndim, dims, strided ? st : nullptr);
  return true;
}

bool read_cupy(PyObject* obj, ArrayArg& a, const Where& where) {
  CupyLayout& l = cupy_layout();
  if (l.ok && Py_TYPE(obj) == l.type && read_cupy_fields(obj, a, where, l)) return true;
  if (!read_cupy_attrs(obj, a, where)) return false;
  if (!l.tried) calibrate(l, obj, a);
  return true;
}


/// numpy's array object as its public headers lay it out (PyArrayObject_fields: what PyArray_DATA,
/// PyArray_NDIM, PyArray_DIMS, PyArray_STRIDES, PyArray_DESCR and PyArray_FLAGS read in every
/// compiled extension, the same in numpy 1.x and 2.x).
struct NumpyArrayAbi {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};
constexpr unsigned kNpyWriteable = 0x0400u;      // NPY_ARRAY_WRITEABLE
constexpr unsigned kNpyWarnOnWrite = 1u << 31;   // numpy's internal warn-on-write (broadcast views)
bool g_numpy_struct = true;  // cleared where the first array read disagrees with its buffer protocol

/// A numpy.ndarray (the type itself) read from its object's fields: no buffer protocol, no Python
/// call. Only for the dtypes numpy shares as its native-order singletons (numpy.dtype("float32")
/// ...) and where nothing needs saying; anything else (another dtype object, a read-only array for
/// an output, more dimensions than ExecuTorch's) through read_buffer, which names what is wrong.
/// The first array is read both ways: where they disagree, numpy is read by its buffer protocol
/// from then on, and stderr says why.
bool read_numpy(PyObject* obj, ArrayArg& a, const Where& where, bool writable) {
  const auto* n = reinterpret_cast<const NumpyArrayAbi*>(obj);
  const unsigned flags = static_cast<unsigned>(n->flags);
  if (!g_numpy_struct || Py_TYPE(obj)->tp_basicsize < static_cast<Py_ssize_t>(sizeof(NumpyArrayAbi)) ||
      !numpy_dtypes().lookup(n->descr, a.type) || (writable && (flags & kNpyWriteable) == 0) ||
      (flags & kNpyWarnOnWrite) != 0 || n->nd < 0 || n->nd > kMaxDims)
    return read_buffer(obj, a, where, writable);
  const std::int64_t es = static_cast<std::int64_t>(element_size(a.type));
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  for (int i = 0; i < n->nd; ++i) {
    shape[i] = n->dimensions[i];
    const std::int64_t s = n->strides[i];
    if (s % es != 0) return read_buffer(obj, a, where, writable);  // names it
    strides[i] = s / es;
  }
  a.data = n->data;
  a.device = 0;
  a.cuda = false;
  finish_shape(a, where, n->nd, shape, strides);
  static bool checked = false;
  if (!checked) {
    checked = true;
    ArrayArg b{};
    b.obj = obj;
    bool same = false;
    try {
      same = read_buffer(obj, b, where, writable) && a.data == b.data && a.type == b.type && a.ndim == b.ndim;
      for (int d = 0; same && d < a.ndim; ++d) same = a.sizes[d] == b.sizes[d];
    } catch (const PyError&) {
      same = false;
    }
    if (!same) {
      std::fprintf(stderr, "torchtrt_executorch: numpy.ndarray's fields read differently from its buffer protocol "
                   "(data %p/%p, rank %d/%d); reading it through its buffer protocol\n", a.data, b.data, a.ndim, b.ndim);
      g_numpy_struct = false;
      a.data = nullptr;
      a.ndim = 0;
      return read_buffer(obj, a, where, writable);
    }
  }
  return true;
}

/// Where an object of a kProbe type says it lives: its __dlpack_device__()'s device type, or -1.
int probe_device(PyObject* obj) {
  Ref d(call0(obj, names().dlpack_device));
  if (!d || !PyTuple_Check(d.p) || PyTuple_GET_SIZE(d.p) < 1) return -1;
  const long t = PyLong_AsLong(PyTuple_GET_ITEM(d.p, 0));
  if (t == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return -1;
  }
  return static_cast<int>(t);
}

void read_ndarray(const nb::ndarray<>& arr, ArrayArg& a, const Where& where) {
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  const int ndim = static_cast<int>(arr.ndim());
  if (ndim > kMaxDims) refuse(where, std::to_string(ndim) + " dimensions; ExecuTorch takes at most " + std::to_string(kMaxDims));
  for (int i = 0; i < ndim; ++i) {
    shape[i] = static_cast<std::int64_t>(arr.shape(static_cast<std::size_t>(i)));
    strides[i] = arr.stride(static_cast<std::size_t>(i));
  }
  a.data = arr.data();
  a.device = arr.device_id();
  finish(a, where, ndim, shape, strides, arr.dtype(), arr.device_type(), nullptr);
}

void read_cai(PyObject* obj, ArrayArg& a, const Where& where) {
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  nb::handle h(obj);
  nb::dict cai = nb::cast<nb::dict>(h.attr("__cuda_array_interface__"));
  nb::tuple data = nb::cast<nb::tuple>(cai["data"]);
  a.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(data[0]));
  int ndim = 0;
  for (nb::handle d : nb::cast<nb::tuple>(cai["shape"])) {
    if (ndim == kMaxDims) refuse(where, "more than " + std::to_string(kMaxDims) + " dimensions");
    shape[ndim++] = nb::cast<std::int64_t>(d);
  }
  const std::string typestr = nb::cast<std::string>(cai["typestr"]);
  if (typestr.size() < 3 || (typestr[0] != '<' && typestr[0] != '|'))
    refuse(where, "__cuda_array_interface__ typestr '" + typestr + "' is not a little-endian type");
  const char kind = typestr[1];
  const int bytes = std::atoi(typestr.c_str() + 2);
  dl::dtype dtype{};
  dtype.lanes = 1;
  dtype.bits = static_cast<std::uint8_t>(bytes * 8);
  dtype.code = static_cast<std::uint8_t>(kind == 'f' ? dl::dtype_code::Float : kind == 'i' ? dl::dtype_code::Int
                                         : kind == 'u' ? dl::dtype_code::UInt : kind == 'b' ? dl::dtype_code::Bool
                                         : dl::dtype_code::Complex);
  const std::int64_t es = bytes > 0 ? bytes : 1;
  bool have_strides = false;
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    int i = 0;
    for (nb::handle s : nb::cast<nb::tuple>(cai["strides"])) {
      const std::int64_t b = nb::cast<std::int64_t>(s);
      if (b % es != 0) refuse(where, "strides that are not whole elements");
      if (i < kMaxDims) strides[i++] = b / es;
    }
    have_strides = i == ndim;
  }
  int device_type = kDLCUDA;
  a.device = 0;
  cudaPointerAttributes attr{};
  if (a.data != nullptr && cudaPointerGetAttributes(&attr, a.data) == cudaSuccess) {
    a.device = attr.device;
    if (attr.type == cudaMemoryTypeHost) device_type = kDLCUDAHost;
  } else {
    (void)cudaGetLastError();
  }
  finish(a, where, ndim, shape, have_strides ? strides : nullptr, dtype, device_type, typestr.c_str());
}

[[noreturn]] void refuse_not_array(nb::handle h, const Where& where) {
  refuse(where, nb::cast<std::string>(nb::str(h.type())) +
                    " is not an array (numpy, DLPack (__dlpack__) or __cuda_array_interface__)");
}

/// The general path: DLPack (__dlpack__, through nanobind), else __cuda_array_interface__. For a
/// type whose buffer protocol is guarded (a device array type with one), DLPack is asked for its
/// capsule here, so that nanobind cannot fall back to the buffer protocol, and an object without
/// __dlpack__ is read by its __cuda_array_interface__.
void read_generic(PyObject* obj, ArrayArg& a, const Where& where, const TypeEntry& e) {
  nb::handle h(obj);
  if (e.guard_buffer) {
    if (e.has_dlpack) {
      nb::object capsule = nb::steal(PyObject_CallMethodNoArgs(obj, names().dlpack));
      if (!capsule.is_valid()) throw nb::python_error();
      nb::ndarray<> arr;
      if (!nb::try_cast<nb::ndarray<>>(capsule, arr, /*convert=*/false))
        refuse(where, nb::cast<std::string>(nb::str(h.type())) + ".__dlpack__() gave no DLPack capsule that can be read");
      read_ndarray(arr, a, where);
      return;
    }
    if (!e.has_cai) refuse_not_array(h, where);
    read_cai(obj, a, where);
    return;
  }
  nb::ndarray<> arr;
  if (nb::try_cast<nb::ndarray<>>(h, arr, /*convert=*/false)) {
    read_ndarray(arr, a, where);
    return;
  }
  if (!nb::hasattr(h, "__cuda_array_interface__")) refuse_not_array(h, where);
  read_cai(obj, a, where);
}

const char* path_name(Path p) {
  switch (p) {
    case Path::kExchange: return "exchange-api";
    case Path::kBuffer: return "buffer";
    case Path::kTorch: return "torch";
    case Path::kCupy: return "cupy";
    default: return "dlpack";
  }
}

}  // namespace

std::string Where::text() const {
  return std::string(kind) + " " + std::to_string(index) + (name && !name->empty() ? " (" + *name + ")" : "");
}

/// The first torch tensor read through the exchange API is read through its attributes too: where
/// the two disagree (a producer whose ABI is not the one declared here), the type is read through
/// its attributes from then on, and stderr says why.
void check_exchange_once(TypeEntry& e, PyObject* obj, const ArrayArg& a, const Where& where) {
  e.checked = true;
  ArrayArg b{};
  b.obj = obj;
  if (!read_torch(obj, b, where)) return;
  bool same = a.data == b.data && a.type == b.type && a.ndim == b.ndim && a.cuda == b.cuda && a.device == b.device;
  for (int d = 0; same && d < a.ndim; ++d) same = a.sizes[d] == b.sizes[d];
  if (!same) {
    std::fprintf(stderr, "torchtrt_executorch: %s's DLPack C exchange API read differently from its attributes "
                 "(data %p/%p, rank %d/%d); reading it through its attributes\n", e.type->tp_name, a.data, b.data,
                 a.ndim, b.ndim);
    e.path = Path::kTorch;
  }
}

void read_array(PyObject* obj, ArrayArg& a, const Where& where, bool writable) {
  // Every field a path reads or a call uses set (sizes are read only below ndim): no clearing of
  // the whole struct per array.
  a.data = nullptr;
  a.type = ScalarType::Float;
  a.ndim = 0;
  a.cuda = false;
  a.device = 0;
  a.obj = obj;
  TypeEntry& e = entry_of(Py_TYPE(obj));
  switch (e.path) {
    case Path::kExchange:
      if (read_exchange(obj, e.api, a, where)) {
        if (e.torch && !e.checked) check_exchange_once(e, obj, a, where);
        return;
      }
      if (e.torch && (a = ArrayArg{}, a.obj = obj, read_torch(obj, a, where))) return;
      break;
    case Path::kBuffer:
      if (e.numpy ? read_numpy(obj, a, where, writable) : read_buffer(obj, a, where, writable)) return;
      break;
    case Path::kTorch:
      if (read_torch(obj, a, where)) return;
      break;
    case Path::kCupy:
      if (read_cupy(obj, a, where)) return;
      break;
    case Path::kProbe: {
      const int t = probe_device(obj);
      if ((t == kDLCPU || t == kDLCUDAHost) && read_buffer(obj, a, where, writable)) return;
      break;
    }
    case Path::kGeneric: break;
  }
  a = ArrayArg{};
  a.obj = obj;
  read_generic(obj, a, where, e);
}

const char* array_path(nb::handle obj) {
  const TypeEntry& e = entry_of(Py_TYPE(obj.ptr()));
  Path p = e.path;
  if (p == Path::kProbe) {
    const int t = probe_device(obj.ptr());
    if (t == kDLCPU || t == kDLCUDAHost) return "buffer";
    p = Path::kGeneric;
  }
  if (p != Path::kGeneric) return path_name(p);
  if (e.guard_buffer) return e.has_dlpack ? "dlpack" : e.has_cai ? "cuda-array-interface" : "none";
  nb::ndarray<> arr;
  if (nb::try_cast<nb::ndarray<>>(obj, arr, false)) return "dlpack";
  if (nb::hasattr(obj, "__cuda_array_interface__")) return "cuda-array-interface";
  return "none";
}

void use_exchange_api(bool on) {
  g_use_exchange = on;
  for (int i = 0; i < g_type_count; ++i) Py_DECREF(reinterpret_cast<PyObject*>(g_types[i].type));
  g_type_count = 0;
}

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

std::string shape_text(const SizesType* s, int ndim) {
  std::string t = "[";
  for (int i = 0; i < ndim; ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace trtet_py
