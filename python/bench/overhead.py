#!/usr/bin/env python3
"""Host time per call from Python minus the same call from C++ (device I/O, under a guard).

    python/bench/overhead.py <test_programs dir> <libtrtet_test_engines_plugin.so> [--calls N] [--repeats R]

The program is device_fast.pte (x, y [8, 64] float32 on the device -> out, the elementwise engine,
no spin): what a call costs the host is the runtime's, not the engine's. Python: method(x, y,
outputs=[out]) with torch CUDA tensors under stream(s); C++: the same Module set_input/set_output/
execute with the same tensors, in a loop of the extension (Method._time_cpp); and the call bound
once (Method.bind), which skips converting the arrays. Both are timed in
blocks of N calls with the stream synchronized between blocks (outside the timing), alternating,
R times; the row gives the medians. Prints one line starting with "P-py".
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs")
    ap.add_argument("plugin")
    ap.add_argument("--calls", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=21)
    a = ap.parse_args()

    import torch
    import torchtrt_executorch as tet

    lib = ctypes.CDLL(a.plugin)
    if lib.trtet_test_engines_install() != 0:
        print("P-py: could not install the test engines", file=sys.stderr)
        return 1
    p = tet.load(f"{a.programs}/device_fast.pte")
    m = p.forward
    x = torch.randn(8, 64, device="cuda")
    y = torch.randn(8, 64, device="cuda")
    out = torch.empty(8, 64, device="cuda")
    s = torch.cuda.Stream()
    outs = [out]
    with tet.stream(s):
        for _ in range(a.calls):
            m(x, y, outputs=outs)
        s.synchronize()
        m._time_cpp([x, y], outs, a.calls)
        s.synchronize()
        bound = m.bind(x, y, outputs=outs)
        py, pyb, cpp = [], [], []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            for _ in range(a.calls):
                m(x, y, outputs=outs)
            py.append((time.perf_counter() - t0) / a.calls * 1e6)
            s.synchronize()
            t0 = time.perf_counter()
            for _ in range(a.calls):
                bound()
            pyb.append((time.perf_counter() - t0) / a.calls * 1e6)
            s.synchronize()
            cpp.append(m._time_cpp([x, y], outs, a.calls))
            s.synchronize()
    torch.testing.assert_close(out, 2 * x - 0.5 * y)
    py_us, cpp_us = statistics.median(py), statistics.median(cpp)
    print(f"P-py  host time per call from Python, device I/O under a guard: {py_us:.2f} us; the same call from C++: "
          f"{cpp_us:.2f} us; Python adds {py_us - cpp_us:.2f} us (goal <= 2 us; medians of {a.repeats} blocks of "
          f"{a.calls} calls; Python min/max {min(py):.2f}/{max(py):.2f}, C++ {min(cpp):.2f}/{max(cpp):.2f})")
    pyb_us = statistics.median(pyb)
    print(f"P-py-bound  the same call bound once (Method.bind): {pyb_us:.2f} us; Python adds {pyb_us - cpp_us:.2f} us "
          f"(goal <= 2 us; min/max {min(pyb):.2f}/{max(pyb):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
