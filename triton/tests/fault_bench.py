"""The fault domain, measured (scripts/gpu-triton on the H200; Note [the fault domain] in
triton/src/fault_rule.h). Model A (triton_fault.pte: the elementwise engine that makes an illegal
address when x[0] is 13) faults once; model B (triton_elementwise.pte) is served beside it:

  one process   one server, A and B on two green-context partitions of 16 SMs (a plan file)
  MPS           two servers under MPS (the control daemon started for the run and quit before the
                bench returns), A in one, B in the other, each at 50 % active threads
  two processes two servers without MPS, A in one, B in the other

For each: B's calls before the fault (values checked), the time from A's failed answer until A's
server reports not ready (polled every 5 ms), B's calls in the 2 s after the fault (how many served,
how many failed, the first failure's message), whether B's server is still ready, and whether a new
server process started after the fault serves B (the GPU usable again by a new process).
The table is printed last; exit status 1 when a check fails: A's fault not answered as a lost CUDA
context, A's server still ready 1 s after it, or a process started after the fault unable to serve.
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np
import tritonclient.http as httpclient

import harness
import perf_bench

ONE_GPU = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
SHAPE = (8, 64)


def call(url, model, x, y):
    client = httpclient.InferenceServerClient(url, network_timeout=30.0, connection_timeout=10.0)
    try:
        inputs = [httpclient.InferInput("input_0", list(x.shape), "FP32"), httpclient.InferInput("input_1", list(y.shape), "FP32")]
        inputs[0].set_data_from_numpy(x)
        inputs[1].set_data_from_numpy(y)
        outputs = [httpclient.InferRequestedOutput("output_0", binary_data=True)]
        return client.infer(model, inputs, outputs=outputs).as_numpy("output_0")
    finally:
        client.close()


def ready(server):
    try:
        return bool(server.client.is_server_ready())
    except Exception:
        return False


def inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    x[0, 0] = 1.0
    return x, rng.standard_normal(SHAPE, dtype=np.float32)


def serves(server, model):
    x, y = inputs(5)
    try:
        got = call(server.url, model, x, y)
        np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        return "serves"
    except Exception as e:
        return "fails: " + str(e)[:200]


def run_case(case, work, plan_gpu):
    repo = tempfile.mkdtemp(prefix=f"fault-{case}-", dir=work)
    params = {}
    if case == "one process":
        plan = os.path.join(repo, "plan.json")
        harness.write_plan(plan, [("faulty", 16), ("bystander", 16)], gpu=plan_gpu)
        params = {"plan_file": plan}
    harness.make_model(repo, "faulty", pte="triton_fault", parameters=params, extra=ONE_GPU)
    harness.make_model(repo, "bystander", pte="triton_elementwise", parameters=params, extra=ONE_GPU)
    out = {"case": case}
    mps = perf_bench.Mps(work) if case == "MPS" else None
    env = dict(mps.env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50") if mps else {}
    try:
        measure_fault(case, repo, env, out)
        # A new process after the fault: does the GPU serve again (under MPS: a new MPS client)?
        try:
            c = harness.Server(repo, env=env)
            try:
                message = c.load("bystander")
                out["new_process"] = serves(c, "bystander") if message is None else "load refused: " + message[:200]
            finally:
                c.stop()
        except Exception as e:
            out["new_process"] = "did not start: " + str(e)[:200]
    finally:
        if mps is not None:
            out["mps_log_tail"] = mps.log()[-1500:]
            mps.quit()
    return out


def measure_fault(case, repo, env, out):
    servers = []
    try:
        if case == "one process":
            a = b = harness.Server(repo)
            servers.append(a)
        else:
            a = harness.Server(repo, env=env)
            servers.append(a)
            b = harness.Server(repo, env=env)
            servers.append(b)
        for server, model in ((a, "faulty"), (b, "bystander")):
            message = server.load(model)
            if message is not None:
                raise RuntimeError(f"{case}: {model} did not load: {message}\n{server.log()[-2000:]}")
        x, y = inputs(1)
        for server, model in ((a, "faulty"), (b, "bystander")):
            np.testing.assert_allclose(call(server.url, model, x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        # B called without pause from a thread of its own, across the fault.
        stop = threading.Event()
        record = []

        def bystander_calls():
            bx, by = inputs(2)
            while not stop.is_set():
                t = time.monotonic()
                try:
                    got = call(b.url, "bystander", bx, by)
                    np.testing.assert_allclose(got, 2 * bx - 0.5 * by, rtol=1e-6, atol=1e-6)
                    record.append((t, time.monotonic(), None))
                except Exception as e:
                    record.append((t, time.monotonic(), str(e)))
                time.sleep(0.01)

        worker = threading.Thread(target=bystander_calls)
        worker.start()
        time.sleep(0.3)
        bad = x.copy()
        bad[0, 0] = 13.0
        t_fault = time.monotonic()
        try:
            call(a.url, "faulty", bad, y)
            out["fault_answer"] = "served (no fault seen)"
        except Exception as e:
            out["fault_answer"] = str(e)[:4000]  # whole: the verdict ("CUDA context is lost") ends a long answer
        t_answer = time.monotonic()
        out["fault_answer_ms"] = (t_answer - t_fault) * 1e3
        not_ready = None
        while time.monotonic() - t_answer < 5:
            if not ready(a):
                not_ready = time.monotonic() - t_answer
                break
            time.sleep(0.005)
        out["a_not_ready_ms"] = None if not_ready is None else not_ready * 1e3
        time.sleep(max(0.0, 2.0 - (time.monotonic() - t_answer)))
        stop.set()
        worker.join(timeout=60)
        before = [r for r in record if r[1] < t_fault]
        after = [r for r in record if r[0] > t_answer]
        out["b_before"] = {"served": sum(1 for r in before if r[2] is None), "failed": sum(1 for r in before if r[2])}
        out["b_after"] = {"served": sum(1 for r in after if r[2] is None), "failed": sum(1 for r in after if r[2])}
        failures = [r for r in after if r[2]]
        out["b_first_failure"] = failures[0][2][:300] if failures else None
        out["b_failure_ms"] = [round((r[1] - r[0]) * 1e3, 1) for r in failures[:5]]
        out["b_server_ready"] = ready(b)
        out["log_cause"] = [line[line.find("torchtrt_executorch"):][:300] for line in a.log().splitlines()
                            if "CUDA context is lost:" in line][:1]
    finally:
        for server in servers:
            server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--cases", default="one process,MPS,two processes")
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    plan_gpu = harness.gpu_plan_fields()
    work = tempfile.mkdtemp(prefix="trtet-fault-")
    results = []
    for case in args.cases.split(","):
        try:
            results.append(run_case(case, work, plan_gpu))
        except perf_bench.MpsUnavailable as e:
            results.append({"case": case, "skipped": str(e)})
        except Exception as e:
            results.append({"case": case, "error": str(e)[-1500:]})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    failures = []
    print("\n== fault bench summary ==")
    print(f"{'case':<15}{'A answered':>11}{'A not ready':>13}{'B after: served/failed':>24}{'B ready':>9}  new process  "
          "| B's first failure")
    for r in results:
        if "skipped" in r or "error" in r:
            print(f"{r['case']:<15}{'skipped: ' + r['skipped'] if 'skipped' in r else 'FAILED: ' + r['error'][-600:]}")
            if "error" in r:
                failures.append(f"{r['case']}: {r['error'][-300:]}")
            continue
        nr = "-" if r["a_not_ready_ms"] is None else f"{r['a_not_ready_ms']:.0f} ms"
        print(f"{r['case']:<15}{r['fault_answer_ms']:>8.0f} ms{nr:>13}"
              f"{r['b_after']['served']:>17}/{r['b_after']['failed']:<6}{str(r['b_server_ready']):>9}  "
              f"{r['new_process'][:11]:<11}  | {r['b_first_failure'] or '-'}")
        print(f"{'':<15}A's answer: {r['fault_answer'][:300]}")
        if r["log_cause"]:
            print(f"{'':<15}A's log: {r['log_cause'][0]}")
        if "CUDA context is lost" not in r["fault_answer"]:
            failures.append(f"{r['case']}: A's fault was answered '{r['fault_answer'][:200]}'")
        if r["a_not_ready_ms"] is None or r["a_not_ready_ms"] > 1000:
            failures.append(f"{r['case']}: A's server still ready 1 s after the fault")
        if r["new_process"] != "serves":
            failures.append(f"{r['case']}: a process started after the fault: {r['new_process']}")
    print("fault bench: " + ("FAILED: " + "; ".join(failures) if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
