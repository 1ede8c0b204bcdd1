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
