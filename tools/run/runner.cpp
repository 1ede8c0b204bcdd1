#include "run/runner.h"

#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/runtime/platform/runtime.h>
#if TRTET_RUN_HAVE_ETDUMP
#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif

#include <chrono>

#include "program_shapes.h"
#include "run/engines.h"
#include "run/npy.h"

namespace trtet_run {
namespace {

namespace etr = ::executorch::runtime;
using Clock = std::chrono::steady_clock;

ex::Status cuda_status(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return ex::Status::Ok();
  return ex::make_error(ex::ErrorCode::kInternal, "%s: %s", what, cudaGetErrorString(error));
}

}  // namespace

ex::Status verify_program(const std::string& path, const std::string& method) {
  etr::runtime_init();
  Module module(path, Module::LoadMode::File);
  const etr::Error loaded = module.load(etr::Program::Verification::InternalConsistency);
  TRTET_CHECK_OR_RETURN(loaded == etr::Error::Ok, kInvalidArgument,
                        "%s is not a program this runtime reads: ExecuTorch error %s (0x%x) verifying it; "
                        "ExecuTorch's log above says more",
                        path.c_str(), etr::to_string(loaded), static_cast<unsigned>(loaded));
  // ExecuTorch 1.5.1 reads a delegate's id, processed data and compile specs without checking that
  // the program has them (triton/src/program_shapes.h, Note [a delegate's fields]).
  auto names = module.method_names();
  if (!names.ok() || names->count(method) == 0) return ex::Status::Ok();  // Runner::load names the method
  std::vector<trtet_triton::Dynamism> inputs, outputs;
  std::string why;
  TRTET_CHECK_OR_RETURN(trtet_triton::method_dynamism(path, method, inputs, outputs, why), kInvalidArgument,
                        "%s is not a program this runtime reads: %s", path.c_str(), why.c_str());
  return ex::Status::Ok();
}

ex::Result<std::unique_ptr<Runner>> Runner::load(const RunOptions& options) {
  etr::runtime_init();
  if (options.test_engines) TRTET_RETURN_IF_ERROR(install_test_engine_factory());
  TRTET_RETURN_IF_ERROR(cuda_status(cudaSetDevice(options.device), "selecting the device"));
  std::unique_ptr<Runner> runner(new Runner());
  runner->options_ = options;
  std::unique_ptr<etr::EventTracer> tracer;
  if (!options.etdump.empty()) {
#if TRTET_RUN_HAVE_ETDUMP
    tracer = std::make_unique<::executorch::etdump::ETDumpGen>();
#else
    return ex::make_error(ex::ErrorCode::kNotSupported,
                          "--etdump: this build has no ExecuTorch ETDump library (libexecutorch_etdump.so; run "
                          "scripts/install-executorch)");
#endif
  }
  runner->module_ = std::make_unique<Module>(options.program, Module::LoadMode::File, std::move(tracer));
  // The program is untrusted: its flatbuffer is verified before anything of it is read (ExecuTorch's
  // default, Minimal, checks the header only; docs/SECURITY.md).
  etr::Error loaded = runner->module_->load(etr::Program::Verification::InternalConsistency);
  if (loaded == etr::Error::Ok) loaded = runner->module_->load_method(options.method);
  TRTET_CHECK_OR_RETURN(loaded == etr::Error::Ok, kInternal,
                        "loading method '%s' of %s failed: ExecuTorch error %s (0x%x); ExecuTorch's log above says "
                        "more%s",
                        options.method.c_str(), options.program.c_str(), etr::to_string(loaded),
                        static_cast<unsigned>(loaded),
                        options.test_engines ? "" : " (for the programs tests/ generates, pass --test-engines)");
  TRTET_ASSIGN_OR_RETURN(runner->io_, MethodIo::prepare(*runner->module_, options));
  return runner;
}

ex::Status Runner::call(cudaStream_t stream) {
  ::torch_tensorrt::executorch_backend::CudaStreamGuard guard(stream);
  auto outputs = module_->execute(options_.method);
  TRTET_CHECK_OR_RETURN(outputs.ok(), kInternal, "executing '%s' failed: ExecuTorch error %s (0x%x)",
                        options_.method.c_str(), etr::to_string(outputs.error()),
                        static_cast<unsigned>(outputs.error()));
  last_outputs_ = std::move(*outputs);
  return ex::Status::Ok();
}

ex::Result<Measurement> Runner::measure(cudaStream_t stream, int iterations, int warmup) {
  for (int i = 0; i < warmup; ++i) TRTET_RETURN_IF_ERROR(call(stream));
  TRTET_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "waiting for the warm-up calls"));
  TRTET_RETURN_IF_ERROR(clear_engine_sms());

  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iterations));
  const auto loop_start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto start = Clock::now();
    TRTET_RETURN_IF_ERROR(call(stream));
    TRTET_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "waiting for a call"));
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - loop_start).count();

  Measurement m;
  m.stats = summarize(std::move(samples), wall_s);
  TRTET_ASSIGN_OR_RETURN(m.engine_sms, engine_sms());
  return m;
}

ex::Status Runner::write_etdump(const std::string& path, bool overwrite) {
#if TRTET_RUN_HAVE_ETDUMP
  auto* gen = static_cast<::executorch::etdump::ETDumpGen*>(module_->event_tracer());
  TRTET_CHECK_OR_RETURN(gen != nullptr, kInvalidState, "no ETDumpGen is attached (--etdump was not given at load)");
  TRTET_ASSIGN_OR_RETURN(const std::size_t pending, ex::flush_profiling(gen));
  TRTET_CHECK_OR_RETURN(pending == 0, kInternal, "%zu call(s) still running after their stream was synchronized",
                        pending);
  const ::executorch::etdump::ETDumpResult dump = gen->get_etdump_data();
  TRTET_CHECK_OR_RETURN(dump.buf != nullptr && dump.size > 0, kInternal, "ETDumpGen produced no data");
  const ex::Status written = write_file(path, dump.buf, dump.size, overwrite);
  free(dump.buf);  // ETDumpGen without a static buffer hands over a malloc'ed copy
  return written;
#else
  (void)path;
  (void)overwrite;
  return ex::make_error(ex::ErrorCode::kNotSupported, "--etdump: this build has no ExecuTorch ETDump library");
#endif
}

ex::Status Runner::save_outputs(const std::string& dir, cudaStream_t stream) const {
  TRTET_CHECK_OR_RETURN(!last_outputs_.empty(), kInvalidState, "no call has run: no outputs to save");
  return io_->save_outputs(last_outputs_, dir, stream);
}

}  // namespace trtet_run
