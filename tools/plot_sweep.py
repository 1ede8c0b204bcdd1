#!/usr/bin/env python3
"""Plots trtet-run's partition sweep (--sweep-sms ... --csv FILE) with matplotlib.

    tools/plot_sweep.py sweep.csv [sweep.png] [--p99-target-us 200] [--title TEXT]

Draws p50, p90 and p99 latency against the partition's SM count, the whole GPU as a dashed line,
the p99 target as a dotted line and the recommended partition (the smallest whose p99 meets the
target) as a marker. The output format follows the file's extension (.png, .svg, .pdf).
Exit status: 0 plotted; 1 bad arguments or CSV; 3 matplotlib is not installed (it says so).
"""
import argparse
import csv
import sys

from plotting import pyplot, save


def read_curve(path):
    partitions, whole = [], None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    required = {"sms", "whole_gpu", "p50_us", "p90_us", "p99_us"}
    if not rows or not required <= set(rows[0]):
        raise ValueError(f"{path}: not a trtet-run sweep CSV (needs columns {sorted(required)})")
    for row in rows:
        point = {k: float(row[k]) for k in ("p50_us", "p90_us", "p99_us")}
        point["sms"] = int(row["sms"])
        if row["whole_gpu"] == "1":
            whole = point
        else:
            partitions.append(point)
    partitions.sort(key=lambda p: p["sms"])
    return partitions, whole


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="the CSV trtet-run --csv wrote")
    parser.add_argument("out", nargs="?", help="the image to write (default: the CSV's name with .png)")
    parser.add_argument("--p99-target-us", type=float, default=None, help="draw this p99 target and the recommendation")
    parser.add_argument("--title", default="Latency against green-context partition size")
    args = parser.parse_args(argv)
    out = args.out or (args.csv.rsplit(".", 1)[0] + ".png")
    try:
        partitions, whole = read_curve(args.csv)
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_sweep: {e}", file=sys.stderr)
        return 1
    plt = pyplot("plot_sweep")
    if plt is None:
        return 3
    from matplotlib.ticker import ScalarFormatter

    fig, ax = plt.subplots(figsize=(8, 4.5))
    sms = [p["sms"] for p in partitions]
    for key, label, style in (("p50_us", "p50", "o-"), ("p90_us", "p90", "s-"), ("p99_us", "p99", "^-")):
        ax.plot(sms, [p[key] for p in partitions], style, label=f"{label}, partition", markersize=4)
    if whole is not None:
        ax.axhline(whole["p99_us"], color="gray", linestyle="--",
                   label=f"p99, whole GPU ({whole['sms']} SMs): {whole['p99_us']:.1f} us")
    if args.p99_target_us is not None:
        ax.axhline(args.p99_target_us, color="red", linestyle=":", label=f"p99 target: {args.p99_target_us:g} us")
        meeting = [p for p in partitions if p["p99_us"] <= args.p99_target_us]
        if meeting:
            best = min(meeting, key=lambda p: p["sms"])
            ax.plot([best["sms"]], [best["p99_us"]], "o", color="red", markersize=11, fillstyle="none",
                    label=f"recommended: {best['sms']} SMs")
    ax.set_xlabel("SMs in the partition")
    ax.set_ylabel("latency per call (us)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_xticks(sms)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(args.title)
    ax.legend(fontsize=8)
    save(fig, out, "plot_sweep")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
