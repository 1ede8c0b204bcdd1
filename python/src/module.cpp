// torchtrt_executorch._C: the extension module. Importing it loads libtorchtrt_executorch_backend,
// whose static initializer registers "TensorRTBackend" with the ExecuTorch runtime the process has.
#include "common.h"

NB_MODULE(_C, m) {
  m.doc() = "torchtrt_executorch's extension: programs, streams and partitions over the C++ backend.";
  trtet_py::install_log_capture();
  trtet_py::bind_errors(m);
  trtet_py::bind_streams(m);
  trtet_py::bind_program(m);
}
