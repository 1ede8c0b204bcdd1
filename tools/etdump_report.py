#!/usr/bin/env python3
"""The TensorRT delegate's calls in an ETDump file: a table per call and a timeline.

    tools/etdump_report.py run.etdp                     # the table
    tools/etdump_report.py run.etdp --plot timeline.png # and the timeline (matplotlib)
    tools/etdump_report.py run.etdp --json              # the calls as JSON (for tests and scripts)

The file is what ExecuTorch's ETDumpGen wrote (trtet-run --etdump FILE, or an application's own
get_etdump_data()). It is read without torch: flatc (Debian's flatbuffers-compiler) turns it into
JSON with the schema ExecuTorch's wheel ships (devtools/etdump/etdump_schema_flatcc.fbs, found
under --schema-dir, $EXECUTORCH_ROOT, this repository's .deps/executorch, or an installed
executorch package). The delegate's events carry text metadata, "trtet call=N kind=..."
(include/torch_tensorrt/executorch/Profiling.h); every other event is ExecuTorch's own.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

from plotting import pyplot

SCHEMA = "etdump_schema_flatcc.fbs"
GPU_KINDS = ("gpu_copy_in", "gpu_engine", "gpu_copy_out")


def find_schema_dir(explicit):
    candidates = [explicit] if explicit else []
    if os.environ.get("EXECUTORCH_ROOT"):
        candidates.append(os.path.join(os.environ["EXECUTORCH_ROOT"], "devtools", "etdump"))
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", ".deps", "executorch", "devtools", "etdump"))
    spec = importlib.util.find_spec("executorch")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidates.append(os.path.join(location, "devtools", "etdump"))
    for directory in candidates:
        if directory and os.path.isfile(os.path.join(directory, SCHEMA)):
            return directory
    sys.exit("etdump_report: ExecuTorch's %s not found (looked in: %s); pass --schema-dir"
             % (SCHEMA, ", ".join(c for c in candidates if c)))


def find_flatc(explicit, schema_dir):
    for candidate in (explicit, shutil.which("flatc"),
                      os.path.join(schema_dir, "..", "..", "bin", "flatc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("etdump_report: flatc not found (apt-get install flatbuffers-compiler, or pass --flatc)")


def size_prefixed(data):
    """ETDumpGen writes a size-prefixed buffer: u32 size, then the root offset and "ED00"."""
    if len(data) >= 12 and data[8:12] == b"ED00":
        (size,) = struct.unpack_from("<I", data, 0)
        return size <= len(data) - 4
    if len(data) >= 8 and data[4:8] == b"ED00":
        return False
    sys.exit("etdump_report: not an ETDump file (no \"ED00\" identifier)")


def etdump_json(path, schema_dir, flatc):
    """The ETDump as a dict, through flatc --json."""
    with open(path, "rb") as f:
        data = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "dump.bin")
        with open(binary, "wb") as f:
            f.write(data)
        command = [flatc, "--json", "--strict-json", "--raw-binary", "--defaults-json", "-I", schema_dir, "-o", tmp]
        if size_prefixed(data):
            command.append("--size-prefixed")
        command += [os.path.join(schema_dir, SCHEMA), "--", binary]
        ran = subprocess.run(command, capture_output=True, text=True)
        out = os.path.join(tmp, "dump.json")
        if ran.returncode != 0 or not os.path.isfile(out):
            sys.exit("etdump_report: flatc could not read %s: %s" % (path, (ran.stderr or ran.stdout).strip()))
        with open(out) as f:
            return json.load(f)


def parse_metadata(values):
    text = bytes(values or []).decode("utf-8", "replace")
    words = text.split()
    if not words or words[0] != "trtet":
        return None
    fields = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        fields[key] = value
    return fields


def read_events(dump):
    """Every profile event: (run index, name, start, end, delegate metadata or None)."""
    events = []
    for run_index, run in enumerate(dump.get("run_data") or []):
        for event in run.get("events") or []:
            profile = event.get("profile_event")
            if not profile:
                continue
            name = profile.get("delegate_debug_id_str") or profile.get("name") or ""
            meta = parse_metadata(profile.get("delegate_debug_metadata"))
            events.append({"run": run_index, "name": name, "start": int(profile.get("start_time", 0)),
                           "end": int(profile.get("end_time", 0)), "meta": meta})
    return events


def delegate_calls(events, ns_per_tick):
    """One entry per (delegate, call): its host event and GPU events, times in microseconds."""
    calls = {}
    for event in events:
        meta = event["meta"]
        if meta is None or "call" not in meta or "kind" not in meta:
            continue
        base = event["name"].split(" [gpu ")[0]
        key = (base, int(meta["call"]))
        call = calls.setdefault(key, {"delegate": base, "call": key[1]})
        kind = meta["kind"]
        entry = {"start_us": event["start"] * ns_per_tick / 1e3, "end_us": event["end"] * ns_per_tick / 1e3,
                 "us": (event["end"] - event["start"]) * ns_per_tick / 1e3}
        if "gpu_ns" in meta:
            entry["us"] = float(meta["gpu_ns"]) / 1e3  # CUDA's own measure of the span
        call[kind] = entry
        for field in ("path", "profile", "staged_bytes", "green_sms", "gpu_timed", "status"):
            if field in meta and (kind == "host" or field not in call):
                call[field] = meta[field]
    return [calls[k] for k in sorted(calls, key=lambda k: (k[0], k[1]))]


def fmt(value):
    return "-" if value is None else "%.1f" % value


def print_table(calls, out=sys.stdout):
    header = ("call", "delegate", "path", "prof", "staged B", "SMs", "host us", "engine us", "copy in us",
              "copy out us", "GPU after return us", "status")
    rows = []
    for c in calls:
        host = c.get("host")
        ends = [c[k]["end_us"] for k in GPU_KINDS if k in c]
        after = max(0.0, max(ends) - host["end_us"]) if host and ends else None
        rows.append((str(c["call"]), c["delegate"], c.get("path", "-"), c.get("profile", "-"), c.get("staged_bytes", "-"),
                     c.get("green_sms", "-"), fmt(host["us"] if host else None),
                     fmt(c["gpu_engine"]["us"] if "gpu_engine" in c else None),
                     fmt(c["gpu_copy_in"]["us"] if "gpu_copy_in" in c else None),
                     fmt(c["gpu_copy_out"]["us"] if "gpu_copy_out" in c else None), fmt(after), c.get("status", "-")))
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)), file=out)
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)), file=out)
    for label, kind in (("host", "host"), ("engine (GPU)", "gpu_engine"), ("copies in (GPU)", "gpu_copy_in"),
                        ("copies out (GPU)", "gpu_copy_out")):
        values = [c[kind]["us"] for c in calls if kind in c]
        if values:
            print("%s: %d events, median %.1f us, max %.1f us" % (label, len(values), statistics.median(values),
                                                                 max(values)), file=out)


def plot(calls, events, ns_per_tick, path):
    plt = pyplot("etdump_report")
    if plt is None:
        sys.exit(1)
    rows = []  # (label, [(start, width)], colour)
    origin = min([e["start"] for e in events] or [0]) * ns_per_tick / 1e3
    method = [(e["start"] * ns_per_tick / 1e3 - origin, (e["end"] - e["start"]) * ns_per_tick / 1e3)
              for e in events if e["meta"] is None and e["name"] == "Method::execute"]
    if method:
        rows.append(("Method::execute (host)", method, "tab:gray"))
    for delegate in sorted({c["delegate"] for c in calls}):
        mine = [c for c in calls if c["delegate"] == delegate]
        for kind, label, colour in (("host", "host", "tab:blue"), ("gpu_copy_in", "GPU copy in", "tab:orange"),
                                    ("gpu_engine", "GPU engine", "tab:green"), ("gpu_copy_out", "GPU copy out", "tab:red")):
            spans = [(c[kind]["start_us"] - origin, c[kind]["us"]) for c in mine if kind in c]
            if spans:
                rows.append(("%s %s" % (delegate, label), spans, colour))
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.5 * len(rows)))
    for i, (label, spans, colour) in enumerate(rows):
        ax.broken_barh(spans, (i - 0.4, 0.8), facecolors=colour)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time (us, from the first event)")
    ax.set_title("TensorRT delegate calls: host time of execute and GPU time of its work")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("etdump", help="the ETDump file")
    parser.add_argument("--schema-dir", help="the folder of etdump_schema_flatcc.fbs and scalar_type.fbs")
    parser.add_argument("--flatc", help="the flatc to use (default: on PATH)")
    parser.add_argument("--ns-per-tick", type=float, default=1.0,
                        help="nanoseconds per ETDump tick (ExecuTorch's default platform layer: 1)")
    parser.add_argument("--json", action="store_true", help="print the calls as JSON instead of the table")
    parser.add_argument("--plot", metavar="PNG", help="write a timeline of the calls")
    args = parser.parse_args(argv)
    schema_dir = find_schema_dir(args.schema_dir)
    dump = etdump_json(args.etdump, schema_dir, find_flatc(args.flatc, schema_dir))
    events = read_events(dump)
    calls = delegate_calls(events, args.ns_per_tick)
    if args.json:
        json.dump({"runs": len(dump.get("run_data") or []), "events": len(events), "calls": calls}, sys.stdout, indent=1)
        print()
    else:
        print("%s: %d runs, %d profile events, %d delegate calls" % (args.etdump, len(dump.get("run_data") or []),
                                                                     len(events), len(calls)))
        print_table(calls)
    if args.plot:
        plot(calls, events, args.ns_per_tick, args.plot)
        print("timeline written to %s" % args.plot, file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
