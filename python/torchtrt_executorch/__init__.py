"""torchtrt_executorch: TensorRT engines as ExecuTorch delegates, from Python, on the CUDA stream you choose.

Importing the package loads the C++ backend library (libtorchtrt_executorch_backend), which
registers ``"TensorRTBackend"`` with the ExecuTorch runtime of the process: the installed
``executorch`` package's when there is one (``executorch.runtime.Runtime.get()`` then runs
TensorRT-delegated programs unchanged), else the runtime this package was built against.

Its own API, torch-free (docs/PYTHON.md):

>>> import numpy as np, torchtrt_executorch as tet
>>> program = tet.load("model.pte", use_cuda_graphs=True)
>>> (out,) = program.forward(x, y)                 # numpy, DLPack or __cuda_array_interface__ arrays
>>> parts = tet.split_device(0, [32], keep_remainder=True)
>>> with tet.stream(parts[0].stream):             # CudaStreamGuard: the engine runs on 32 SMs
...     program.forward(x_gpu, y_gpu, outputs=[out_gpu])
>>> parts[0].stream.synchronize()
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional, Sequence

from ._errors import (Error, IncompatibleError, InternalError, InvalidArgumentError, InvalidProgramError,
                      InvalidStateError, MemoryAllocationError, NoDeviceError, NotFoundError, NotSupportedError,
                      ERROR_CLASSES)
from . import _C

__all__ = [
    "load", "Program", "Method", "TensorSpec", "array_path", "stream", "current_stream", "Stream", "Partition",
    "split_device", "green_context_limits", "GreenContextLimits", "PartitionPlan", "DevicePlan", "read_partition_plan",
    "parse_partition_plan", "apply_partition_plan", "backend_registered", "LOAD_OPTIONS",
    "Error", "InvalidArgumentError", "InvalidProgramError", "InternalError", "IncompatibleError",
    "NotSupportedError", "NotFoundError", "MemoryAllocationError", "NoDeviceError", "InvalidStateError",
]

__version__ = "0.1.0"

Stream = _C.Stream
Partition = _C.Partition
PartitionPlan = _C.PartitionPlan
DevicePlan = _C.DevicePlan

#: The load-time options of "TensorRTBackend" (docs/OPTIONS.md) and the Python types each takes;
#: the backend checks the values. tests/executorch/options_test.cpp checks this table against the
#: backend's own (src/backend/options.cpp).
LOAD_OPTIONS: Dict[str, tuple] = {
    "use_cuda_graphs": (bool, int),
    "cuda_graph_cache_size": (int, str),
    "staging_budget_mb": (int, str),
    "max_program_staging_budget_mb": (int, str),
    "weight_streaming_budget": (int, str),
    "tensorrt_runtime": (str,),
    "allow_engine_host_code": (bool, int),
    "max_blob_metadata_bytes": (int, str),
    "profiling_gpu_every": (int, str),
}


def backend_registered() -> bool:
    """True when loading the backend library registered "TensorRTBackend" with ExecuTorch."""
    return bool(_C.backend_registered())


# ---- programs ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One input or output of a method as the program declares it."""
    name: str
    dtype: str           #: numpy's name of the dtype ("float32", ...); "" for a non-tensor value
    shape: tuple         #: the planned shape (an upper bound for dynamic shapes)
    planned: bool        #: the program plans its memory (host or device arena)
    tensor: bool = True
    dynamic: bool = False  #: the shape may change between calls, each dimension up to `shape`


class Method(_C._Method):
    """A method of a loaded program; call it with its inputs (and optionally ``outputs=``).

    ``method(*inputs, outputs=None)`` runs the method once (the C++ execute contract applies
    unchanged); the call goes straight into the extension.

    inputs: one array per input: numpy (host), torch, cupy, or any object exporting DLPack
        (``__dlpack__``; jax ...) or ``__cuda_array_interface__``, C-contiguous, of the input's
        dtype and rank, each dimension within the program's bound (its shape for a static input).
        Device arrays are handed to the engine as they are (no copy). An input the program plans
        in host memory must be a host array (ExecuTorch copies it into the plan).
    outputs: optional, one entry per output: an array to write it into (its own memory, on the
        device or the host, of the shape the engine produces), or None.
    Returns one value per output: the array given in ``outputs``; for an output the program does
        not plan and none was given, an array the package allocated (on the inputs' device, ordered
        on the call's stream: a DLPack array for ``torch.from_dlpack``/``cupy.from_dlpack``; numpy
        for a host call); a numpy copy for a host output the program planned; a DLPack view of the
        program's device memory for a device output it planned (valid until the next call).
    The GIL is released while the method runs. Under ``stream(s)`` with device I/O the call
    returns once the work is queued on ``s``: synchronize ``s`` before reading outputs, and keep
    the arrays alive until then.
    """

    def __init__(self, program: "Program", name: str):
        super().__init__(program._impl, name)
        self._program = program
        self.name = name

    @property
    def inputs(self) -> List[TensorSpec]:
        return [TensorSpec(**d) for d in self._program._impl.inputs(self.name)]

    @property
    def outputs(self) -> List[TensorSpec]:
        return [TensorSpec(**d) for d in self._program._impl.outputs(self.name)]

    def bind(self, *inputs: Any, outputs: Optional[Sequence[Any]] = None) -> "BoundCall":
        """The call bound to these arrays, checked once: ``call = method.bind(x, y, outputs=[out])``,
        then ``call()`` runs the method on the same arrays (their contents may change between calls,
        not their shape, dtype or memory) without reading them again. It keeps the arrays and the
        program alive; returns what a call returns (outputs not given are allocated on each call)."""
        return self._bind(inputs, None if outputs is None else list(outputs))

    def _time_cpp(self, inputs: Sequence[Any], outputs: Optional[Sequence[Any]], n: int) -> Dict[str, float]:
        """Mean host microseconds of the same call made n times from C++ (the benchmark's references):
        {"module": ExecuTorch's Module calls, "package": this package's path without Python}."""
        return super()._time_cpp(list(inputs), None if outputs is None else list(outputs), n)

    def __repr__(self) -> str:
        return f"<torchtrt_executorch.Method {self.name!r} of {self._program.path!r}>"


BoundCall = _C._BoundCall


def array_path(array: Any) -> str:
    """How a call reads `array`: "exchange-api" (the DLPack C exchange API, no Python call),
    "buffer" (the buffer protocol: numpy), "torch" or "cupy" (their own attributes), "dlpack"
    (``__dlpack__``), "cuda-array-interface", or "none" (not an array)."""
    return _C._array_path(array)


class Program:
    """A .pte program loaded with ExecuTorch's Module. Methods are attributes (``program.forward``)."""

    def __init__(self, impl: Any):
        self._impl = impl

    @property
    def path(self) -> str:
        return self._impl.path

    @property
    def method_names(self) -> List[str]:
        return list(self._impl.method_names)

    @property
    def closed(self) -> bool:
        return self._impl.closed

    def method(self, name: str) -> Method:
        """The method `name` (loaded on first use); NotFoundError if the program has none."""
        m = self.__dict__.get("_methods", {}).get(name)
        if m is None:
            m = Method(self, name)
            self.__dict__.setdefault("_methods", {})[name] = m
        return m

    def _expose_methods(self) -> None:
        """Every method (all loaded) as an attribute of its own: ``program.forward`` is a plain
        instance attribute read, which the interpreter specializes (a class with ``__getattr__``
        is read through a slower hook on every attribute access, about 0.1 us a call). A method
        whose name the class uses, or that starts with "_", is reached by method() or run()."""
        for name in self._impl.method_names:
            if not name.startswith("_") and not hasattr(Program, name):
                self.__dict__[name] = self.method(name)

    def run(self, method: str, *inputs: Any, outputs: Optional[Sequence[Any]] = None) -> List[Any]:
        """``program.run("forward", x, y)``: the same as ``program.forward(x, y)``."""
        return self.method(method)(*inputs, outputs=outputs)

    def flush_profiling(self) -> int:
        """Logs every GPU time known now into the program's ETDump tracer; returns the calls still running."""
        return self._impl.flush_profiling()

    def write_etdump(self) -> int:
        """Flushes and writes the ETDump file given at load (``etdump=``); the program then takes no
        more calls (the tracer is finalized). Returns the calls whose GPU times were still unknown;
        synchronize their streams first to have every time. close() writes it when this was not called."""
        return self._impl.write_etdump()

    def close(self) -> None:
        """Writes the ETDump (if any), then releases the program; later calls raise InvalidStateError."""
        self._impl.close()

    def __enter__(self) -> "Program":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ", ".join(self.method_names)
        return f"<torchtrt_executorch.Program {self.path!r} ({state})>"


class _LazyProgram(Program):
    """A program loaded with ``load_methods=False``: a method is loaded when first named
    (``program.forward``) and then kept as an attribute."""

    def __getattr__(self, name: str) -> Method:
        if name.startswith("_"):
            raise AttributeError(name)
        impl = self.__dict__.get("_impl")
        if impl is None or name not in impl.method_names:
            raise AttributeError(f"program has no method {name!r}")
        m = self.method(name)
        # Cached as an attribute: the next program.<name> is a plain attribute read.
        self.__dict__[name] = m
        return m


def load(path: "os.PathLike[str] | str", *, etdump: "os.PathLike[str] | str | None" = None,
         load_methods: bool = True, **load_options: Any) -> Program:
    """Loads a .pte program with ExecuTorch's Module and the load options for "TensorRTBackend".

    load_options: the backend's load-time options (LOAD_OPTIONS; docs/OPTIONS.md), e.g.
        ``use_cuda_graphs=True``, ``tensorrt_runtime="lean"``, ``staging_budget_mb=64``. An unknown
        key or a value of the wrong type raises InvalidArgumentError before anything is loaded.
    etdump: a path: the program is loaded with ExecuTorch's ETDumpGen attached, and its ETDump is
        written there by write_etdump() or close().
    load_methods: load (and initialize the delegates of) every method now, so that a program the
        backend cannot run fails here rather than at its first call.
    Raises NotFoundError (no such file), InvalidProgramError, NotSupportedError (e.g. no TensorRT
    runtime), InvalidArgumentError (a malformed option) ... with the backend's message.
    """
    options: Dict[str, Any] = {}
    for key, value in load_options.items():
        kinds = LOAD_OPTIONS.get(key)
        if kinds is None:
            raise InvalidArgumentError(f"unknown load option {key!r}; the options are: {', '.join(sorted(LOAD_OPTIONS))}")
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise InvalidArgumentError(f"load option {key}: {names}, not {type(value).__name__} ({value!r})")
        options[key] = value
    impl = _C._Program(os.fspath(path), options, os.fspath(etdump) if etdump is not None else "", load_methods)
    if not load_methods:
        return _LazyProgram(impl)
    program = Program(impl)
    program._expose_methods()
    return program


# ---- streams -----------------------------------------------------------------------------------

def _stream_handle(s: Any) -> int:
    """The cudaStream_t of `s`: an int, anything with __cuda_stream__ (the CUDA stream protocol),
    a torch.cuda.Stream (.cuda_stream) or a cupy stream (.ptr)."""
    if isinstance(s, bool):
        raise InvalidArgumentError("a stream is an int handle or a stream object, not a bool")
    if isinstance(s, int):
        if s < 0:
            raise InvalidArgumentError(f"a stream handle is >= 0, not {s}")
        return s
    proto = getattr(s, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        if isinstance(value, tuple) and len(value) == 2:
            return int(value[1])
        raise InvalidArgumentError(f"{type(s).__name__}.__cuda_stream__ returned {value!r}, not (version, handle)")
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(s, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise InvalidArgumentError(f"{type(s).__name__} is not a CUDA stream (an int handle, __cuda_stream__, "
                               f"torch.cuda.Stream or a cupy stream)")


class stream:
    """``with stream(s):`` selects `s` for this thread's delegate calls (CudaStreamGuard).

    `s`: an int handle (``cudaStream_t``), a torch.cuda.Stream, a cupy stream, a partition's
    Stream or anything with ``__cuda_stream__``. Per thread; scopes nest, the innermost wins, and
    leaving one restores the selection before it. 0 selects the legacy default stream explicitly
    (the delegate then runs on its own stream, joined to it). The stream must belong to the
    engine's GPU: a call on another GPU's stream raises InvalidArgumentError and runs nothing.
    """

    def __init__(self, s: Any):
        self._object = s  # kept alive while selected
        self._handle = _stream_handle(s)
        self._guard: Optional[Any] = None

    @property
    def handle(self) -> int:
        return self._handle

    def __enter__(self) -> Any:
        if self._guard is not None:
            raise InvalidStateError("this stream scope is already entered; make one per `with`")
        guard = _C._StreamGuard(self._handle, self._object)
        guard.enter()
        self._guard = guard
        return self._object

    def __exit__(self, *exc: Any) -> None:
        guard, self._guard = self._guard, None
        if guard is None:
            raise InvalidStateError("this stream scope is not entered")
        guard.exit()


def current_stream() -> Optional[int]:
    """The handle the innermost ``stream(...)`` scope of this thread selected, or None."""
    return _C.current_stream()


# ---- partitions --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GreenContextLimits:
    """What a GPU allows when its SMs are split (the C++ GreenContextLimits)."""
    device: int
    sm_count: int
    min_partition: int
    alignment: int
    granularity: int
    max_partitioned_sms: int


def green_context_limits(device: int = 0) -> GreenContextLimits:
    """The green-context limits of `device`. NoDeviceError without a GPU."""
    return GreenContextLimits(**_C.green_context_limits(device))


def split_device(device: int, sm_counts: Sequence[int], keep_remainder: bool = False) -> List[Partition]:
    """Splits `device`'s SMs into disjoint partitions of `sm_counts` SMs (one driver call), plus one
    of the SMs left over with keep_remainder. Each partition has a stream (``p.stream``). A request
    the GPU cannot serve raises InvalidArgumentError with the reason, ``.closest_valid`` and ``.limits``."""
    counts = [int(c) for c in sm_counts]
    if any(c < 0 for c in counts):
        raise InvalidArgumentError(f"SM counts are >= 0: {counts}")
    return _C.split_device(device, counts, keep_remainder)


def read_partition_plan(path: "os.PathLike[str] | str") -> PartitionPlan:
    """A plan file trtet-plan wrote, checked (InvalidArgumentError naming the field otherwise)."""
    return _C.read_partition_plan(os.fspath(path))


def parse_partition_plan(text: str) -> PartitionPlan:
    """A plan from its JSON text, checked as read_partition_plan checks a file."""
    return _C.parse_partition_plan(text)


def apply_partition_plan(plan: PartitionPlan, device: Optional[int] = None) -> Dict[Any, Partition]:
    """Splits GPUs as `plan` says: `device` alone (with the plan's entry for it), or every device the
    plan names (device None). Each model's partition by name where one device is split (the remainder
    last), by (device, name) where several are."""
    parts = _C.apply_partition_plan(plan, -1 if device is None else int(device))
    if len({p.device for p in parts}) <= 1:
        return {p.name: p for p in parts}
    return {(p.device, p.name): p for p in parts}
