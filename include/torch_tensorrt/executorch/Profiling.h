// Profiling a program with ExecuTorch's EventTracer (ETDump): what this delegate logs, and the
// one call an application may make to have the GPU times of its calls logged now.
//
// With a tracer attached to the method (ExecuTorch's Module(path, load_mode, std::make_unique<
// ETDumpGen>()), or Program::load_method(..., event_tracer)), every delegate call logs delegate
// events named after the delegate ("<method>:TensorRTBackend#<k>", k counting the method's
// TensorRT delegates in load order):
//  - "<name>": the host time of execute, at once;
//  - "<name> [gpu engine]", "<name> [gpu copy_in]", "<name> [gpu copy_out]": the GPU time of the
//    engine and of the staging copies (where something was staged), measured with CUDA events on
//    the stream the call ran on. A call returns before its GPU work is done, and nothing waits
//    for these times: they are logged once known, by a later call of the same delegate or by
//    flush_profiling() below. Destroying the method logs nothing (its tracer may already be
//    finalized, and ETDumpGen aborts on an event added after get_etdump_data()): flush first.
// Each event's metadata is text, "trtet call=N kind=... path=eager|graph_replay|repeat|captured
// profile=P staged_bytes=B green_sms=S status=ok|failed" (green_sms 0: not a green-context stream;
// gpu events add gpu_ns=...). A call recorded into the caller's graph logs one host event with
// path=captured and no GPU time (its replays are the caller's to time). A failed call logs its
// host event with status=failed and nothing else. A tracer set to ExecuTorch's
// EventTracerProfilingLevel::kProfileMethodOnly (no operator events) gets none of these: the
// delegate then times nothing, and a call costs what it costs without a tracer. tools/etdump_report.py
// prints a table per call and a timeline from the ETDump file (README, "Profiling a program").
#pragma once

#include <torch_tensorrt/executorch/Error.h>

#include <cstddef>

#if defined(TORCHTRT_EXECUTORCH_WITH_RUNTIME) && TORCHTRT_EXECUTORCH_WITH_RUNTIME
#include <executorch/runtime/core/event_tracer.h>

namespace torch_tensorrt::executorch_backend {

/// Logs into `tracer` every GPU time of this library's delegate calls traced into it that is
/// known now, without waiting for any. Returns how many such calls are still running on the GPU;
/// to have every time logged, synchronize the streams the calls ran on first. Call it where the
/// tracer accepts events: after the method's execute and before ETDumpGen::get_etdump_data(),
/// never while this thread captures a CUDA graph (it queries CUDA events). kInvalidArgument for a
/// null tracer; kInternal where CUDA cannot answer (what was known before is still logged).
Result<std::size_t> flush_profiling(::executorch::runtime::EventTracer* tracer);

}  // namespace torch_tensorrt::executorch_backend
#endif  // TORCHTRT_EXECUTORCH_WITH_RUNTIME
