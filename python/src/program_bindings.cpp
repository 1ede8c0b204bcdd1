// The Program's Python bindings: _Program, _Method (a method's call, straight into C++),
// _BoundCall and the module's build facts (program.h).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <memory>
#include <string>

#include "common.h"
#include "program.h"

namespace trtet_py {

namespace {

/// A method of a program as Python calls it: `method(*inputs, outputs=None)` reaches Program::call
/// with no Python frame in between; the torchtrt_executorch.Method class derives from it.
struct MethodHandle {
  std::shared_ptr<Program> program;
  std::shared_ptr<MethodInfo> info;
};

/// A call bound to its arrays once (Method.bind): each call runs the method on the same arrays
/// without reading them again; it holds them (and the program) alive.
struct BoundCall {
  std::shared_ptr<Program> program;
  std::shared_ptr<MethodInfo> info;
  CallArgs args;
  nb::list operator()() { return program->run(*info, args, false); }
};

PyObject* const* items_of(nb::handle seq, nb::object& hold, std::size_t& n) {
  PyObject* fast = PySequence_Fast(seq.ptr(), "inputs: a sequence of arrays");
  if (fast == nullptr) throw nb::python_error();
  hold = nb::steal(fast);
  n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast));
  return PySequence_Fast_ITEMS(fast);
}

/// _Method's tp_call: `method(*inputs, outputs=None)` with the arguments CPython already made (a
/// tuple, a dict of keywords), no argument matching of nanobind's in between.
PyObject* method_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
  try {
    if (!nb::inst_ready(self)) {
      PyErr_SetString(PyExc_TypeError, "this method was not initialized");
      return nullptr;
    }
    MethodHandle* h = nb::inst_ptr<MethodHandle>(self);
    PyObject* outputs = nullptr;
    if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
      static PyObject* const key = PyUnicode_InternFromString("outputs");
      // The one keyword as a call site spells it (interned): its entry read without a lookup.
      Py_ssize_t pos = 0;
      PyObject *k = nullptr, *v = nullptr;
      if (PyDict_GET_SIZE(kwargs) == 1 && PyDict_Next(kwargs, &pos, &k, &v) && k == key) outputs = v;
      if (outputs == nullptr) outputs = PyDict_GetItemWithError(kwargs, key);
      if (outputs == nullptr && PyErr_Occurred()) return nullptr;
      if (PyDict_GET_SIZE(kwargs) != (outputs != nullptr ? 1 : 0)) {
        PyErr_SetString(PyExc_TypeError, "a method takes its inputs by position and one keyword, outputs=");
        return nullptr;
      }
    }
    nb::list r = h->program->call(*h->info, &PyTuple_GET_ITEM(args, 0), static_cast<std::size_t>(PyTuple_GET_SIZE(args)),
                                  outputs);
    return r.release().ptr();
  } catch (const PyError& e) {
    set_python_error(e);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "an unknown C++ exception in a method call");
  }
  return nullptr;
}

PyType_Slot method_slots[] = {{Py_tp_call, reinterpret_cast<void*>(&method_call)}, {0, nullptr}};

BoundCall bind_call(const std::shared_ptr<Program>& p, const std::shared_ptr<MethodInfo>& info, nb::handle inputs,
                    nb::handle outputs) {
  nb::object hold;
  std::size_t n = 0;
  PyObject* const* items = items_of(inputs, hold, n);
  BoundCall b{p, info, {}};
  p->prepare(*info, items, n, outputs.ptr(), b.args);
  for (const ArrayArg& a : b.args.in) b.args.refs.push_back(nb::borrow(a.obj));
  for (const ArrayArg& a : b.args.out)
    if (a.obj != nullptr) b.args.refs.push_back(nb::borrow(a.obj));
  return b;
}

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
      .def("flush_profiling", &Program::flush_profiling)
      .def("write_etdump", &Program::write_etdump)
      .def("close", &Program::close);

  nb::class_<MethodHandle>(m, "_Method", nb::type_slots(method_slots))
      .def("__init__", [](MethodHandle* self, std::shared_ptr<Program> p, const std::string& name) {
        std::shared_ptr<MethodInfo> info = p->load_method(name);
        new (self) MethodHandle{std::move(p), std::move(info)};
      }, nb::arg("program"), nb::arg("name"))
      .def("_call", [](MethodHandle& h, nb::handle inputs, nb::handle outputs) {
        nb::object hold;
        std::size_t n = 0;
        PyObject* const* items = items_of(inputs, hold, n);
        return h.program->call(*h.info, items, n, outputs.ptr());
      }, nb::arg("inputs"), nb::arg("outputs").none())
      .def("_bind", [](MethodHandle& h, nb::handle inputs, nb::handle outputs) {
        return bind_call(h.program, h.info, inputs, outputs);
      }, nb::arg("inputs"), nb::arg("outputs").none())
      .def("_time_cpp", [](MethodHandle& h, nb::sequence inputs, nb::object outputs, int n) {
        return h.program->time_cpp(*h.info, inputs, outputs, n);
      }, nb::arg("inputs"), nb::arg("outputs").none(), nb::arg("n"))
      .def("_time_prepare", [](MethodHandle& h, nb::sequence inputs, nb::object outputs, int n) {
        return h.program->time_prepare(*h.info, inputs, outputs, n);
      }, nb::arg("inputs"), nb::arg("outputs").none(), nb::arg("n"));

  nb::class_<BoundCall>(m, "_BoundCall").def("__call__", &BoundCall::operator());

  m.def("_array_path", [](nb::handle obj) { return std::string(array_path(obj)); }, nb::arg("array"),
        "How a call reads this array: exchange-api, buffer, torch, cupy, dlpack, cuda-array-interface or none.");
  m.def("_use_exchange_api", &use_exchange_api, nb::arg("on"),
        "Read types offering the DLPack C exchange API through it (default) or through the next path that fits.");
  m.def("_output_memory", &output_memory_stats, nb::arg("device") = 0,
        "The package's allocated device outputs still live, and its pool's reserved and used bytes on `device`.");
  m.def("_trim_output_pool", &trim_output_pool, nb::arg("device") = 0,
        "Test only: the package's pool on `device` gives back the memory it holds unused.");
  m.def("_plant", &plant, nb::arg("bug"), "Test only: plant a known bug ('early-free') or none ('').");
#if TRTET_PY_HAVE_ETDUMP
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
