"""How often a perf_analyzer window stops with the server clean, by perf_analyzer's --max-threads (Note
[one sending thread] in perf_bench.py). Against the real server on the CPU, no GPU needed: a model of
the perf bench's latency model's name and shapes on Triton's Python backend (harness.python_backend_models).
Each round runs one window per thread count and protocol (gRPC, then HTTP): --rate requests/s open loop,
--rate requests, perf_analyzer's own asynchronous client, as perf_bench.measure runs it; a window that
has not ended within --limit-s is a stall (killed, counted, and the next one runs).

  cd triton/tests && python3 stall_check.py --rounds 100 --threads 4,1
  (with TRTET_TRITONSERVER, TRTET_PERF_ANALYZER and tritonclient on PYTHONPATH, as scripts/test-triton sets them)

Prints each stall as it happens and a summary line last, e.g. (a run on a 2-core development machine):
`stall check: --max-threads 4: 4 of 200 windows stalled (2.12 s a window); --max-threads 1: 0 of 200
windows stalled (1.90 s a window)`.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import harness
import perf_bench


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--threads", default="4,1", help="perf_analyzer --max-threads values to compare")
    parser.add_argument("--rate", type=int, default=500, help="requests/s, and requests per window")
    parser.add_argument("--limit-s", type=float, default=15.0, help="a window not ended by then has stalled")
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    threads = [int(t) for t in args.threads.split(",") if t]
    root = tempfile.mkdtemp(prefix="trtet-stall-")
    try:
        env = harness.python_backend_models(root, ["latency"], perf_bench.SHAPE)
    except harness.Unavailable as e:
        print(f"stall check: not run: {e}")
        return 1
    os.environ.update(env)
    os.environ.pop("TRTET_TRITON_PRELOAD", None)
    binary, pa_env = perf_bench.perf_analyzer_command(None)
    counts = {t: {"windows": 0, "stalled": 0, "seconds": 0.0} for t in threads}
    server = harness.Server(os.path.join(root, "repo"))
    try:
        message = server.load("latency")
        if message is not None:
            print(f"stall check: the model did not load: {message}\n{server.log()[-2000:]}")
            return 1
        for r in range(args.rounds):
            for t in threads:
                for protocol in perf_bench.PROTOCOLS:
                    port = server.grpc_port if protocol == "grpc" else server.http_port
                    command = perf_bench.window_command(binary, port, protocol, "host", args.rate, args.rate,
                                                        os.path.join(root, "window.csv"), t)
                    t0 = time.monotonic()
                    try:
                        subprocess.run(command, capture_output=True, env=pa_env, timeout=args.limit_s)
                    except subprocess.TimeoutExpired:
                        counts[t]["stalled"] += 1
                        print(f"  round {r}: --max-threads {t}, {protocol}: stalled", flush=True)
                    counts[t]["windows"] += 1
                    counts[t]["seconds"] += time.monotonic() - t0
            if (r + 1) % 10 == 0:
                print(f"  {r + 1} rounds: " + ", ".join(f"{t}: {c['stalled']} of {c['windows']}" for t, c in counts.items()),
                      flush=True)
    finally:
        server.stop()
    print("stall check: " + "; ".join(
        f"--max-threads {t}: {c['stalled']} of {c['windows']} windows stalled ({c['seconds'] / max(c['windows'], 1):.2f} s a window)"
        for t, c in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
