# Sourced by the plot script tests (plot_cdf_test.sh, plot_sweep_test.sh): a scratch folder $work
# (removed on exit) and $python, a python3 with matplotlib; without one, exit 3 (CTest: skipped).
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

# expect_png FILE: fails the test unless FILE starts with the PNG signature.
expect_png() {
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || { echo "not a PNG"; exit 1; }
}

# expect_refused SCRIPT WHAT MESSAGE: SCRIPT on a CSV of columns a,b must fail with MESSAGE on
# stderr; "WHAT was accepted" otherwise.
expect_refused() {
  echo "a,b" > "$work/bad.csv"
  if "$python" "$1" "$work/bad.csv" "$work/bad.png" 2>"$work/err"; then
    echo "$2 was accepted"
    exit 1
  fi
  grep -q "$3" "$work/err" || { cat "$work/err"; exit 1; }
}
