"""Dynamic batching through Triton (scripts/gpu-triton with TRTET_GPU_TRITON_BATCH=1; docs/SERVING.md,
"Batching"): one program served one request per call and batched, measured with perf_analyzer.

  models   "single": triton_elementwise.pte (2x - 0.5y, dynamic within [8, 64]) with max_batch_size 0;
           "batched": the same program with max_batch_size 8 and Triton's dynamic batcher
           (--queue-delay-us, default 100). One instance each, on the whole GPU, in one server
  load     perf_analyzer over gRPC, closed loop, at each of --concurrency (default 1,4,16), requests of
           one row of 64 (host I/O), asynchronous calls, three windows of --window-s (default 3) each,
           taken as they come (no stability search)
  measured per model and concurrency: inferences/s, the client's p50 and p99 (perf_analyzer's CSV),
           and from Triton's statistics over the window, executions per request (below 1 where the
           batcher put several requests in one call) and the server's mean queue and compute per
           request

Checked first, for both models, through the server: a request of one row and one of three, each with
its own values (a batched model answers each request its own rows). Every perf_analyzer run must end
with no failed request (Triton's statistics). The summary is printed last: per concurrency, batched ÷
single inferences/s and p99; --json keeps everything. Exit status 1 when a check fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import harness
import perf_bench

MODELS = ("single", "batched")
COLS = 64


def make_models(repo, queue_delay_us):
    one_gpu = "instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n"
    harness.make_model(repo, "single", pte="triton_elementwise", extra=one_gpu)
    harness.make_model(repo, "batched", pte="triton_elementwise",
                       config=f'backend: "{harness.BACKEND}"\nmax_batch_size: 8\n'
                              f"dynamic_batching {{ max_queue_delay_microseconds: {queue_delay_us} }}\n" + one_gpu)


def check_values(server, model):
    """Requests of one row and of three, each with its own values, through the server (HTTP, host I/O)."""
    import tritonclient.http as httpclient
    rng = np.random.default_rng(17)
    for rows in (1, 3):
        x = rng.standard_normal((rows, COLS), dtype=np.float32)
        y = rng.standard_normal((rows, COLS), dtype=np.float32)
        inputs = [httpclient.InferInput("input_0", [rows, COLS], "FP32"),
                  httpclient.InferInput("input_1", [rows, COLS], "FP32")]
        inputs[0].set_data_from_numpy(x)
        inputs[1].set_data_from_numpy(y)
        got = server.client.infer(model, inputs).as_numpy("output_0")
        np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-5, atol=1e-5)


def statistics(server, model):
    """Triton's counters of `model`: requests served and failed, executions, inferences, and the
    queue's and compute's summed ns."""
    stats = server.client.get_inference_statistics(model)["model_stats"][0]
    inference = stats["inference_stats"]
    compute_ns = sum(int(inference[k]["ns"]) for k in ("compute_input", "compute_infer", "compute_output"))
    return {"success": int(inference["success"]["count"]), "fail": int(inference["fail"]["count"]),
            "executions": int(stats["execution_count"]), "inferences": int(stats["inference_count"]),
            "queue_ns": int(inference["queue"]["ns"]), "compute_ns": compute_ns}


def run(server, model, concurrency, window_s, work):
    """One perf_analyzer run: `model` at `concurrency`, closed loop; its CSV row and Triton's counters'
    change over it."""
    binary, env = perf_bench.perf_analyzer_command()
    csv_path = os.path.join(work, f"{model}-c{concurrency}.csv")
    # A batched model's dims leave the batch dim out (-b gives it); the other's shape is the request's.
    shape = [f"input_0:{COLS}", f"input_1:{COLS}"] if model == "batched" else [f"input_0:1,{COLS}", f"input_1:1,{COLS}"]
    command = [binary, "-m", model, "-u", f"127.0.0.1:{server.grpc_port}", "-i", "grpc", "--async",
               "--concurrency-range", str(concurrency), "--measurement-interval", str(int(window_s * 1000)),
               "--input-data", "random", "--percentile", "99", "-f", csv_path,
               # Measured as it comes: three windows whatever their spread (perf_analyzer's own rule,
               # 10 % between windows, is a stability search that a busy host can fail).
               "--stability-percentage", "1000", "--max-trials", "3"]
    if model == "batched":
        command += ["-b", "1"]
    for s in shape:
        command += ["--shape", s]
    before = statistics(server, model)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120 + 10 * window_s)
    after = statistics(server, model)
    if done.returncode != 0:
        raise RuntimeError(f"perf_analyzer on {model} at concurrency {concurrency} failed:\n"
                           + (done.stdout + done.stderr)[-2000:])
    row = perf_bench.read_csv(csv_path)
    delta = {k: after[k] - before[k] for k in after}
    served = max(delta["success"], 1)
    return {"model": model, "concurrency": concurrency,
            "inferences_per_s": float(row["Inferences/Second"]),
            "p50_us": float(row["p50 latency"]), "p99_us": float(row["p99 latency"]),
            "failed": delta["fail"], "requests": delta["success"],
            "executions_per_request": delta["executions"] / served,
            "queue_us": delta["queue_ns"] / served / 1e3, "compute_us": delta["compute_ns"] / served / 1e3}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", default="1,4,16", help="perf_analyzer's concurrencies, comma-separated")
    parser.add_argument("--window-s", type=float, default=3.0, help="perf_analyzer's measurement interval")
    parser.add_argument("--queue-delay-us", type=int, default=100, help="the batched model's max_queue_delay")
    parser.add_argument("--json", help="everything measured, as JSON")
    parser.add_argument("--work", help="a directory for the model repository and the CSVs (default: a temporary one)")
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    concurrencies = [int(c) for c in args.concurrency.split(",") if c]
    work = args.work or tempfile.mkdtemp(prefix="trtet-batch-bench-")
    repo = os.path.join(work, "repo")
    os.makedirs(repo, exist_ok=True)
    make_models(repo, args.queue_delay_us)
    t0 = time.monotonic()
    failures, rows = [], []
    server = harness.Server(repo)
    try:
        for model in MODELS:
            message = server.load(model)
            if message is not None:
                raise RuntimeError(f"{model} did not load: {message}")
            check_values(server, model)
        for concurrency in concurrencies:
            for model in MODELS:
                row = run(server, model, concurrency, args.window_s, work)
                rows.append(row)
                if row["failed"]:
                    failures.append(f"{model} at concurrency {concurrency}: {row['failed']} failed request(s)")
        for model in MODELS:
            check_values(server, model)  # and after the load
    except (Exception, harness.Terminated) as e:  # reported in the summary, with what was measured
        failures.append(f"{type(e).__name__}: {e}"[:2000])
    finally:
        server.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "failures": failures, "args": vars(args)}, f, indent=1)
    print(f"\n== batch bench summary ==\ntriton_elementwise, one row of {COLS} a request, gRPC host I/O, "
          f"perf_analyzer closed loop {args.window_s:g} s a run; batched: max_batch_size 8, max_queue_delay "
          f"{args.queue_delay_us} us; {time.monotonic() - t0:.0f} s")
    print(f"{'model':<9}{'conc':>5}{'infer/s':>10}{'p50 us':>9}{'p99 us':>9}{'exec/req':>10}{'queue us':>10}{'compute us':>12}")
    for r in rows:
        print(f"{r['model']:<9}{r['concurrency']:>5}{r['inferences_per_s']:>10.0f}{r['p50_us']:>9.0f}{r['p99_us']:>9.0f}"
              f"{r['executions_per_request']:>10.2f}{r['queue_us']:>10.1f}{r['compute_us']:>12.1f}")
    by = {(r["model"], r["concurrency"]): r for r in rows}
    ratios = []
    for c in concurrencies:
        if ("single", c) in by and ("batched", c) in by:
            s, b = by[("single", c)], by[("batched", c)]
            ratios.append(f"c{c} {b['inferences_per_s'] / max(s['inferences_per_s'], 1e-9):.2f}x "
                          f"(p99 {b['p99_us'] / max(s['p99_us'], 1e-9):.2f}x)")
    print("batch bench: batched / single inferences/s " + ("; ".join(ratios) if ratios else "none measured")
          + ("; FAILED: " + " | ".join(failures) if failures else "; checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
