"""The GPU suite (scripts/gpu-python on the H200): device arrays in and out without a copy, the
caller's stream on a partition, host I/O, threads on two partitions, device-planned programs,
profiling. Needs a GPU and the test engines (TRTET_TEST_ENGINES_PLUGIN); each test skips with the
reason otherwise. torch and cupy tests skip where the package is not installed."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import torchtrt_executorch as tet

pytestmark = pytest.mark.usefixtures("gpu")

ROWS, COLS = 8, 64  # the unplanned programs' shape


def expected(x, y):
    return 2 * x - 0.5 * y  # the elementwise engine (tests/engines), a=2, b=-0.5


# ---- device arrays, no copy --------------------------------------------------------------------

def test_torch_device_io_without_a_copy(programs, plugin, torch):
    p = tet.load(programs / "device_fast.pte")
    x = torch.randn(ROWS, COLS, device="cuda")
    y = torch.randn(ROWS, COLS, device="cuda")
    out = torch.empty(ROWS, COLS, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s), tet.stream(s):
        (r,) = p.forward(x, y, outputs=[out])
    s.synchronize()
    assert r is out  # the caller's own tensor, written in place
    torch.testing.assert_close(out, expected(x, y))
    # The engine reads x's own memory: changed in place, the next call sees it.
    x.mul_(3)
    torch.cuda.synchronize()
    with tet.stream(s):
        p.forward(x, y, outputs=[out])
    s.synchronize()
    torch.testing.assert_close(out, expected(x, y))


def test_torch_reads_a_planned_device_output_through_dlpack(programs, plugin, torch):
    # skipped_copies: x_d, y_d are the caller's device tensors; out_d lives in the program's CUDA arena.
    p = tet.load(programs / "skipped_copies.pte")
    x = torch.randn(64, 4096, device="cuda")
    y = torch.randn(64, 4096, device="cuda")
    s = torch.cuda.Stream()
    with tet.stream(s):
        (view,) = p.forward(x, y)
    s.synchronize()
    assert view.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    t = torch.from_dlpack(view)
    assert t.is_cuda and t.shape == (64, 4096)
    torch.testing.assert_close(t, expected(x, y))
    # The same memory as the program's output on the next call (a view, not a copy).
    with tet.stream(s):
        (again,) = p.forward(y, x)
    s.synchronize()
    assert torch.from_dlpack(again).data_ptr() == t.data_ptr()
    torch.testing.assert_close(t, expected(y, x))


def test_cupy_device_io_without_a_copy(programs, plugin, cupy):
    p = tet.load(programs / "device_fast.pte")
    x = cupy.random.standard_normal((ROWS, COLS), dtype=cupy.float32)
    y = cupy.random.standard_normal((ROWS, COLS), dtype=cupy.float32)
    out = cupy.empty((ROWS, COLS), dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with tet.stream(s):
        (r,) = p.forward(x, y, outputs=[out])
    s.synchronize()
    assert r is out
    cupy.testing.assert_allclose(out, 2 * x - 0.5 * y, rtol=1e-5)
    # cupy reads a torch-free DLPack view too.
    q = tet.load(programs / "skipped_copies.pte")
    x2 = cupy.ones((64, 4096), dtype=cupy.float32)
    with tet.stream(s):
        (view,) = q.forward(x2, x2)
    s.synchronize()
    c = cupy.from_dlpack(view)
    assert float(c.sum()) == pytest.approx(1.5 * 64 * 4096)


class CudaArrayInterfaceOnly:
    """An array known only by __cuda_array_interface__ (as numba's device arrays)."""

    def __init__(self, tensor):
        self._t = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


def test_cuda_array_interface(programs, plugin, torch):
    p = tet.load(programs / "device_fast.pte")
    x = torch.randn(ROWS, COLS, device="cuda")
    y = torch.randn(ROWS, COLS, device="cuda")
    out = torch.empty(ROWS, COLS, device="cuda")
    torch.cuda.synchronize()
    (r,) = p.forward(CudaArrayInterfaceOnly(x), CudaArrayInterfaceOnly(y), outputs=[CudaArrayInterfaceOnly(out)])
    torch.testing.assert_close(out, expected(x, y))  # no guard: ready on return


def test_device_errors_then_a_good_call(programs, plugin, torch):
    p = tet.load(programs / "device_fast.pte")
    x = torch.randn(ROWS, COLS, device="cuda")
    y = torch.randn(ROWS, COLS, device="cuda")
    out = torch.empty(ROWS, COLS, device="cuda")
    with pytest.raises(tet.InvalidArgumentError, match="float64 where the method takes float32"):
        p.forward(x.double(), y, outputs=[out])
    with pytest.raises(tet.InvalidArgumentError, match="not C-contiguous"):
        p.forward(torch.randn(COLS, ROWS, device="cuda").t(), y, outputs=[out])
    with pytest.raises(tet.InvalidArgumentError, match="has 3 dimensions"):
        p.forward(x.unsqueeze(0), y, outputs=[out])
    with pytest.raises(tet.InvalidArgumentError, match=r"output 0: shape \[8, 96\] is beyond the method's bound \[8, 64\]"):
        p.forward(x, y, outputs=[torch.empty(ROWS, 96, device="cuda")])
    with pytest.raises(tet.Error):  # outside the engine's profile: the backend's message
        p.forward(torch.randn(ROWS, 3, device="cuda"), torch.randn(ROWS, 3, device="cuda"),
                  outputs=[torch.empty(ROWS, 3, device="cuda")])
    torch.cuda.synchronize()
    p.forward(x, y, outputs=[out])
    torch.testing.assert_close(out, expected(x, y))


def test_stream_of_another_gpu(programs, plugin, torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs (this machine has one)")
    p = tet.load(programs / "device_fast.pte")
    x = torch.randn(ROWS, COLS, device="cuda:0")
    out = torch.empty_like(x)
    other = torch.cuda.Stream(device=1)
    with tet.stream(other):
        with pytest.raises(tet.InvalidArgumentError, match="stream"):
            p.forward(x, x, outputs=[out])
    p.forward(x, x, outputs=[out])
    torch.testing.assert_close(out, expected(x, x))


# ---- the caller's stream on a partition ----------------------------------------------------------

def test_partition_streams():
    parts = tet.split_device(0, [32], keep_remainder=True)
    assert len(parts) == 2 and parts[0].sm_count == 32 and parts[1].is_remainder
    s = parts[0].stream
    assert isinstance(int(s), int) and s.__cuda_stream__() == (0, int(s))
    extra = parts[0].make_stream()
    assert int(extra) != int(s) and len(parts[0].streams) == 2
    limits = tet.green_context_limits(0)
    assert limits.granularity > 0 and limits.sm_count >= 32
    with pytest.raises(tet.InvalidArgumentError) as info:
        tet.split_device(0, [limits.granularity + 1])
    assert info.value.closest_valid and info.value.limits["sm_count"] == limits.sm_count
    for part in parts:
        part.close()
    assert parts[0].closed
    with pytest.raises(tet.InvalidStateError):
        parts[0].stream


def test_async_call_on_a_partition_ordered_after_torch_work(programs, plugin, torch):
    parts = tet.split_device(0, [32], keep_remainder=True)
    mine = parts[0]
    ts = torch.cuda.ExternalStream(int(mine.stream))  # a torch.cuda.Stream on the partition's stream
    assert isinstance(ts, torch.cuda.Stream)
    p = tet.load(programs / "waves_20ms.pte")  # 64 SM-filling blocks of 10 ms: 20 ms on 32 SMs
    x = torch.ones(ROWS, COLS, device="cuda")
    y = torch.ones(ROWS, COLS, device="cuda")
    out = torch.empty(ROWS, COLS, device="cuda")
    with tet.stream(ts):  # warm-up (first launch loads the kernels)
        p.forward(x, y, outputs=[out])
    ts.synchronize()
    plugin.clear_sms()

    with torch.cuda.stream(ts):
        torch.cuda._sleep(50_000_000)  # torch work queued first on the same stream ...
        x.fill_(3.0)                   # ... that the engine must see
    start = time.perf_counter()
    with tet.stream(ts):
        (r,) = p.forward(x, y, outputs=[out])
    returned = time.perf_counter() - start
    ts.synchronize()
    total = time.perf_counter() - start
    assert r is out
    assert returned < 0.010, f"the call took {returned * 1e3:.2f} ms to return; it should only queue the 20 ms engine"
    assert total >= 0.020
    torch.testing.assert_close(out, torch.full_like(out, 2 * 3.0 - 0.5))
    sms = set(plugin.sms())
    assert sms, "the engine recorded no SMs"
    assert len(sms) <= mine.sm_count, f"the engine ran on {len(sms)} SMs, outside its {mine.sm_count}-SM partition"


def test_engine_spreads_without_a_partition(programs, plugin, torch):
    # The control of the test above: on the whole GPU the same engine uses more than 32 SMs.
    p = tet.load(programs / "waves_20ms.pte")
    x = torch.ones(ROWS, COLS, device="cuda")
    out = torch.empty_like(x)
    s = torch.cuda.Stream()
    with tet.stream(s):
        p.forward(x, x, outputs=[out])
    s.synchronize()
    plugin.clear_sms()
    with tet.stream(s):
        p.forward(x, x, outputs=[out])
    s.synchronize()
    assert len(set(plugin.sms())) > 32


def test_host_io_ready_on_return(programs, plugin):
    # boundary_copies: host x, y -> h2d -> engine (2 ms) -> d2h -> host out, under a guard on a partition.
    parts = tet.split_device(0, [16], keep_remainder=True)
    p = tet.load(programs / "boundary_copies.pte")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4096), dtype=np.float32)
    y = rng.standard_normal((64, 4096), dtype=np.float32)
    for _ in range(3):
        with tet.stream(parts[0].stream):
            (out,) = p.forward(x, y)
        np.testing.assert_allclose(out, 2 * x - 0.5 * y, rtol=1e-5)  # no synchronize: host output is written
        x = x + 1


def test_host_planned_program_with_numpy(programs, plugin):
    p = tet.load(programs / "elementwise.pte")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 64), dtype=np.float32)
    y = rng.standard_normal((8, 64), dtype=np.float32)
    (out,) = p.forward(x, y)  # no guard
    np.testing.assert_allclose(out, 2 * x - 0.5 * y, rtol=1e-5)
    parts = tet.split_device(0, [8])
    with tet.stream(parts[0].stream):
        (out,) = p.forward(y, x)
    np.testing.assert_allclose(out, 2 * y - 0.5 * x, rtol=1e-5)


def test_device_planned_program_with_cpu_ops(programs, plugin):
    # cpu_ops_around: xx = x + x (CPU), h2d, engine, d2h, result = out + y (CPU): 4x + 0.5y.
    p = tet.load(programs / "cpu_ops_around.pte")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 4096), dtype=np.float32)
    y = rng.standard_normal((64, 4096), dtype=np.float32)
    (out,) = p.forward(x, y)
    np.testing.assert_allclose(out, 4 * x + 0.5 * y, rtol=1e-5, atol=1e-5)
    parts = tet.split_device(0, [32], keep_remainder=True)
    with tet.stream(parts[0].stream):
        (out,) = p.forward(y, x)
    np.testing.assert_allclose(out, 4 * y + 0.5 * x, rtol=1e-5, atol=1e-5)


# ---- threads on two partitions -----------------------------------------------------------------

def test_two_threads_on_two_partitions_overlap(programs, plugin, torch):
    n, engine_ms = 10, 10.0
    parts = tet.split_device(0, [32, 32])
    programs_ = [tet.load(programs / "device_10ms.pte") for _ in parts]
    tensors = [[torch.ones(ROWS, COLS, device="cuda") for _ in range(3)] for _ in parts]
    for prog, part, (x, y, out) in zip(programs_, parts, tensors):  # warm-up
        with tet.stream(part.stream):
            prog.forward(x, y, outputs=[out])
        part.stream.synchronize()
    torch.cuda.synchronize()
    barrier = threading.Barrier(len(parts))
    errors = []

    def worker(i):
        try:
            x, y, out = tensors[i]
            barrier.wait()
            with tet.stream(parts[i].stream):
                for _ in range(n):
                    programs_[i].forward(x, y, outputs=[out])
            parts[i].stream.synchronize()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(parts))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall_ms = (time.perf_counter() - start) * 1e3
    assert not errors, errors
    for x, y, out in tensors:
        torch.testing.assert_close(out, expected(x, y))
    assert wall_ms < 1.3 * n * engine_ms, f"{wall_ms:.1f} ms for {n} calls of a {engine_ms} ms engine on each of two partitions"


# ---- profiling ---------------------------------------------------------------------------------

def test_etdump_of_device_calls(programs, plugin, torch, tmp_path):
    if not tet._C.HAVE_ETDUMP:
        pytest.skip("this build has no ETDump library")
    dump = tmp_path / "gpu.etdp"
    p = tet.load(programs / "device_fast.pte", etdump=dump)
    x = torch.randn(ROWS, COLS, device="cuda")
    out = torch.empty_like(x)
    s = torch.cuda.Stream()
    with tet.stream(s):
        for _ in range(5):
            p.forward(x, x, outputs=[out])
    s.synchronize()
    assert p.flush_profiling() == 0
    p.write_etdump()
    data = dump.read_bytes()
    assert len(data) > 0 and b"TensorRTBackend" in data
