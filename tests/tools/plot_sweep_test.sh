#!/usr/bin/env bash
# tools/plot_sweep.py on a small sweep CSV: writes a PNG (checked by its signature), refuses a CSV
# that is not a sweep. Exit 3 (CTest: skipped) where no python3 has matplotlib.
set -euo pipefail
script=$1
source "$(dirname "$0")/plot_test_lib.sh"
cat > "$work/sweep.csv" <<'CSV'
sms,whole_gpu,calls,p50_us,p90_us,p99_us,max_us,mean_us,calls_per_s
8,0,100,400.1,410.2,420.3,500.0,401.0,2400.0
16,0,100,210.1,215.2,230.3,300.0,211.0,4500.0
24,0,100,150.1,155.2,170.3,200.0,151.0,6500.0
132,1,100,50.1,55.2,60.3,70.0,51.0,19000.0
CSV
"$python" "$script" "$work/sweep.csv" "$work/sweep.png" --p99-target-us 200
expect_png "$work/sweep.png"
expect_refused "$script" "a CSV without the sweep's columns" "not a trtet-run sweep CSV"
echo "plot_sweep: PNG written; a non-sweep CSV refused"
