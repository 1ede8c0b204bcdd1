#!/usr/bin/env bash
# bench/plot_cdf.py on a small samples CSV in the format trtet-demo and trtet-scenarios write
# (write_latency_samples): writes a PNG (checked by its signature), refuses a CSV of other columns.
# Exit 3 (CTest: skipped) where no python3 has matplotlib.
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
cat > "$work/samples.csv" <<'CSV'
# Latency-critical engine: alone and beside an SM-flooding engine
series,latency_us
"green context, alone",60.100
"green context, alone",61.300
"whole GPU, beside",1034.000
"whole GPU, beside",1058.100
CSV
"$python" "$script" "$work/samples.csv" "$work/cdf.png"
[ "$(head -c 8 "$work/cdf.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || { echo "not a PNG"; exit 1; }
echo "a,b" > "$work/bad.csv"
if "$python" "$script" "$work/bad.csv" "$work/bad.png" 2>"$work/err"; then
  echo "a CSV without series and latency_us was accepted"
  exit 1
fi
grep -q "not a latency samples CSV" "$work/err" || { cat "$work/err"; exit 1; }
echo "plot_cdf: PNG written; a CSV of other columns refused"
