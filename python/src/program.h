// Program: a .pte loaded with ExecuTorch's Module, its methods called with numpy, torch, cupy,
// DLPack and __cuda_array_interface__ arrays without a copy (docs/PYTHON.md). Loading, methods and
// profiling in program.cpp; a call's arguments, run and results in program_call.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor_ptr.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "arrays.h"
#include "common.h"

namespace trtet_py {

using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;
using ::executorch::runtime::Method;

struct IoInfo {
  bool tensor = false;
  ScalarType type = ScalarType::Float;
  std::vector<SizesType> sizes;  // the program's shape: the upper bound of a dynamic one
  bool planned = false;
  bool dynamic = false;  // the shape may change (DYNAMIC_BOUND): within `sizes`, dimension by dimension
  std::string name;
  std::size_t bound_bytes = 0;
  std::int64_t bound_numel = 0;
};

/// A loaded method: its ExecuTorch Method (owned by the Module) and what the calls check against,
/// read once at load.
struct MethodInfo {
  std::string name;
  Method* method = nullptr;
  std::vector<IoInfo> inputs, outputs;
  /// Output shapes the engine produced for input shapes seen before (keyed by the input shapes),
  /// so a passed output smaller than the bound is checked before the engine writes it. Guarded by
  /// the program's mutex.
  std::unordered_map<std::string, std::vector<std::vector<SizesType>>> learned;
};

/// What the module needs to stay alive for: the Program, and every device output view of it.
struct Loaded {
  std::unique_ptr<Module> module;
  etr::EventTracer* tracer = nullptr;
};

std::string io_name(const IoInfo& io, const char* kind, std::size_t i);

/// A call's arguments, read and checked: inputs, then one entry per output (obj null: none given).
/// `refs` holds the objects for a bound call; a plain call's arguments are held by the caller.
struct CallArgs {
  std::vector<ArrayArg> in, out;
  std::vector<nb::object> refs;
  int alloc_device = -1;  // the device of the first device input (allocated outputs go there), else -1
};

class Program {
 public:
  Program(const std::string& path, nb::dict options, const std::string& etdump_path, bool load_methods);

  ~Program();

  const std::vector<std::string>& method_names() const { return method_names_; }
  const std::string& path() const { return path_; }
  bool closed() const { return loaded_ == nullptr; }

  /// The method, loaded on first use (NotFound for a name the program has not).
  std::shared_ptr<MethodInfo> load_method(const std::string& name);

  nb::list io_specs(const std::string& name, bool inputs);

  /// Reads and checks the arguments of a call of `mi` (borrowed: the caller holds the objects).
  void prepare(const MethodInfo& mi, PyObject* const* inputs, std::size_t n_in, PyObject* outputs, CallArgs& args);

  /// Runs a call with the GIL released; returns one value per output (a passed output as given;
  /// an allocated one as a DLPack array on the inputs' device, or numpy; a planned host output as
  /// a numpy copy; a planned device output as a DLPack view of the program's memory).
  nb::list run(MethodInfo& mi, CallArgs& args, bool keep_args);

  /// A plain call: the arguments read into this thread's reused CallArgs, then run.
  nb::list call(MethodInfo& mi, PyObject* const* inputs, std::size_t n_in, PyObject* outputs);

  /// The benchmark's C++ references, each `n` calls without Python on the same arrays, in mean
  /// host microseconds per call: "module" (ExecuTorch's Module set_input/set_output/execute, as a
  /// C++ application writes it) and "package" (this package's own path: what a Python call runs
  /// once its arrays are read).
  nb::dict time_cpp(MethodInfo& mi, nb::sequence inputs, nb::object outputs, int n);

  /// The benchmark's split of "Python adds": mean host microseconds of reading and checking the
  /// call's arrays (prepare), `n` times in C++ with the GIL held, no Python call around it.
  double time_prepare(MethodInfo& mi, nb::sequence inputs, nb::object outputs, int n);

  std::size_t flush_profiling();

  /// Flushes and writes the ETDump file; the tracer takes no more events after this (later calls
  /// are refused). Returns the calls whose GPU times were still unknown.
  std::size_t write_etdump();

  void close() { close_impl(); }

  bool profiling() const { return loaded_ && loaded_->tracer != nullptr; }
  bool etdump_written() const { return etdump_written_; }

 private:
  void close_impl();

  Module& live() { return *live_loaded().module; }
  Loaded& live_loaded();

  std::string path_, etdump_path_;
  std::shared_ptr<Loaded> loaded_;
  std::vector<std::string> method_names_;
  std::map<std::string, std::shared_ptr<MethodInfo>> methods_;
  std::vector<nb::object> last_args_;
  std::mutex mu_;
  bool etdump_written_ = false;
};

/// Live allocated device outputs (the package's own memory, not yet freed) and the bytes the
/// package's pool of `device` holds (reserved) and hands out (used): what the tests check.
nb::dict output_memory_stats(int device);

/// Test only: the package's pool of `device` gives back every byte it holds unused (its frees
/// complete), so the next allocations come from fresh memory, where a block just freed is reused.
void trim_output_pool(int device);

/// Test only: plants a known bug ("early-free") or removes it (""), so a test is seen to catch it.
void plant(const std::string& bug);

}  // namespace trtet_py
