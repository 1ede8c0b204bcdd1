"""The package's exceptions: one class per error kind of the C++ library (ErrorCode in
<torch_tensorrt/executorch/Error.h>); ExecuTorch's own errors map to the kind they mean."""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """Base class of every error this package raises.

    Attributes:
        code: the error kind's name, as the C++ library spells it (``"InvalidArgument"``, ...).
        message: what went wrong, as the C++ library said it.
        executorch_error: ExecuTorch's error code (an int) when ExecuTorch reported the failure, else None.
        closest_valid: for a split the GPU cannot make, the nearest SM counts it accepts.
        limits: for a rejected split, the device's green-context limits (a dict), else None.
    """

    code = "Unknown"

    def __init__(self, message: str, executorch_error: Optional[int] = None,
                 closest_valid: Optional[list] = None, limits: Optional[dict] = None):
        super().__init__(message)
        self.message = message
        self.executorch_error = executorch_error
        self.closest_valid = list(closest_valid or [])
        self.limits = limits


class InvalidArgumentError(Error, ValueError):
    """Caller misuse: a wrong dtype, shape, device, argument count, stream, option or request."""
    code = "InvalidArgument"


class InvalidProgramError(Error):
    """A bad program, blob, compile spec or engine metadata."""
    code = "InvalidProgram"


class InternalError(Error):
    """A CUDA or engine failure at run time."""
    code = "Internal"


class IncompatibleError(Error):
    """A version or platform mismatch (an engine built for another TensorRT or GPU)."""
    code = "Incompatible"


class NotSupportedError(Error):
    """A valid request this build or device cannot serve (e.g. no TensorRT runtime found)."""
    code = "NotSupported"


class NotFoundError(Error, LookupError):
    """A named thing (file, method, binding, partition) is absent."""
    code = "NotFound"


class MemoryAllocationError(Error, MemoryError):
    """Host or device memory could not be allocated."""
    code = "MemoryAllocationFailed"


class NoDeviceError(Error):
    """No usable CUDA device or driver."""
    code = "NoDevice"


class InvalidStateError(Error):
    """The object cannot take this call now (closed, already entered, exited out of order)."""
    code = "InvalidState"


ERROR_CLASSES = {cls.code: cls for cls in (
    InvalidArgumentError, InvalidProgramError, InternalError, IncompatibleError, NotSupportedError,
    NotFoundError, MemoryAllocationError, NoDeviceError, InvalidStateError)}


def _make(code: str, message: str, executorch_error: int, closest_valid: list, limits) -> Error:
    """Called by the extension to build the exception for a C++ error."""
    cls = ERROR_CLASSES.get(code, InternalError)
    return cls(message, None if executorch_error < 0 else executorch_error, closest_valid, limits)
