#!/usr/bin/env python3
"""Draws latency CDFs from a samples CSV that trtet-demo or trtet-scenarios wrote, with matplotlib.

    bench/plot_cdf.py samples.csv [plot.png] [--title TEXT]

The CSV: an optional "# title" line, then "series,latency_us" and one row per call. One line per
series: the fraction of calls at or below each latency, latency on a log scale. The output format
follows the file's extension (.png, .svg, .pdf); the default is the CSV's name with .png.
Exit status: 0 plotted; 1 bad arguments or CSV; 3 matplotlib is not installed (it says so).
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from plotting import pyplot, save  # noqa: E402  (tools/plotting.py)


def read_samples(path):
    title = None
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    if lines and lines[0].startswith("#"):
        title = lines[0][1:].strip()
        lines = lines[1:]
    rows = list(csv.DictReader(lines))
    if not rows or not {"series", "latency_us"} <= set(rows[0]):
        raise ValueError(f"{path}: not a latency samples CSV (needs columns series, latency_us)")
    series = {}
    for row in rows:
        series.setdefault(row["series"], []).append(float(row["latency_us"]))
    return title, series


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("output", nargs="?")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        title, series = read_samples(args.csv)
    except (OSError, ValueError, KeyError) as error:
        print(f"plot_cdf: {error}", file=sys.stderr)
        return 1
    plt = pyplot("plot_cdf")
    if plt is None:
        return 3
    output = args.output or (args.csv.rsplit(".", 1)[0] + ".png")
    figure, axes = plt.subplots(figsize=(9, 5.2))
    for label, samples in series.items():
        samples = sorted(samples)
        fractions = [(i + 1) / len(samples) for i in range(len(samples))]
        axes.step(samples, fractions, where="post", label=label, linewidth=1.8)
    axes.set_xscale("log")
    axes.set_xlabel("latency per call (us, log scale)")
    axes.set_ylabel("fraction of calls")
    axes.set_ylim(0, 1.01)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="lower right")
    axes.set_title(args.title or title or "latency per call")
    save(figure, output, "plot_cdf")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
