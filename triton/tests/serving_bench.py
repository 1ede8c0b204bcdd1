"""Two models served at once by the real Triton server through tritonclient, on a GPU. No longer the
measure (perf_bench.py is, with perf_analyzer; a closed-loop Python client on the server's own cores
measures the host more than the GPU): scripts/gpu-triton runs perf_bench.py, which uses this file's
Io (value checks through CUDA shared memory) and SM probe. It still runs by hand.

  latency    triton_latency.pte: one wave of 32 blocks of 25 us (test engine "waves", records its SMs;
             its SM marker kernel runs only during an SM probe, record_sms=probe)
  aggressor  triton_aggressor.pte: 2048 blocks of 50 us (about 1 ms a call on 100 SMs)

Two layouts, each in a server of its own:
  partitioned  a plan file: "latency" on 32 SMs, the remainder ("aggressor") for the aggressor
  whole        no parameters: both instances on the whole GPU (Triton's usual way)

In each, from one client thread, with host I/O (HTTP binary tensors) and device I/O
(CUDA shared memory made with cupy): ROUNDS alternating rounds of N / ROUNDS calls alone, then as many beside the
aggressor (driven from AGGRESSOR_THREADS client threads of another process, paused between rounds, its queue full before a round is measured); the p99s are over every round's calls, so drift on the host
hits both sides alike. Printed: p50/p99 alone and beside, p99 beside / alone, calls/s of
each model, and the SMs each model's engine ran on (the SM probe, through the plugin's request file).
Exit status 1 when a check fails: the partitioned p99 ratio above the bound, or an engine off its
partition's SMs.
"""

import argparse
import base64
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time

import numpy as np
import tritonclient.http as httpclient

import harness

LAT_SMS = 32
AGGRESSOR_THREADS = 2
ROUNDS = 6
SHAPE = [1, 1024]


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


class Io:
    """One client's inputs and outputs for a model: host (binary HTTP) or device (CUDA shared memory)."""

    def __init__(self, client, kind, tag):
        self.client = client
        self.kind = kind
        rng = np.random.default_rng(1)
        self.x = rng.standard_normal(SHAPE, dtype=np.float32)
        self.y = rng.standard_normal(SHAPE, dtype=np.float32)
        self.inputs = [httpclient.InferInput("input_0", SHAPE, "FP32"), httpclient.InferInput("input_1", SHAPE, "FP32")]
        self.outputs = [httpclient.InferRequestedOutput("output_0", binary_data=True)]
        self.regions = []
        if kind == "host":
            self.inputs[0].set_data_from_numpy(self.x)
            self.inputs[1].set_data_from_numpy(self.y)
        else:
            import cupy
            nbytes = self.x.nbytes
            self.buffers = {}
            with cupy.cuda.Device(0):
                for n, host in (("x", self.x), ("y", self.y), ("out", None)):
                    self.buffers[n] = harness.cuda_region_array(self.x.size, values=host)
                cupy.cuda.Device(0).synchronize()
            for n, buf in self.buffers.items():
                region = f"{tag}_{n}"
                handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
                client.register_cuda_shared_memory(region, base64.b64encode(handle), 0, nbytes)
                self.regions.append(region)
            self.inputs[0].set_shared_memory(f"{tag}_x", nbytes)
            self.inputs[1].set_shared_memory(f"{tag}_y", nbytes)
            self.outputs[0].set_shared_memory(f"{tag}_out", nbytes)

    def call(self, model):
        return self.client.infer(model, self.inputs, outputs=self.outputs)

    def check(self, result):
        expected = 2 * self.x - 0.5 * self.y
        got = result.as_numpy("output_0") if self.kind == "host" else self.buffers["out"].get().reshape(SHAPE)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

    def close(self):
        for region in self.regions:
            self.client.unregister_cuda_shared_memory(region)


def timed_calls(io, model, n):
    times = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        io.call(model)
        times.append((time.perf_counter() - t0) * 1e6)
    return times, n / (time.perf_counter() - start)


def aggressor_main(url, threads, stop, go, counter, inflight, failed):
    """The aggressor's client, in a process of its own (no GIL shared with the measuring thread). It calls while
    `go` is set and idles (no request in flight) while it is clear."""

    def run():
        client = httpclient.InferenceServerClient(url, network_timeout=120.0)
        io = Io(client, "host", "aggr")
        try:
            while not stop.is_set():
                if not go.wait(timeout=0.01):
                    continue
                with inflight.get_lock():
                    inflight.value += 1
                try:
                    io.call("aggressor")
                finally:
                    with inflight.get_lock():
                        inflight.value -= 1
                with counter.get_lock():
                    counter.value += 1
        except Exception as e:
            print(f"aggressor: {e}", file=sys.stderr)
            failed.value = 1
        finally:
            client.close()
    workers = [threading.Thread(target=run) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


class Aggressor:
    """The aggressor model driven from `threads` client threads of another process: resume() sets it calling
    without pause (and returns once its calls are flowing), pause() stops it (and returns once none is in flight)."""

    def __init__(self, url, threads):
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self.go = context.Event()
        self.counter = context.Value("q", 0)
        self.inflight = context.Value("i", 0)
        self.failed = context.Value("i", 0)
        self.process = context.Process(target=aggressor_main,
                                       args=(url, threads, self.stop, self.go, self.counter, self.inflight, self.failed))
        self.calls_measured = 0
        self.elapsed = 0.0

    def __enter__(self):
        self.process.start()
        return self

    def resume(self):
        start = self.counter.value
        self.go.set()
        deadline = time.monotonic() + 60
        while self.counter.value < start + 10 and time.monotonic() < deadline and not self.failed.value:
            time.sleep(0.005)  # running, its queue full, before measuring
        self.calls_at_start = self.counter.value
        self.t_start = time.perf_counter()

    def pause(self):
        self.elapsed += time.perf_counter() - self.t_start
        self.calls_measured += self.counter.value - self.calls_at_start
        self.go.clear()
        deadline = time.monotonic() + 60
        while self.inflight.value > 0 and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(0.01)  # the last call's engine done on the GPU too (about 1 ms)

    def __exit__(self, *args):
        self.go.clear()
        self.stop.set()
        self.process.join(timeout=60)
        if self.process.is_alive():
            self.process.kill()
        self.errors = ["the aggressor's client failed (its stderr above)"] if self.failed.value else []
        if self.calls_measured <= 0:
            self.errors.append("the aggressor made no calls while the latency model was measured")

    def rate(self):
        return self.calls_measured / self.elapsed if self.elapsed > 0 else 0.0


def probe(sms_file, command):
    with open(sms_file + ".request.partial", "w") as f:
        f.write(command + "\n")
    if os.path.exists(sms_file):
        os.remove(sms_file)
    os.rename(sms_file + ".request.partial", sms_file + ".request")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(sms_file) and not os.path.exists(sms_file + ".request"):
            with open(sms_file) as f:
                words = f.read().split()
            if words[0] != "ok":
                raise RuntimeError("SM probe: " + " ".join(words))
            return [int(w) for w in words[2:]]
        time.sleep(0.01)
    raise RuntimeError("SM probe: no answer from the plugin (TRTET_TEST_ENGINES_SMS_FILE)")


def sms_of(server, sms_file, model, calls=50):
    probe(sms_file, "clear")
    io = Io(server.client, "host", "probe")
    for _ in range(calls):
        io.call(model)
    return probe(sms_file, "read")


def run_layout(layout, n, plan_gpu):
    repo = tempfile.mkdtemp(prefix=f"trtet-bench-{layout}-")
    params_lat, params_agg = {}, {}
    if layout == "partitioned":
        plan = os.path.join(repo, "plan.json")
        harness.write_plan(plan, [("latency", LAT_SMS)], remainder="aggressor", gpu=plan_gpu)
        params_lat = {"plan_file": plan}
        params_agg = {"plan_file": plan}
    group = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "latency", pte="triton_latency", parameters=params_lat, extra=group)
    harness.make_model(repo, "aggressor", pte="triton_aggressor", parameters=params_agg, extra=group)
    sms_file = os.path.join(repo, "sms.txt")
    server = harness.Server(repo, env={"TRTET_TEST_ENGINES_SMS_FILE": sms_file, "TRTET_TEST_ENGINES_AUTOINSTALL": "1"})
    out = {"layout": layout}
    try:
        for model in ("latency", "aggressor"):
            message = server.load(model)
            if message is not None:
                raise RuntimeError(f"{layout}: {model} did not load: {message}\n{server.log()[-3000:]}")
        for kind in ("host", "device"):
            io = Io(server.client, kind, f"lat_{kind}")
            io.check(io.call("latency"))
            timed_calls(io, "latency", 200)  # warm
            alone, beside, t_alone, t_beside = [], [], 0.0, 0.0
            per_round = max(1, n // ROUNDS)
            with Aggressor(server.url, AGGRESSOR_THREADS) as aggressor:
                for _ in range(ROUNDS):
                    times, rate = timed_calls(io, "latency", per_round)
                    alone += times
                    t_alone += per_round / rate
                    aggressor.resume()
                    times, rate = timed_calls(io, "latency", per_round)
                    aggressor.pause()
                    beside += times
                    t_beside += per_round / rate
            rate_alone, rate_beside = len(alone) / t_alone, len(beside) / t_beside
            if aggressor.errors:
                raise RuntimeError("aggressor: " + aggressor.errors[0])
            io.check(io.call("latency"))
            io.close()
            out[kind] = {"p50_alone_us": percentile(alone, 50), "p99_alone_us": percentile(alone, 99),
                         "p50_beside_us": percentile(beside, 50), "p99_beside_us": percentile(beside, 99),
                         "ratio_p99": percentile(beside, 99) / percentile(alone, 99),
                         "latency_calls_per_s_alone": rate_alone, "latency_calls_per_s_beside": rate_beside,
                         "aggressor_calls_per_s": aggressor.rate()}
        out["sms_latency"] = sms_of(server, sms_file, "latency")
        out["sms_aggressor"] = sms_of(server, sms_file, "aggressor", calls=5)
        stats = server.client.get_inference_statistics("latency")["model_stats"][0]["inference_stats"]
        out["server_latency_compute_us_mean"] = int(stats["compute_infer"]["ns"]) / max(1, int(stats["compute_infer"]["count"])) / 1e3
        out["server_latency_success"] = int(stats["success"]["count"])
        if layout == "partitioned":
            out["log_lines"] = [line for line in server.log().splitlines() if "green-context partition" in line]
    finally:
        server.stop()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=3000, help="latency calls per measurement")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--bound", type=float, default=1.05)
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    plan_gpu = harness.gpu_plan_fields()
    results = [run_layout("partitioned", args.n, plan_gpu), run_layout("whole", args.n, plan_gpu)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    failures = []
    print(f"\nTriton serving bench ({plan_gpu['name']}, {plan_gpu['sm_count']} SMs): latency model on {LAT_SMS} SMs, "
          f"aggressor on the rest, vs both on the whole GPU; {args.n} calls per row in {ROUNDS} alternating rounds, one "
          f"client thread; aggressor from {AGGRESSOR_THREADS} threads")
    print(f"{'layout':<12}{'I/O':<8}{'p50 alone':>10}{'p99 alone':>10}{'p50 bes.':>10}{'p99 bes.':>10}"
          f"{'p99 ratio':>10}{'lat/s':>9}{'lat/s bes.':>11}{'aggr/s':>8}")
    for r in results:
        for kind in ("host", "device"):
            m = r[kind]
            print(f"{r['layout']:<12}{kind:<8}{m['p50_alone_us']:>10.0f}{m['p99_alone_us']:>10.0f}"
                  f"{m['p50_beside_us']:>10.0f}{m['p99_beside_us']:>10.0f}{m['ratio_p99']:>10.3f}"
                  f"{m['latency_calls_per_s_alone']:>9.0f}{m['latency_calls_per_s_beside']:>11.0f}"
                  f"{m['aggressor_calls_per_s']:>8.0f}")
            if r["layout"] == "partitioned" and m["ratio_p99"] > args.bound:
                failures.append(f"partitioned {kind} I/O: p99 beside / alone {m['ratio_p99']:.3f} > {args.bound}")
    for r in results:
        lat, agg = set(r["sms_latency"]), set(r["sms_aggressor"])
        print(f"{r['layout']:<12}SMs: latency engine on {len(lat)} SMs, aggressor on {len(agg)}, shared {len(lat & agg)}"
              f"; server compute mean {r['server_latency_compute_us_mean']:.0f} us over {r['server_latency_success']} calls")
        if r["layout"] == "partitioned":
            if not lat or len(lat) > LAT_SMS or lat & agg or len(agg) <= LAT_SMS:
                failures.append(f"partitioned: latency on {sorted(lat)}, aggressor on {len(agg)} SMs (shared {sorted(lat & agg)})")
            for line in r.get("log_lines", []):
                print("  " + line[line.find("torchtrt_executorch"):])
    print("serving bench: " + ("FAILED: " + "; ".join(failures) if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
