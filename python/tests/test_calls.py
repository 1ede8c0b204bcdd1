"""The CPU suite of calls (CI, no GPU): dynamic shapes in every order with passed and allocated host
outputs, outputs checked against what the program produces, errors that name the sizes, the ways
arrays are read. Uses cpu_add_unplanned.pte: out = x + y, x, y and out [8, 64] float32 at most
(DYNAMIC_BOUND), none of them planned, so the caller passes out or the package allocates it."""

from __future__ import annotations

import gc
import itertools
import weakref

import numpy as np
import pytest

import torchtrt_executorch as tet

BOUND = (8, 64)
SHAPES = [(8, 64), (2, 16), (5, 64)]  # the bound, small, in between


def xy(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)


@pytest.fixture
def prog(programs):
    return tet.load(programs / "cpu_add_unplanned.pte")


def test_specs_say_dynamic(prog):
    (out,) = prog.forward.outputs
    assert out.shape == BOUND and out.dynamic and not out.planned
    assert all(s.dynamic and not s.planned for s in prog.forward.inputs)


# ---- dynamic shapes in every order ---------------------------------------------------------------

@pytest.mark.parametrize("order", list(itertools.permutations(SHAPES)), ids=lambda o: "-".join(f"{r}x{c}" for r, c in o))
def test_shapes_in_every_order_passed_outputs(programs, order):
    p = tet.load(programs / "cpu_add_unplanned.pte")
    # Each order twice over (large, small, large, small ...): a shape seen before takes the direct
    # path into the array; one not seen before goes through the package's memory first.
    for k, shape in enumerate(list(order) * 2):
        x, y = xy(shape, seed=k)
        out = np.full(shape, np.nan, np.float32)
        (r,) = p.forward(x, y, outputs=[out])
        assert r is out
        np.testing.assert_allclose(out, x + y, rtol=1e-6)


@pytest.mark.parametrize("order", list(itertools.permutations(SHAPES)), ids=lambda o: "-".join(f"{r}x{c}" for r, c in o))
def test_shapes_in_every_order_allocated_outputs(programs, order):
    p = tet.load(programs / "cpu_add_unplanned.pte")
    for k, shape in enumerate(list(order) * 2):
        x, y = xy(shape, seed=k)
        (r,) = p.forward(x, y)
        assert isinstance(r, np.ndarray) and r.shape == shape and r.dtype == np.float32
        np.testing.assert_allclose(r, x + y, rtol=1e-6)


def test_passed_and_allocated_outputs_interleaved(prog):
    # The reported failure: the bound, then a smaller array passed ("buffer size: ... is smaller
    # then expected tensor size"), then the other way round, mixed with allocated outputs.
    for k, (shape, passed) in enumerate([((8, 64), True), ((1, 4), True), ((8, 64), False), ((1, 4), True),
                                         ((8, 64), True), ((3, 7), False), ((3, 7), True), ((8, 64), True)]):
        x, y = xy(shape, seed=k)
        if passed:
            out = np.empty(shape, np.float32)
            (r,) = prog.forward(x, y, outputs=[out])
            assert r is out
        else:
            (r,) = prog.forward(x, y)
        np.testing.assert_allclose(r, x + y, rtol=1e-6)


def test_bound_call_with_an_allocated_output(prog):
    x, y = xy((4, 64))
    x0 = x.copy()
    call = prog.forward.bind(x, y)
    (a,) = call()
    x += 1
    (b,) = call()
    assert a is not b and not np.shares_memory(a, b)
    np.testing.assert_allclose(a, x0 + y, rtol=1e-6)  # the first result stays as it was
    np.testing.assert_allclose(b, x + y, rtol=1e-6)


def test_allocated_host_output_is_the_callers(programs):
    p = tet.load(programs / "cpu_add_unplanned.pte")
    x, y = xy((8, 64))
    (r,) = p.forward(x, y)
    (r2,) = p.forward(y, y)
    assert not np.shares_memory(r, r2)
    r[0, 0] = 42.0  # writable, owned by the array
    p.close()
    del p
    gc.collect()
    np.testing.assert_allclose(r[1:], (x + y)[1:], rtol=1e-6)  # outlives the program
    assert r[0, 0] == 42.0


# ---- outputs checked against what the program produces --------------------------------------------

def test_passed_output_of_another_shape_is_refused_and_not_written(prog):
    x, y = xy((3, 64))
    wrong = np.full((4, 64), 7.0, np.float32)
    # Input shapes not seen before: the result goes through the package's memory and is found not
    # to fit before anything is written into the array.
    with pytest.raises(tet.InvalidArgumentError,
                       match=r"output 0: the engine produced shape \[3, 64\] \(768 bytes\) where the array passed "
                             r"has shape \[4, 64\] \(1024 bytes\); the array was not written; pass an array of shape \[3, 64\]"):
        prog.forward(x, y, outputs=[wrong])
    assert (wrong == 7.0).all()
    # Seen before: refused before the program runs.
    smaller = np.full((2, 64), 7.0, np.float32)
    with pytest.raises(tet.InvalidArgumentError,
                       match=r"output 0: shape \[2, 64\] where the engine produces \[3, 64\] for these inputs; "
                             r"pass an array of shape \[3, 64\]"):
        prog.forward(x, y, outputs=[smaller])
    assert (smaller == 7.0).all()
    out = np.empty((3, 64), np.float32)
    prog.forward(x, y, outputs=[out])
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


@pytest.mark.parametrize("where", ["input", "output"])
def test_beyond_the_bound_names_the_sizes(prog, where):
    x, y = xy((8, 64))
    big = np.ones((9, 64), np.float32)
    pattern = (rf"{where} 0: shape \[9, 64\] is beyond the method's bound \[8, 64\] "
               r"\(dimension 0: 9 > 8; 576 elements where the bound holds 512\)")
    with pytest.raises(tet.InvalidArgumentError, match=pattern):
        if where == "input":
            prog.forward(big, y)
        else:
            prog.forward(x, y, outputs=[big])
    (r,) = prog.forward(x, y)  # the next call works
    np.testing.assert_allclose(r, x + y, rtol=1e-6)


def test_output_errors_then_a_good_call(prog):
    x, y = xy((8, 64))
    read_only = np.ones((8, 64), np.float32)
    read_only.setflags(write=False)
    cases = [
        ([np.empty((8, 64), np.float64)], "output 0: float64 where the method takes float32"),
        ([np.empty((8, 64, 1), np.float32)], "output 0: shape \\[8, 64, 1\\] has 3 dimensions"),
        ([np.empty((64, 8), np.float32).T], "output 0: the array is not C-contiguous"),
        ([np.empty((8, 64), np.float32), None], "has 1 outputs; 2 were given"),
        ([read_only], "output 0: the array is read-only"),
        (5, "outputs= takes a sequence"),
        ([3.5], "output 0: .*float.* is not an array"),
    ]
    for outs, pattern in cases:
        with pytest.raises((tet.InvalidArgumentError, TypeError), match=pattern):
            prog.forward(x, y, outputs=outs)
        (r,) = prog.forward(x, y)
        np.testing.assert_allclose(r, x + y, rtol=1e-6)


def test_big_endian_input_is_refused(prog):
    x, y = xy((8, 64))
    with pytest.raises(tet.InvalidArgumentError, match="input 0: dtype '>f' is big-endian"):
        prog.forward(x.astype(">f4"), y)


# ---- how arrays are read --------------------------------------------------------------------------

class DLPackOnly:
    """An array known only by __dlpack__ (as a framework without the buffer protocol)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_array_paths(prog):
    x, y = xy((8, 64))
    assert tet.array_path(x) == "buffer"
    assert tet.array_path(memoryview(x)) == "buffer"
    assert tet.array_path(DLPackOnly(x)) == "dlpack"
    assert tet.array_path([1.0]) == "none"
    out = np.empty((8, 64), np.float32)
    # Every path reads the same memory: the result lands in `out` either way.
    (r,) = prog.forward(DLPackOnly(x), memoryview(y), outputs=[DLPackOnly(out)])
    assert isinstance(r, DLPackOnly)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


class DeviceBytes(bytearray):
    """Bytes with a buffer protocol that say they live on the GPU (as cupy 14's arrays have a buffer
    protocol that raises for device memory): never to be read through the buffer protocol."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": (len(self) // 4,), "typestr": "<f4", "data": (0x7F0000000000, False), "version": 3}

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA


class CaiBytes(bytearray):
    @property
    def __cuda_array_interface__(self):
        return DeviceBytes.__cuda_array_interface__.fget(self)


class HostBytes(DeviceBytes):
    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: this one's buffer protocol is its memory


def test_device_arrays_with_a_buffer_protocol_are_not_read_through_it(prog):
    assert tet.array_path(DeviceBytes(32)) == "cuda-array-interface"
    assert tet.array_path(CaiBytes(32)) == "cuda-array-interface"
    assert tet.array_path(HostBytes(32)) == "buffer"
    assert tet.array_path(bytearray(32)) == "buffer"
    x, y = xy((8, 64))
    # Read as device memory (through __cuda_array_interface__): the host program refuses it or the
    # delegate cannot take it; had its buffer protocol been read, the call would have gone through.
    with pytest.raises(tet.Error):
        prog.forward(DeviceBytes(x.nbytes), y)


def test_a_call_holds_no_reference_after_the_next(prog):
    x, y = xy((8, 64))

    class A(np.ndarray):
        pass

    a = x.view(A)
    out = np.empty((8, 64), np.float32).view(A)
    refs = weakref.ref(a), weakref.ref(out)
    prog.forward(a, y, outputs=[out])
    del a, out
    gc.collect()
    assert all(r() is not None for r in refs)  # held until the next call
    prog.forward(x, y)
    gc.collect()
    assert all(r() is None for r in refs)


# ---- the DLPack C exchange API, with a producer made here ---------------------------------------------

import ctypes  # noqa: E402


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_DLTensor))


class _ExchangeApi(ctypes.Structure):  # DLPack 1.2's DLPackExchangeAPI, as a producer lays it out
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
                ("managed_tensor_allocator", ctypes.c_void_p), ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p), ("dltensor_from_py_object_no_sync", _FROM_PY),
                ("current_work_stream", ctypes.c_void_p)]


def _fill(obj_ptr, out):
    obj = ctypes.cast(obj_ptr, ctypes.py_object).value
    if obj.decline:
        return -1
    base = obj.base
    t = out.contents
    t.data = base.ctypes.data  # the allocation; the array starts byte_offset into it
    t.byte_offset = obj.offset * base.itemsize
    t.device_type, t.device_id = 1, 0  # kDLCPU
    t.ndim = len(obj.shape)
    t.code, t.bits, t.lanes = 2, 32, 1  # float32
    t.shape = obj.c_shape
    t.strides = obj.c_strides
    return 0


_FILL = _FROM_PY(_fill)
_API = _ExchangeApi(1, 2, None, None, None, None, _FILL, None)
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CAPSULE_NAME = b"dlpack_exchange_api"
_CAPSULE = ctypes.pythonapi.PyCapsule_New(ctypes.addressof(_API), _CAPSULE_NAME, None)


class Exchanged:
    """A float32 view of `base` (flat) from element `offset`, in `shape`, through the exchange API;
    __dlpack__ for the general path where it declines."""
    __dlpack_c_exchange_api__ = _CAPSULE

    def __init__(self, base, offset, shape, strides=None, decline=False):
        self.base, self.offset, self.shape, self.decline = base, offset, tuple(shape), decline
        self.c_shape = (ctypes.c_int64 * len(shape))(*shape)
        self.c_strides = None if strides is None else (ctypes.c_int64 * len(shape))(*strides)
        n = int(np.prod(shape))
        self._view = base.reshape(-1)[offset:offset + n].reshape(shape) if strides is None else None

    def __dlpack__(self, **kwargs):
        return self._view.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


class ExchangedToo(Exchanged):  # a type of its own (paths are decided per type)
    pass


def test_exchange_api_is_read_without_python(prog):
    base = np.arange(3 * 8 * 64, dtype=np.float32)
    x = Exchanged(base, 8 * 64, (8, 64))  # byte_offset: the second [8, 64] of base
    y = Exchanged(base, 2 * 8 * 64, (8, 64), strides=(64, 1))
    assert tet.array_path(x) == "exchange-api"
    (r,) = prog.forward(x, y)
    flat = base.reshape(3, 8, 64)
    np.testing.assert_allclose(r, flat[1] + flat[2])
    with pytest.raises(tet.InvalidArgumentError, match="input 0: the array is not C-contiguous"):
        prog.forward(Exchanged(base, 0, (8, 64), strides=(1, 8)), y)


def test_exchange_api_declined_falls_back_to_dlpack(prog):
    base = np.arange(8 * 64, dtype=np.float32)
    x = ExchangedToo(base, 0, (8, 64), decline=True)
    assert tet.array_path(x) == "exchange-api"
    (r,) = prog.forward(x, x)
    np.testing.assert_allclose(r, 2 * base.reshape(8, 64))
