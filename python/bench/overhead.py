#!/usr/bin/env python3
"""Host time per call from Python minus the same call from C++, per framework, I/O and input count.

    python/bench/overhead.py <test_programs dir> <libtrtet_test_engines_plugin.so> [--calls N] [--repeats R]

The programs: device_1in.pte, device_fast.pte (2 inputs) and device_8in.pte: x (and y, and six more
inputs set on every call and read by nothing) [8, 64] float32 -> out, the elementwise engine with
no spin: what a call costs the host is the runtime's, not the engine's. Each row is the plain call
a user writes, ``program.forward(*inputs, outputs=[out])``, under ``stream(s)``, with torch, cupy or
numpy arrays on the device or the host, against two C++ references on the same arrays, in a loop
of the extension (``Method._time_cpp``): "C++" is ExecuTorch's Module set_input/set_output/execute
as a C++ application writes it (the reference the goal is stated against), "pkg" is this package's
own path without Python (what a Python call runs once its arrays are read). Blocks of N calls,
the stream synchronized between blocks (outside the timing), the three alternating, R times;
"Python adds" is the median over the blocks of (Python - C++); "reading the arrays" is the part of it
spent reading and checking the arrays (``Method._time_prepare``, in C++ without the Python call).
Every line starts with "P-py".
Before this package read torch tensors itself (DLPack through torch's Python-level __dlpack__),
the 2-input torch device row added 12.8 to 17.9 us (17.9 the worse run): printed beside it.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
import timeit

BEFORE_US = 17.9  # the 2-input torch device row before: Python added 12.8 to 17.9 us
GOAL_US = 2.0


def measure(call, cpp, sync, calls, repeats):
    """Medians over `repeats` blocks of `calls` calls: Python, C++ Module, C++ package, and the
    median of the per-block differences Python - Module."""
    for _ in range(calls):  # warm-up
        call()
    sync()
    cpp(calls)
    sync()
    py, mod, pkg, diff = [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        p = (time.perf_counter() - t0) / calls * 1e6
        sync()
        ref = cpp(calls)
        sync()
        py.append(p)
        mod.append(ref["module"])
        pkg.append(ref["package"])
        diff.append(p - ref["module"])
    return {"py": statistics.median(py), "module": statistics.median(mod), "package": statistics.median(pkg),
            "adds": statistics.median(diff), "min": min(py), "max": max(py)}


def row(name, r, goal=False, before=None, read=None):
    verdict = ""
    if goal:
        verdict = f"  goal <= {GOAL_US:.0f} us: {'met' if r['adds'] <= GOAL_US else 'NOT met'}"
    was = f"  (before: {before:.1f} us)" if before is not None else ""
    print(f"P-py {name:<34} Python {r['py']:7.2f} us  C++ {r['module']:7.2f} us  pkg {r['package']:7.2f} us  "
          f"Python adds {r['adds']:6.2f} us{was}{verdict}{'' if read is None else f'  (reading the arrays: {read:.2f} us)'}",
          flush=True)


def read_us(m, xs, outs, calls, repeats=7):
    """Median over `repeats` of the mean time the package takes to read and check a call's arrays
    (Method._time_prepare: no Python call around it): the share of "Python adds" spent reading."""
    return statistics.median(m._time_prepare(xs, outs, calls) for _ in range(repeats))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs")
    ap.add_argument("plugin")
    ap.add_argument("--calls", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=21)
    a = ap.parse_args()

    import numpy as np
    import torch
    import torchtrt_executorch as tet
    try:
        import cupy
    except ImportError:
        cupy = None

    lib = ctypes.CDLL(a.plugin)
    if lib.trtet_test_engines_install() != 0:
        print("P-py: could not install the test engines", file=sys.stderr)
        return 1
    programs = {1: tet.load(f"{a.programs}/device_1in.pte"), 2: tet.load(f"{a.programs}/device_fast.pte"),
                8: tet.load(f"{a.programs}/device_8in.pte")}
    s = torch.cuda.Stream()
    sync = s.synchronize
    shape = (8, 64)
    print(f"P-py overhead: medians of {a.repeats} blocks of {a.calls} calls, [8, 64] float32, under "
          f"stream(torch.cuda.Stream()); torch {torch.__version__}, cupy {getattr(cupy, '__version__', 'absent')}, "
          f"numpy {np.__version__}", flush=True)
    x0 = torch.randn(*shape, device="cuda")
    print(f"P-py array paths: torch {tet.array_path(x0)}, cupy {tet.array_path(cupy.ones(2)) if cupy else '-'}, "
          f"numpy {tet.array_path(np.ones(2))}", flush=True)

    def arrays(framework, device, n):
        if framework == "torch":
            dev = "cuda" if device else "cpu"
            return [torch.randn(*shape, device=dev) for _ in range(n)], torch.empty(*shape, device=dev)
        if framework == "cupy":
            return [cupy.random.standard_normal(shape, dtype=cupy.float32) for _ in range(n)], \
                cupy.empty(shape, dtype=cupy.float32)
        rng = np.random.default_rng(0)
        return [rng.standard_normal(shape, dtype=np.float32) for _ in range(n)], np.empty(shape, np.float32)

    failures = 0
    cases = [("torch", True), ("cupy", True), ("torch", False), ("numpy", False)]
    for framework, device in cases:
        if framework == "cupy" and cupy is None:
            print("P-py cupy rows: cupy is not installed", flush=True)
            continue
        for n in (1, 2, 8):
            name = f"{framework} {'device' if device else 'host'} I/O, {n} input{'s' if n > 1 else ''}"
            try:
                p = programs[n]
                m = p.forward
                xs, out = arrays(framework, device, n)
                outs = [out]
                torch.cuda.synchronize()
                if cupy is not None:
                    cupy.cuda.Device().synchronize()
                with tet.stream(s):
                    r = measure(lambda: p.forward(*xs, outputs=outs), lambda k: m._time_cpp(xs, outs, k),
                                sync, a.calls, a.repeats)
                sync()
                got = np.asarray(out.cpu() if framework == "torch" else (cupy.asnumpy(out) if framework == "cupy" else out))
                first = np.asarray(xs[0].cpu() if framework == "torch" else (cupy.asnumpy(xs[0]) if framework == "cupy" else xs[0]))
                second = np.asarray(xs[1 if n > 1 else 0].cpu() if framework == "torch" else
                                    (cupy.asnumpy(xs[1 if n > 1 else 0]) if framework == "cupy" else xs[1 if n > 1 else 0]))
                np.testing.assert_allclose(got, 2 * first - 0.5 * second, rtol=1e-5, atol=1e-6)
                row(name, r, goal=device and framework in ("torch", "cupy"),
                    before=BEFORE_US if (framework, device, n) == ("torch", True, 2) else None,
                    read=read_us(m, xs, outs, a.calls))
            except Exception as e:  # one row's failure is reported; the others still run
                failures += 1
                print(f"P-py {name}: FAILED: {type(e).__name__}: {e}", flush=True)

    # The 2-input torch device call three more ways: outputs allocated by the package, bound once,
    # and torch read through its attributes rather than the DLPack C exchange API.
    try:
        m = programs[2].forward
        x, y = torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda")
        out = torch.empty(*shape, device="cuda")
        torch.cuda.synchronize()
        with tet.stream(s):
            r = measure(lambda: m(x, y), lambda k: m._time_cpp([x, y], None, k), sync, a.calls, a.repeats)
            r["module"], r["adds"] = r["package"], r["py"] - r["package"]
            row("torch device, outputs allocated", r)
            bound = m.bind(x, y, outputs=[out])
            row("torch device, bound once", measure(bound, lambda k: m._time_cpp([x, y], [out], k), sync, a.calls,
                                                    a.repeats))
            tet._C._use_exchange_api(False)
            try:
                path = tet.array_path(x)
                row(f"torch device, read by {path}",
                    measure(lambda: m(x, y, outputs=[out]), lambda k: m._time_cpp([x, y], [out], k), sync, a.calls,
                            a.repeats))
            finally:
                tet._C._use_exchange_api(True)
        sync()
        torch.testing.assert_close(out, 2 * x - 0.5 * y)
    except Exception as e:
        failures += 1
        print(f"P-py extra rows: FAILED: {type(e).__name__}: {e}", flush=True)

    # What reading a torch tensor costs in Python, attribute by attribute (ns per read).
    def ns(stmt):
        n = 20000
        return timeit.timeit(stmt, number=n) / n * 1e9
    costs = {"data_ptr()": lambda: x0.data_ptr(), "shape": lambda: x0.shape, "dtype": lambda: x0.dtype,
             "is_cuda": lambda: x0.is_cuda, "get_device()": lambda: x0.get_device(),
             "is_contiguous()": lambda: x0.is_contiguous(), "__dlpack__()": lambda: x0.__dlpack__(),
             "__cuda_array_interface__": lambda: x0.__cuda_array_interface__,
             "tet.array_path": lambda: tet.array_path(x0)}
    print("P-py torch reads (ns, incl. a lambda call): " +
          ", ".join(f"{k} {ns(v):.0f}" for k, v in costs.items()), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
