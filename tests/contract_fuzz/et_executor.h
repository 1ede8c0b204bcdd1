// Runs an ExecuTorch-leg sequence on the GPU: Modules over the generated programs, each call made
// as an application would (inputs through Module::execute, outputs the Module's own or set with
// set_output, a CudaStreamGuard or none), and checked at the moment the execute contract says each
// result is ready (README.md, "The execute contract"):
//  - no guard: every output and input right after execute returns, with no synchronization;
//  - a guard and some host memory: host outputs and inputs right after return (then host inputs
//    may be overwritten: the fuzzer scribbles over them), device-side ones after synchronizing;
//  - a guard and device memory only: after synchronizing the guard's stream;
//  - a call outside the engine's profile: InvalidArgument, outputs still poisoned, inputs unchanged.
// Only built where ExecuTorch is found (TRTET_FUZZ_HAVE_EXECUTORCH); elsewhere run_et reports that.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/executor.h"
#include "contract_fuzz/oracle.h"

#if TRTET_FUZZ_HAVE_EXECUTORCH
#include <executorch/extension/module/module.h>
#endif

namespace trtet_test::fuzz {

/// Runs sequence.steps[i] for each i of `keep` (ascending); the first broken promise and its step.
RunResult run_et(const EtSequence& sequence, const std::vector<std::size_t>& keep, Tally& tally);

/// Whether this build has the executorch leg.
bool have_et_leg() noexcept;

#if TRTET_FUZZ_HAVE_EXECUTORCH
/// The generated program's path (build/tests/contract_fuzz/programs/<file>).
std::string et_program_path(EtProgram program);

/// Process-wide, once: ExecuTorch's runtime_init and the test-engine factory (the programs' engine
/// bytes are test-engine specs, tests/engines/test_engine_factory.h). No GPU needed.
void ensure_et_runtime();

/// Where input `index` (0: x, 1: y) of a planned program's loaded "forward" is: the programs'
/// memory plans put x, y, ... out in the host arena kEtBoundBytes apart, x at 0 and out at
/// planned_output_slot(program), so x is out's address minus that many tensors. Null if the
/// method cannot load.
void* planned_input_address(::executorch::extension::Module& module, EtProgram program, int index);
#endif

}  // namespace trtet_test::fuzz
