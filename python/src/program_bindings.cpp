// The Program's Python bindings: _Program, _BoundCall and the module's build facts (program.h).
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
  nb::class_<BoundCall>(m, "_BoundCall").def("__call__", &BoundCall::operator());
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
