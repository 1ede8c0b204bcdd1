// Program: a .pte loaded with ExecuTorch's Module, its methods called with numpy, DLPack and
// __cuda_array_interface__ arrays without a copy (docs/PYTHON.md, "Arrays"). Loading, methods and
// profiling in program.cpp; a call's arguments and results in program_call.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor_ptr.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arrays.h"
#include "common.h"

namespace trtet_py {

using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;

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

std::string io_name(const IoInfo& io, const char* kind, std::size_t i);

class Program {
 public:
  Program(const std::string& path, nb::dict options, const std::string& etdump_path, bool load_methods);

  ~Program();

  const std::vector<std::string>& method_names() const { return method_names_; }
  const std::string& path() const { return path_; }
  bool closed() const { return loaded_ == nullptr; }

  MethodInfo& load_method(const std::string& name);

  nb::list io_specs(const std::string& name, bool inputs);

  /// A call's arguments, checked, as tensors over the arrays' own memory (no copy).
  struct Prepared {
    std::string name;
    std::vector<ArrayArg> in, out;
    std::vector<bool> given;
    std::vector<TensorPtr> tin, tout;
  };

  /// Checks the inputs (and preallocated outputs) against the method and makes their tensors.
  std::shared_ptr<Prepared> prepare(const std::string& name, nb::sequence inputs, nb::object outputs);

  /// Runs a prepared call with the GIL released; outputs returned (given outputs as given; host
  /// outputs as numpy copies; device outputs the program planned as DLPack views of its memory).
  nb::list run(const Prepared& pr, bool keep_args);

  nb::list call(const std::string& name, nb::sequence inputs, nb::object outputs) {
    std::shared_ptr<Prepared> pr = prepare(name, inputs, outputs);
    return run(*pr, true);
  }

  /// The benchmark's C++ reference: the last call's set_input/execute repeated `n` times without
  /// Python (the same tensors), returning the mean host microseconds per call.
  double time_cpp(const std::string& name, nb::sequence inputs, nb::object outputs, int n);

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

  static void check_against(const ArrayArg& a, const IoInfo& io, const std::string& what);

  static TensorPtr make(const ArrayArg& a);

  /// Whether an output lives in device memory: its tensor's device, or, for a tensor tagged CPU,
  /// what CUDA says of its pointer (never read device memory with memcpy).
  static bool on_device(const ::executorch::aten::Tensor& t);

  static int device_of(const ::executorch::aten::Tensor& t);

  nb::object export_tensor(const ::executorch::aten::Tensor& t, std::vector<std::uint8_t>& host);

  std::string path_, etdump_path_;
  std::shared_ptr<Loaded> loaded_;
  std::vector<std::string> method_names_;
  std::map<std::string, MethodInfo> methods_;
  std::vector<nb::object> last_args_;
  std::mutex mu_;
  bool etdump_written_ = false;
};

}  // namespace trtet_py
