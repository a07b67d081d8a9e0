#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ (built by `make fuzz` into BUILD_DIR) for a bounded time
# over its seed corpus fuzz/corpus/<target>/, and fails on any crash, leak, timeout or
# out-of-memory. New inputs go to BUILD_DIR/fuzz-corpus/<target>/ (the repository's corpus is
# only read); a failing input is saved under BUILD_DIR/fuzz-artifacts/<target>/.
#
# Usage: scripts/fuzz.sh [BUILD_DIR]     (default build-fuzz)
# Environment: FUZZ_SECONDS  seconds per target (default 60)
#              FUZZ_TARGETS  the targets to run, space-separated (default: all)
#              FUZZ_TIMEOUT  seconds one input may take before it counts as a hang (default 10)
set -euo pipefail

PROG=fuzz.sh
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
timeout=${FUZZ_TIMEOUT:-10}
targets=${FUZZ_TARGETS:-"fuzz_http_request fuzz_http_response fuzz_schema fuzz_config fuzz_session_cookie fuzz_input_rows fuzz_chat_conversion fuzz_secrets"}

# Leaks fail the run; UBSan findings abort (they are built with -fno-sanitize-recover).
# malloc_context_size=2: ASan records each allocation's stack by walking frame pointers, and
# through Debian's yaml-cpp (built without them) that walk reads garbage, so nearly every stack
# is new: the stack depot grew without bound and took a third of fuzz_config's time after minutes
# (perf). Two frames are always real. A crash report's own stack is unaffected; rerun a saved
# input without this option for full allocation stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=2}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

summary=()
failed=0
for target in $targets; do
  binary=$build/fuzz/$target
  if [[ ! -x $binary ]]; then
    echo "$PROG: $binary is missing (make fuzz builds it)" >&2
    exit 2
  fi
  corpus=$build/fuzz-corpus/$target
  artifacts=$build/fuzz-artifacts/$target
  log=$build/fuzz-logs/$target.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  echo "$PROG: $target for ${seconds}s (log: $log)"
  rc=0
  "$binary" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "fuzz/corpus/$target" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  status=ok
  if ((rc != 0)); then
    status="FAILED (exit $rc; input in $artifacts/)"
    failed=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5 >&2 || true
  fi
  summary+=("$(printf '%-22s %12s runs %8s exec/s  %s' "$target" "${runs:-?}" "${rate:-?}" "$status")")
done

printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "$PROG: a target failed; reproduce with: $build/fuzz/<target> <input>" >&2
  exit 1
fi
