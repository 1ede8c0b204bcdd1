#!/usr/bin/env bash
# bench/plot_cdf.py on a small samples CSV in the format trtet-demo and trtet-scenarios write
# (write_latency_samples): writes a PNG (checked by its signature), refuses a CSV of other columns.
# Exit 3 (CTest: skipped) where no python3 has matplotlib.
set -euo pipefail
script=$1
source "$(dirname "$0")/plot_test_lib.sh"
cat > "$work/samples.csv" <<'CSV'
# Latency-critical engine: alone and beside an SM-flooding engine
series,latency_us
"green context, alone",60.100
"green context, alone",61.300
"whole GPU, beside",1034.000
"whole GPU, beside",1058.100
CSV
"$python" "$script" "$work/samples.csv" "$work/cdf.png"
expect_png "$work/cdf.png"
expect_refused "$script" "a CSV without series and latency_us" "not a latency samples CSV"
echo "plot_cdf: PNG written; a CSV of other columns refused"
