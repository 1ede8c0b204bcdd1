#!/usr/bin/env bash
# scripts/gpu background (scripts/lib/gpu-background) on any machine: a run started detached outlives
# the command that started it, `wait` prints its log and returns its status once it ends (75 while it
# runs), packs what the run has written so far into one file in the caller's $OUT (ended or still
# running, without the bulky files unless asked), refuses a second start under a running name and bad
# names, and `stop` ends the run's whole process group.
set -euo pipefail
gpu=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TRTET_BACKGROUND_DIR=$work/state
fail() { echo "FAIL: $*" >&2; exit 1; }

# A run that writes to its $OUT, logs twice and ends with status 3.
set +e
# shellcheck disable=SC2016 # $OUT is the run's, expanded by its shell
"$gpu" background start quick -- bash -c 'echo one; echo made > "$OUT/result.txt"; mkdir -p "$OUT/perf/repo/m/1";
  echo x > "$OUT/perf/w.csv"; echo x > "$OUT/perf/repo/m/1/model.pte"; echo x > "$OUT/perf/w.export.json";
  echo x > "$OUT/perf/trace.json"; echo kept > "$OUT/perf/perf_bench.json"; sleep 1; echo two; exit 3' > "$work/start.txt"
rc=$?
set -e
[ "$rc" -eq 75 ] || fail "start with --wait 0 returned $rc, not 75 (still running)"
grep -q '^quick: started' "$work/start.txt" || fail "start did not say it started: $(cat "$work/start.txt")"
set +e
OUT=$work/out "$gpu" background wait quick 30 > "$work/wait.txt"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "wait returned $rc, not the run's 3: $(cat "$work/wait.txt")"
# Each line once, over the two commands (start prints what was logged by its end).
[ "$(cat "$work/start.txt" "$work/wait.txt" | grep -c '^one$')" -eq 1 ] || fail "'one' not printed once: $(cat "$work/start.txt" "$work/wait.txt")"
[ "$(cat "$work/start.txt" "$work/wait.txt" | grep -c '^two$')" -eq 1 ] || fail "'two' not printed once: $(cat "$work/start.txt" "$work/wait.txt")"
grep -q '^quick: ended, exit 3' "$work/wait.txt" || fail "no end line: $(cat "$work/wait.txt")"
[ -f "$work/out/quick.tgz" ] || fail "wait packed nothing into the caller's \$OUT: $(ls -R "$work/out")"
grep -q "^quick: .* files so far packed into \\\$OUT/quick.tgz" "$work/wait.txt" || fail "wait did not say what it packed: $(cat "$work/wait.txt")"
[ "$(find "$work/out" -type f | wc -l)" -eq 1 ] || fail "the caller's \$OUT holds more than the pack: $(find "$work/out" -type f)"
mkdir "$work/unpacked"
tar xzf "$work/out/quick.tgz" -C "$work/unpacked"
[ "$(cat "$work/unpacked/out/result.txt")" = made ] || fail "the run's \$OUT is not in the pack"
[ "$(cat "$work/unpacked/out/perf/perf_bench.json")" = kept ] || fail "the bench's JSON is not in the pack"
grep -q '^two$' "$work/unpacked/log" || fail "the run's log is not in the pack"
for left in perf/w.csv perf/repo/m/1/model.pte perf/w.export.json perf/trace.json; do
  [ ! -e "$work/unpacked/out/$left" ] || fail "the pack holds $left, which it leaves out"
done
# Asked to, the pack keeps everything.
TRTET_BACKGROUND_KEEP_ALL=1 OUT=$work/all "$gpu" background wait quick 5 > /dev/null || true
[ "$(tar tzf "$work/all/quick.tgz" | grep -c -e 'w.csv$' -e 'model.pte$' -e 'export.json$' -e 'trace.json$')" -eq 4 ] \
  || fail "TRTET_BACKGROUND_KEEP_ALL=1 left files out: $(tar tzf "$work/all/quick.tgz")"
# A second wait prints nothing again of the log, and the same status.
set +e
"$gpu" background wait quick 5 > "$work/again.txt"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "a second wait returned $rc"
if grep -q '^one$' "$work/again.txt"; then fail "a second wait printed the log again"; fi

# A run still going: wait returns 75 after its time, a second start under its name is refused, stop ends it.
set +e
# shellcheck disable=SC2016 # $OUT is the run's, expanded by its shell
OUT=$work/partial "$gpu" background start slow --wait 1 -- bash -c 'echo begun; echo half > "$OUT/run1.json"; sleep 300 & wait' > "$work/slow.txt"
rc=$?
set -e
[ "$rc" -eq 75 ] || fail "a running run's start --wait 1 returned $rc"
grep -q '^slow: still running after' "$work/slow.txt" || fail "no 'still running': $(cat "$work/slow.txt")"
# What a run still going has written so far comes back too (a machine may be taken back before its end).
[ "$(tar xzOf "$work/partial/slow.tgz" out/run1.json)" = half ] || fail "a wait on a run still going did not pack its results so far"
if "$gpu" background start slow -- true 2> "$work/twice.txt"; then fail "a second start under a running name was accepted"; fi
grep -q "still running" "$work/twice.txt" || fail "the second start's refusal does not say why: $(cat "$work/twice.txt")"
pid=$(cat "$work/state/slow/pid")
"$gpu" background stop slow > /dev/null
if kill -0 "$pid" 2> /dev/null; then fail "stop left the run's process alive"; fi
if pgrep -g "$pid" > /dev/null; then fail "stop left a process of the run's group (its sleep) alive"; fi
set +e
"$gpu" background wait slow 5 > /dev/null
rc=$?
set -e
[ "$rc" -eq 143 ] || fail "a stopped run's status is $rc, not 143"

# A run whose processes are killed outright (no status written): wait says so, and packs what it wrote.
# shellcheck disable=SC2016 # $OUT is the run's, expanded by its shell
"$gpu" background start gone -- bash -c 'echo some > "$OUT/so_far.txt"; sleep 300 & wait' > /dev/null || true
sleep 1
kill -KILL -- "-$(cat "$work/state/gone/pid")"
sleep 0.5
set +e
OUT=$work/gone "$gpu" background wait gone 5 > "$work/gone.txt"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a run killed outright: wait returned $rc, not 1: $(cat "$work/gone.txt")"
grep -q '^gone: ended without a status' "$work/gone.txt" || fail "no 'ended without a status': $(cat "$work/gone.txt")"
[ "$(tar xzOf "$work/gone/gone.tgz" out/so_far.txt)" = some ] || fail "a run killed outright: what it wrote was not packed"

# Names that would leave the state directory, and a start without a command.
if "$gpu" background start ../escape -- true 2> /dev/null; then fail "a name with '/' was accepted"; fi
if "$gpu" background start ok -- 2> /dev/null; then fail "a start without a command was accepted"; fi
echo "gpu background: detached run, its log and status, its results packed so far and at the end, refusals and stop checked"
