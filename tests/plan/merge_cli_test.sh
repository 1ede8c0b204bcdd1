#!/usr/bin/env bash
# trtet-plan --merge on the command line (no GPU): two plans for any device (version-1 files, as users
# have them) become one plan that names each device; bad arguments exit 1 with the reason.
#   merge_cli_test.sh <trtet-plan>
set -uo pipefail
plan=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
one() {  # one() NAME SMS: a version-1 plan for any device: an H200 with one partition
  printf '{"format": "trtet-partition-plan", "version": 1, "gpu": {"name": "NVIDIA H200", "sm_count": 132, "min_partition": 8, "alignment": 8, "granularity": 8, "max_partitioned_sms": 120}, "partitions": [{"name": "%s", "sms": %s, "p99_target_us": 250}], "remainder": null}\n' "$1" "$2"
}
one chat 16 > "$dir/plan0.json"
one vision 48 > "$dir/plan1.json"
one bad 12 > "$dir/bad.json"
fail() { echo "merge_cli_test: $1"; exit 1; }

out=$("$plan" --merge 1="$dir/plan1.json" --merge 0="$dir/plan0.json" --out "$dir/plans.json" 2>&1) || fail "merge failed: $out"
grep -q '"format": "trtet-partition-plan"' "$dir/plans.json" || fail "no plan format in $(cat "$dir/plans.json")"
grep -q '"version": 2' "$dir/plans.json" || fail "not the current version in $(cat "$dir/plans.json")"
# Device 0's entry comes first, with its own plan.
first=$(grep -n '"device": 0' "$dir/plans.json" | cut -d: -f1)
second=$(grep -n '"device": 1' "$dir/plans.json" | cut -d: -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] || fail "devices not in order: $(cat "$dir/plans.json")"
grep -q '"name": "vision"' "$dir/plans.json" || fail "device 1's partition missing"
echo "$out" | grep -q "GPU 1: NVIDIA H200, 1 partition, 48 SMs" || fail "report: $out"

refused() {  # refused WORDS ARGS...: exit 1 and WORDS on stderr
  local words=$1
  shift
  local err
  err=$("$plan" "$@" 2>&1 >/dev/null)
  local code=$?
  [ "$code" -eq 1 ] || fail "exit $code (want 1) for $*: $err"
  echo "$err" | grep -qF "$words" || fail "for $*: '$words' not in: $err"
}
refused "partition 'bad' has 12 SMs" --merge 0="$dir/bad.json" --out "$dir/x.json"
refused "names GPUs 0, 1 itself; merging takes plans for any device" --merge 0="$dir/plans.json" --out "$dir/x.json"
refused "device 0 is given twice" --merge 0="$dir/plan0.json" --merge 0="$dir/plan1.json"
refused "cannot open $dir/none.json" --merge 0="$dir/none.json" --out "$dir/x.json"
[ ! -e "$dir/x.json" ] || fail "a refused merge wrote its output"
echo "merge_cli_test: passed"
