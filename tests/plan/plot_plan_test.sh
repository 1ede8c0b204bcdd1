#!/usr/bin/env bash
# tools/plot_plan.py on trtet-plan's CSVs (a plan verified in two rounds, and curves with no plan):
# writes PNGs (checked by their signature), refuses a CSV that is not trtet-plan's. Exit 3 (CTest:
# skipped) where no python3 has matplotlib.
set -euo pipefail
script=$1
source "$2/plot_test_lib.sh"
cat > "$work/curves.csv" <<'CSV'
model,sms,p50_us,p99_us,calls_per_s,p99_target_us,min_calls_per_s
latency,8,110.0,140.0,8000.0,300.000,0.0
latency,16,70.0,95.0,12000.0,300.000,0.0
compute,8,800.0,810.0,1200.0,250.000,0.0
compute,16,400.0,410.0,2400.0,250.000,0.0
compute,24,300.0,310.0,3200.0,250.000,0.0
compute,32,200.0,212.0,4800.0,250.000,0.0
CSV
cat > "$work/verify.csv" <<'CSV'
round,model,sms,p99_target_us,min_calls_per_s,p99_alone_us,p50_beside_us,p99_beside_us,calls_per_s_beside,meets
1,latency,8,300.000,0.0,140.000,120.000,320.000,7000.0,0
1,compute,32,250.000,0.0,212.000,205.000,220.000,4700.0,1
2,latency,16,300.000,0.0,95.000,80.000,120.000,11000.0,1
2,compute,32,250.000,0.0,212.000,205.000,221.000,4700.0,1
CSV
"$python" "$script" "$work/curves.csv" "$work/verify.csv" "$work/plan.png"
expect_png "$work/plan.png"
# No plan verified (an infeasible run): the curves alone.
head -1 "$work/verify.csv" > "$work/none.csv"
"$python" "$script" "$work/curves.csv" "$work/none.csv" "$work/curves.png"
expect_png "$work/curves.png"
echo "a,b" > "$work/bad.csv"
if "$python" "$script" "$work/bad.csv" "$work/verify.csv" "$work/bad.png" 2>"$work/err"; then
  echo "a CSV without the curves' columns was accepted"; exit 1
fi
grep -q "not a trtet-plan curves CSV" "$work/err" || { cat "$work/err"; exit 1; }
if "$python" "$script" "$work/curves.csv" "$work/bad.csv" "$work/bad.png" 2>"$work/err"; then
  echo "a CSV without the verification's columns was accepted"; exit 1
fi
grep -q "not a trtet-plan verification CSV" "$work/err" || { cat "$work/err"; exit 1; }
echo "plot_plan: PNGs written (a verified plan, curves alone); non-plan CSVs refused"
