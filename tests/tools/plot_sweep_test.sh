#!/usr/bin/env bash
# tools/plot_sweep.py on a small sweep CSV: writes a PNG (checked by its signature), refuses a CSV
# that is not a sweep. Exit 3 (CTest: skipped) where no python3 has matplotlib.
set -euo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no python3 with matplotlib (apt-get install python3-matplotlib)"
  exit 3
fi
cat > "$work/sweep.csv" <<'CSV'
sms,whole_gpu,calls,p50_us,p90_us,p99_us,max_us,mean_us,calls_per_s
8,0,100,400.1,410.2,420.3,500.0,401.0,2400.0
16,0,100,210.1,215.2,230.3,300.0,211.0,4500.0
24,0,100,150.1,155.2,170.3,200.0,151.0,6500.0
132,1,100,50.1,55.2,60.3,70.0,51.0,19000.0
CSV
"$python" "$script" "$work/sweep.csv" "$work/sweep.png" --p99-target-us 200
[ "$(head -c 8 "$work/sweep.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || { echo "not a PNG"; exit 1; }
echo "a,b" > "$work/bad.csv"
if "$python" "$script" "$work/bad.csv" "$work/bad.png" 2>"$work/err"; then
  echo "a CSV without the sweep's columns was accepted"
  exit 1
fi
grep -q "not a trtet-run sweep CSV" "$work/err" || { cat "$work/err"; exit 1; }
echo "plot_sweep: PNG written; a non-sweep CSV refused"
