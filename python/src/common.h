// Shared by the extension's sources: the error the bindings throw (turned into the package's
// exception classes, torchtrt_executorch/_errors.py), and the per-thread capture of the backend's
// last logged error (its message goes into the exception).
#pragma once

#include <nanobind/nanobind.h>
#include <torch_tensorrt/executorch/Error.h>

#include <executorch/runtime/core/error.h>

#include <memory>
#include <string>
#include <vector>

namespace trtet_py {

namespace nb = nanobind;
namespace et = ::torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;

/// What a binding throws; translated to torchtrt_executorch.<Kind>Error with .code, .message and,
/// for ExecuTorch failures, .executorch_error (the runtime's code as an int), and for a rejected
/// split, .closest_valid and .limits.
struct PyError {
  et::ErrorCode code = et::ErrorCode::kInternal;
  std::string message;
  int executorch_error = -1;
  std::vector<unsigned> closest_valid;
  et::GreenContextLimits limits;
};

[[noreturn]] void raise(et::ErrorCode code, std::string message);
/// Sets the Python exception a PyError becomes (for code that returns to Python without nanobind's
/// translation: a type slot). Needs the GIL.
void set_python_error(const PyError& e) noexcept;
/// Raises the project's Error (code, message, and a split's details).
[[noreturn]] void raise(const et::Error& error);
/// Raises for an ExecuTorch error: the kind its meaning maps to, "<what>: ExecuTorch error <Name>
/// (0x..)", then the backend's own message when the delegate logged one on this thread since
/// clear_backend_message().
[[noreturn]] void raise_executorch(etr::Error error, const std::string& what);

/// The error kind an ExecuTorch error means (the inverse of src/backend/error_map.h).
et::ErrorCode code_of(etr::Error error) noexcept;

/// Per-thread: forget / read the last error the TensorRT delegate logged through ExecuTorch's PAL.
void clear_backend_message() noexcept;
const std::string& backend_message() noexcept;
/// Routes ExecuTorch's log through the extension (to stderr as ExecuTorch's default does, and into
/// the capture above). Called once at import.
void install_log_capture();
/// Puts the capture back in front when another PAL replaced it since (executorch.runtime's _C
/// registers one at its import); the replaced log function keeps receiving every message.
void ensure_log_capture() noexcept;

/// A GPU's green-context limits as a dict (green_context_limits(), an error's .limits, a plan's
/// .gpu); `with_device` false leaves "device" out (a plan records no device).
nb::dict limits_dict(const et::GreenContextLimits& limits, bool with_device = true);

/// The Python object the innermost `stream(...)` scope of this thread selected, where that scope's
/// handle is `handle` (what the backend sees as the caller's stream); None otherwise. A call's
/// allocated outputs keep it, so the stream their memory is freed on outlives them.
nb::object selected_stream_object(std::uintptr_t handle);

/// The partition whose stream `handle` is (kept alive by the pointer returned), or null for a
/// stream that is not a live partition's.
std::shared_ptr<void> stream_owner(std::uintptr_t handle);

void bind_errors(nb::module_& m);
void bind_streams(nb::module_& m);
void bind_program(nb::module_& m);

}  // namespace trtet_py
