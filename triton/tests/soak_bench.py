"""A serving soak (scripts/gpu-triton with TRTET_GPU_TRITON_SOAK_MIN=<minutes>): three models on three
partitions of one server, driven open loop for --minutes, with 1 % of one model's requests malformed.

  latency      triton_latency.pte on 32 SMs: perf_analyzer open loop at --rate, one window after another
               (each window's p99 is checked against --p99-bound-us: "within its bound throughout");
               one request in TRACE_RATE is traced by the server, so each window also has the server's
               own p99 (queue + compute, the whole request) beside the client's: a window over the
               bound says which side its time went to. A window whose perf_analyzer does not finish
               is stopped and says how many of its requests the server completed, failed and holds.
               Where the server failed none, holds none and is ready, the load generator stopped
               (perf_bench.WindowStalled.client_side): the window is run again once, and the stall is
               reported with the server's own p99 over its span, from the traces; a stall with the
               server at fault, or a second stall of the same window, fails the soak
  dynamic      triton_elementwise.pte (DYNAMIC_BOUND [8, 64]) on 16 SMs: a client of its own sends raw
               HTTP/binary requests of random shapes within the bound and checks every output; one in
               100 is malformed (request_mix): a wrong data type, a shape over the bound, a missing
               input, a truncated body. Each must be refused (HTTP 400) with its reason, and the next
               request served right
  aggressor    triton_aggressor.pte on the remainder: perf_analyzer at concurrency 4 throughout

Memory is sampled as the soak runs: the server's RSS (/proc) every 10 s, and its device memory
(nvidia-smi's figure for the server's process, or the GPU's used memory where nvidia-smi lists no
process, as in some containers) between two latency windows, never inside one: nvidia-smi's queries
take the driver's lock, which can stall the CUDA calls of every process on the GPU for milliseconds,
so a reading inside a window would put its own stall into the p99 it measures. After the first
--warmup-s seconds both must stay flat (within --rss-slack-mib and --device-slack-mib).
Prints the samples and a summary line last; exit status 1 when a check fails.
"""

import argparse
import http.client
import json
import os
import random
import sys
import tempfile
import threading
import time

import numpy as np

import harness
import perf_bench

BOUND = (8, 64)
MALFORMED = ("wrong_dtype", "over_bound", "missing_input", "truncated_body")
# What the refusal of each malformed kind must say (the server's or the backend's reason).
REASONS = {
    "wrong_dtype": ("data-type", "datatype", "data type", "TYPE_FP32", "FP32"),
    "over_bound": ("within [8, 64]",),
    "missing_input": ("input_1", "expected 2 inputs", "inputs"),
    "truncated_body": ("unexpected", "size", "bytes", "binary"),
}


def request_mix(count, seed=0, malformed_every=100):
    """The kinds of `count` requests: 'good' but for one in `malformed_every` (at a random place in each
    block of that many), which cycles through MALFORMED so that every kind comes up."""
    rng = random.Random(seed)
    kinds = ["good"] * count
    k = 0
    for block in range(0, count, malformed_every):
        span = min(malformed_every, count - block)
        if span < malformed_every:
            break
        kinds[block + rng.randrange(span)] = MALFORMED[k % len(MALFORMED)]
        k += 1
    return kinds


def build_request(kind, rng):
    """(shape, x, y, header bytes, body bytes) of one raw HTTP/binary request of `kind` for the dynamic
    model; x and y are None where the kind sends no valid tensors to check against."""
    rows = int(rng.integers(1, BOUND[0] + 1))
    cols = int(rng.integers(4, BOUND[1] + 1))
    if kind == "over_bound":
        rows = BOUND[0] + 1
    shape = [rows, cols]
    x = rng.standard_normal(shape, dtype=np.float32)
    y = rng.standard_normal(shape, dtype=np.float32)
    datatype = "INT32" if kind == "wrong_dtype" else "FP32"
    tensors = [("input_0", x), ("input_1", y)]
    if kind == "missing_input":
        tensors = tensors[:1]
    inputs = [{"name": n, "shape": shape, "datatype": datatype, "parameters": {"binary_data_size": t.nbytes}}
              for n, t in tensors]
    header = json.dumps({"inputs": inputs, "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}]})
    body = b"".join(t.tobytes() for _, t in tensors)
    if kind == "truncated_body":
        body = body[: len(body) - 4 * cols]  # one row short of what binary_data_size says
    return shape, x, y, header.encode(), body


def send(connection, model, header, body):
    connection.request("POST", f"/v2/models/{model}/infer", body=header + body,
                       headers={"Inference-Header-Content-Length": str(len(header)),
                                "Content-Type": "application/octet-stream"})
    response = connection.getresponse()
    data = response.read()
    return response.status, response.getheader("Inference-Header-Content-Length"), data


def output_of(data, header_length, shape):
    """The output of a response: binary after its JSON header, or in the JSON where the server sent it so."""
    n = int(header_length) if header_length is not None else len(data)
    meta = json.loads(data[:n])
    out = meta["outputs"][0]
    if list(out["shape"]) != list(shape):
        raise AssertionError(f"output shape {out['shape']}, request {shape}")
    if header_length is None:
        return np.asarray(out.get("data", []), dtype=np.float32).reshape(shape)
    size = int(out.get("parameters", {}).get("binary_data_size", 0))
    if size != int(np.prod(shape)) * 4 or len(data) < n + size:
        raise AssertionError(f"output of {size} bytes (of {len(data) - n}) for shape {shape}")
    return np.frombuffer(data[n:n + size], dtype=np.float32).reshape(shape)


class DynamicClient(threading.Thread):
    """The dynamic model's client: open loop at `rate` (a send every 1/rate s, or at once when late)."""

    def __init__(self, port, rate, stop, seed=1):
        super().__init__()
        self.port, self.rate, self.stop, self.seed = port, rate, stop, seed
        self.counts = {"good": 0, "wrong": 0, "failed_good": 0, **{k: 0 for k in MALFORMED}}
        self.errors = []
        self.refusals = {}

    def run(self):
        rng = np.random.default_rng(self.seed)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        next_at = time.monotonic()
        previous_malformed = None
        block = 0
        kinds = []
        while True:
            if not kinds:
                kinds = request_mix(100, seed=self.seed * 1_000_003 + block)
                # the malformed kinds in turn across blocks, each block holding one
                kinds = [MALFORMED[block % len(MALFORMED)] if k != "good" else k for k in kinds]
                block += 1
            kind = kinds.pop(0)
            if self.stop.is_set():
                break
            next_at += 1.0 / self.rate
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            shape, x, y, header, body = build_request(kind, rng)
            try:
                status, length, data = send(connection, "dynamic", header, body)
            except (OSError, http.client.HTTPException) as e:
                self.errors.append(f"{kind}: {e}")
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                continue
            if kind == "good":
                if status != 200:
                    self.counts["failed_good"] += 1
                    self.errors.append(f"good request {shape} after {previous_malformed}: {status} {data[:300]!r}")
                else:
                    try:
                        got = output_of(data, length, shape)
                    except (AssertionError, ValueError, KeyError) as e:
                        self.counts["wrong"] += 1
                        self.errors.append(f"output for {shape}: {e}")
                        continue
                    if not np.allclose(got, 2 * x - 0.5 * y, rtol=1e-5, atol=1e-5):
                        self.counts["wrong"] += 1
                        self.errors.append(f"wrong output for {shape}")
                    self.counts["good"] += 1
                previous_malformed = None
            else:
                text = data.decode(errors="replace")
                if status != 400 or not any(r in text for r in REASONS[kind]):
                    self.errors.append(f"{kind}: {status} {text[:300]}")
                else:
                    self.counts[kind] += 1
                    self.refusals.setdefault(kind, text[:200])
                previous_malformed = kind
        connection.close()


def rss_mib(pid):
    try:
        return harness.rss_mib(pid)
    except (OSError, StopIteration):
        return -1.0


def memory_failures(rss, device, warmup_s, rss_slack_mib, device_slack_mib):
    """What the memory samples fail, after the warm-up: rss and device are [(s, MiB)]; a reading of -1
    is one that could not be made."""
    failures = []
    for name, samples, slack in (("host RSS", rss, rss_slack_mib), ("device memory", device, device_slack_mib)):
        settled = [mib for t, mib in samples if t >= warmup_s]
        if len(settled) < 2:
            failures.append(f"{name}: {len(settled)} sample(s) after the {warmup_s:g} s warm-up; 2 at least")
        elif min(settled) < 0:
            failures.append(f"{name} could not be read")
        elif max(settled) - min(settled) > slack:
            failures.append(f"{name} moved {min(settled):.0f} to {max(settled):.0f} MiB after warm-up (slack {slack:g})")
    return failures


TRACE_RATE = 10  # one latency request in 10 traced


def add_trace_percentiles(windows, traces):
    """Each window's server-side percentiles from the traced latency requests that started in it (a
    window without a known span has none)."""
    for w in windows:
        if w.get("start_ns") is None or w.get("end_ns") is None:
            continue
        perf_bench.add_server_percentiles(w, perf_bench.server_times_us(traces, "latency", w["start_ns"], w["end_ns"]))


def window_failures(windows, bound_us):
    """The latency windows above the bound, each with where its time went: the client's p99 beside the
    server's (queue + compute, and its whole request) from the traced requests of that window."""
    over = [w for w in windows if w["p99_us"] > bound_us]
    if not over:
        return []
    said = ", ".join(f"{w['t_s']:.0f} s: client {w['p99_us']:.0f}, server {w.get('server_p99_us', float('nan')):.0f}"
                     f" (request {w.get('request_p99_us', float('nan')):.0f})" for w in over[:6])
    return [f"latency p99 above {bound_us:.0f} us in {len(over)} of {len(windows)} windows (p99 us, {said})"]


def client_stall_failures(client_stalls, bound_us):
    """A window whose load generator stalled is run again, but its span is still served: the server's
    own p99 over it (the whole request, from the traces) must be within the bound, and it must have
    traced requests to say so."""
    failures = []
    for c in client_stalls:
        p99 = c.get("request_p99_us")
        if not c.get("traced") or p99 is None or p99 != p99:
            failures.append(f"the window at {c['t_s']:.0f} s stalled at the client and the server traced none of "
                            "its requests, so its span is not measured")
        elif p99 > bound_us:
            failures.append(f"the window at {c['t_s']:.0f} s stalled at the client, and the server's p99 over its "
                            f"span was {p99:.0f} us, above {bound_us:.0f} us")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="the latency model's requests/s")
    parser.add_argument("--dynamic-rate", type=float, default=200.0)
    parser.add_argument("--window", type=float, default=30.0, help="seconds per latency window")
    parser.add_argument("--p99-bound-us", type=float, default=2000.0)
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--rss-slack-mib", type=float, default=32.0)
    parser.add_argument("--device-slack-mib", type=float, default=4.0)
    parser.add_argument("--client-cores", type=int, default=0,
                        help="run the clients (perf_analyzer, the dynamic client) on this many of the host's last "
                             "cores and the server on the rest (0: no split)")
    parser.add_argument("--json")
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    if args.client_cores:
        server_cores, client_cores = harness.split_host_cores(args.client_cores)
        print(f"host cores: server {harness.cores_text(server_cores)}, clients {harness.cores_text(client_cores)}",
              flush=True)
    plan_gpu = harness.gpu_plan_fields()
    work = tempfile.mkdtemp(prefix="trtet-soak-")
    repo = os.path.join(work, "repo")
    os.makedirs(repo)
    plan = os.path.join(repo, "plan.json")
    harness.write_plan(plan, [("latency", 32), ("dynamic", 16)], remainder="aggressor", gpu=plan_gpu)
    group = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    for name, pte in (("latency", "triton_latency"), ("dynamic", "triton_elementwise"), ("aggressor", "triton_aggressor")):
        harness.make_model(repo, name, pte=pte, parameters={"plan_file": plan}, extra=group)
    trace_path = os.path.join(work, "trace.json")
    server = harness.Server(repo, args=perf_bench.trace_args(trace_path))
    failures = []
    rss_samples = []  # (s, MiB), every 10 s
    device_samples = []  # (s, MiB), between latency windows
    windows = []
    stalled = []  # (s, what perf_bench.measure said) for each window that did not finish: failures
    client_stalls = []  # windows whose load generator stopped with the server clean: run again once
    client = None
    out = {}
    try:
        for name in ("latency", "dynamic", "aggressor"):
            message = server.load(name)
            if message is not None:
                raise RuntimeError(f"{name} did not load: {message}\n{server.log()[-2000:]}")
        perf_bench.check_values(server, "latency")
        # One latency request in TRACE_RATE traced (Triton's timestamps), for each window's server-side
        # p99 beside its client p99: which side a window over the bound was spent on.
        perf_bench.enable_trace(server, "latency", rate=TRACE_RATE, log_frequency=100)
        stop = threading.Event()
        aggressor = perf_bench.AggressorLoad(server, work)
        client = DynamicClient(server.http_port, args.dynamic_rate, stop)
        t0 = time.monotonic()
        client.start()

        def sample_rss():
            rss_samples.append((time.monotonic() - t0, rss_mib(server.process.pid)))

        def sample_device():  # only between latency windows (the module's docstring says why)
            used, per = perf_bench.device_memory_mib()
            device_samples.append((time.monotonic() - t0, per.get(server.process.pid, used)))

        sampler_stop = threading.Event()

        def sampler():
            while not sampler_stop.wait(10.0):
                sample_rss()

        sample_rss()
        sample_device()
        sampling = threading.Thread(target=sampler)
        sampling.start()
        try:
            def record_client_stall(tag, e):  # measure_once_more runs the window again after this
                client_stalls.append({"t_s": time.monotonic() - t0, "said": str(e),
                                      "start_ns": e.start_ns, "end_ns": e.end_ns})
                print(f"  {client_stalls[-1]['t_s']:6.0f} s: LOAD GENERATOR {e.what.upper()}, the window runs again: {e}",
                      flush=True)

            k = 0
            while time.monotonic() - t0 < args.minutes * 60:
                if k:
                    sample_device()
                try:
                    w = perf_bench.measure_once_more(record_client_stall, server, "grpc", "host", args.rate,
                                                     args.window, work, f"soak_{k}")
                except perf_bench.WindowStalled as e:  # the soak goes on and says so
                    stalled.append((time.monotonic() - t0, str(e)))
                    print(f"  {stalled[-1][0]:6.0f} s: STALLED: {e}", flush=True)
                    k += 1
                    continue
                # The client's p50 and the server's mean queue + compute tell a window whose p99 rose at
                # the client from one whose server side rose with it; start/end place its traces.
                windows.append({"t_s": time.monotonic() - t0, "p99_us": w["p99_us"], "p50_us": w["p50_us"],
                                "throughput": w["throughput"], "server_mean_us": w["server_us"],
                                "start_ns": w["start_ns"], "end_ns": w["end_ns"]})
                print(f"  {windows[-1]['t_s']:6.0f} s: latency p50 {w['p50_us']:.0f}, p99 {w['p99_us']:.0f} us, server "
                      f"mean {w['server_us']:.0f} us, {w['throughput']:.0f}/s; dynamic "
                      f"{client.counts['good']} good, {sum(client.counts[m] for m in MALFORMED)} malformed refused",
                      flush=True)
                k += 1
        finally:
            stop.set()
            sampler_stop.set()
            client.join(timeout=60)
            sampling.join(timeout=30)
            aggressor.stop()
        sample_rss()
        sample_device()
        perf_bench.check_values(server, "latency")
        if stalled:
            failures.append(f"{len(stalled)} of {len(windows) + len(stalled)} latency windows did not finish, "
                            f"first at {stalled[0][0]:.0f} s: {stalled[0][1][:600]}")
        if client.errors:
            failures.append(f"{len(client.errors)} dynamic-client errors, first: {client.errors[0][:300]}")
        if client.counts["wrong"]:
            failures.append(f"{client.counts['wrong']} wrong outputs")
        missing = [m for m in MALFORMED if client.counts[m] == 0]
        if missing:
            failures.append(f"no refused request of kind {', '.join(missing)}")
        failures += memory_failures(rss_samples, device_samples, args.warmup_s, args.rss_slack_mib,
                                    args.device_slack_mib)
    except Exception as e:
        failures.append(str(e)[-1500:])
    finally:
        if client is not None:  # what the dynamic model's client saw, also when the soak stopped early
            out = {"counts": client.counts, "errors": client.errors[:20], "refusals": client.refusals}
        out.update({"rss_samples": rss_samples, "device_samples": device_samples, "windows": windows,
                    "stalled": stalled, "client_stalls": client_stalls})
        if failures or stalled or client_stalls:
            out["server_log_tail"] = server.log()[-3000:]
        server.stop()
    traces = {}
    if windows or client_stalls:
        try:  # the traces are complete once the server has exited
            traces = perf_bench.read_traces(trace_path)
        except (OSError, ValueError) as e:
            failures.append(f"the traces could not be read: {e}")
    add_trace_percentiles(windows, traces)
    add_trace_percentiles(client_stalls, traces)
    failures += window_failures(windows, args.p99_bound_us)
    failures += client_stall_failures(client_stalls, args.p99_bound_us)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print("\n== soak summary ==")
    print("host RSS samples (s: MiB): " + ", ".join(f"{t:.0f}:{r:.0f}" for t, r in rss_samples))
    print("device memory samples, between latency windows (s: MiB): " +
          ", ".join(f"{t:.0f}:{d}" for t, d in device_samples))
    if windows:
        print("latency windows (s: client p50 / p99; server p99 of queue + compute, of the whole request, of "
              "the frontend's span; traced requests), us:")
        for w in windows:
            print(f"  {w['t_s']:6.0f}: {w['p50_us']:.0f} / {w['p99_us']:.0f}; "
                  + "; ".join(f"{w.get(k, float('nan')):.0f}" for k in ("server_p99_us", "request_p99_us", "frontend_p99_us"))
                  + f"; {w.get('traced', 0)}")
        p99s = [w["p99_us"] for w in windows]
        print(f"latency p99 per {args.window:g} s window: min {min(p99s):.0f}, max {max(p99s):.0f} us (bound "
              f"{args.p99_bound_us:.0f}), {len(windows)} windows")
    for t, what in stalled:
        print(f"  window at {t:.0f} s did not finish: {what}")
    for c in client_stalls:
        print(f"  window at {c['t_s']:.0f} s: the load generator stalled with the server clean, run again; the "
              f"server's p99 over its span (queue + compute, the whole request; traced requests): "
              f"{c.get('server_p99_us', float('nan')):.0f}, {c.get('request_p99_us', float('nan')):.0f} us; "
              f"{c.get('traced', 0)}: {c['said'][:600]}")
    counts = out.get("counts", {})
    for kind, text in out.get("refusals", {}).items():
        print(f"  {kind} refused: {text}")
    print(f"soak: {args.minutes:g} min, dynamic model {counts.get('good', 0)} served right, "
          f"{sum(counts.get(m, 0) for m in MALFORMED)} malformed refused with their reason "
          f"({', '.join(f'{m} {counts.get(m, 0)}' for m in MALFORMED)}), wrong outputs {counts.get('wrong', 0)}"
          + (f", {len(client_stalls)} window(s) run again after the load generator stalled with the server clean"
             if client_stalls else "") + ": "
          + ("FAILED: " + "; ".join(failures) if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
