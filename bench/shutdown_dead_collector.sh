#!/usr/bin/env bash
# How long a deployment takes to stop when its OTLP collector never answers, and how many lines
# its telemetry prints about it (issue 28 item 6).
#
# Workload: `gym env start --resources-server example_single_tool_call --model-type replay_model
# ++input_jsonl_fpath=<data>/weather.jsonl ++head_server.port=<free>` (the orchestrator and three
# servers; TASKS tasks from bench/e2e_data.py) with telemetry on: NEMO_GYM_OTEL_ENABLED=1,
# OTEL_EXPORTER_OTLP_ENDPOINT=<collector>, OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf,
# OTEL_METRIC_EXPORT_INTERVAL=60000 (only the last export at shutdown goes out). The collector is
# build/tests/support/gym_test_server --otlp-mode hang (COLLECTOR=hang: connections accepted,
# requests never answered) or a port where nothing listens (COLLECTOR=down). Once every server is
# ready, one rollout goes through the agent's /run (reward 1.0 checked), then the orchestrator gets
# SIGTERM. Measured: the time from the signal to its exit (exit code 143 checked), the lines of its
# output that start a telemetry warning ("telemetry: "), and among them the one report of what
# the deployment could not export ("telemetry: the last export at shutdown did not complete: ",
# which must be there). ROUNDS deployments, one after the other.
#
# Prints a table and records it in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] bash bench/shutdown_dead_collector.sh [--no-record]
#
# Environment:
#   GYM_BUILD_DIR  build dir holding src/cli/gym and tests/support/gym_test_server (default: build;
#                  relative to the repo root)
#   COLLECTOR      hang (default) or down
#   ROUNDS         deployments started and stopped (default 3)
#   TASKS          tasks generated for the replay model (default 16)
#   READY_TIMEOUT  seconds to wait for each deployment (default 60)
#   KEEP_TMP=1     keep the temp dir (data, logs)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=shutdown_dead_collector.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

bench_record_args "$@"

COLLECTOR=${COLLECTOR:-hang}
ROUNDS=${ROUNDS:-3}
TASKS=${TASKS:-16}
READY_TIMEOUT=${READY_TIMEOUT:-60}
[[ $COLLECTOR == hang || $COLLECTOR == down ]] || die "COLLECTOR must be hang or down, got '$COLLECTOR'"
for v in ROUNDS TASKS READY_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
RECEIVER=$BUILD_DIR/tests/support/gym_test_server
for b in "$GYM" "$RECEIVER"; do
  [[ -x $b ]] || die "$b not found
  build it: cmake --build ${GYM_BUILD_DIR:-build} --target gym gym_test_server, or point GYM_BUILD_DIR at the build dir that has them"
done
[[ -x $PYTHON ]] || die "$PYTHON not found"

bench_tmpdir gym-shutdown-dead-collector
DATA=$TMP/data
$PYTHON "$BENCH_DIR/e2e_data.py" --out-dir "$DATA" --name weather --tasks "$TASKS" >"$TMP/data.log" ||
  die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
INPUT=$DATA/weather.jsonl
sed -n 1p "$INPUT" >"$TMP/row.json"

# Telemetry comes only from the variables below: drop any of the calling shell.
for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_* | GYM_TELEMETRY_*) unset "$v" ;; esac
done

read -r PORT_COLLECTOR < <(free_ports 1)
if [[ $COLLECTOR == hang ]]; then
  "$RECEIVER" --host 127.0.0.1 --port "$PORT_COLLECTOR" --otlp-mode hang >"$TMP/collector.log" 2>&1 &
  PID_COLLECTOR=$!
  PIDS+=("$PID_COLLECTOR")
  wait_log "$TMP/collector.log" '^LISTENING ' "$PID_COLLECTOR" 10 "the collector"
fi
VENV=(NEMO_GYM_OTEL_ENABLED=1 "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT_COLLECTOR"
  OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_METRIC_EXPORT_INTERVAL=60000)

REPORT='telemetry: the last export at shutdown did not complete: '
RESULTS=$TMP/results.tsv
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
  dir=$TMP/round_$round
  mkdir -p "$dir"
  read -r PORT_HEAD < <(free_ports 1)
  (cd "$dir" && exec env "${VENV[@]}" "$GYM" env start --resources-server example_single_tool_call \
    --model-type replay_model "++input_jsonl_fpath=$INPUT" "++head_server.port=$PORT_HEAD") \
    >"$dir/env.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_log "$dir/env.log" 'All 3 / 3 servers ready!' "$pid" "$READY_TIMEOUT" "gym env start (round $round)"
  agent=
  while IFS=$'\t' read -r kind _ url; do
    [[ $kind == agent ]] && agent=$url
  done < <(server_instances "$PORT_HEAD" "$dir/server_instances.json")
  [[ -n $agent ]] || die "/server_instances of round $round lists no agent"
  check_run "round_$round" "$agent" "$TMP/row.json"
  rc=0
  t0=$(now_ns)
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  t1=$(now_ns)
  keep=()
  for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
  [[ $rc == 143 ]] || { tail -n 30 "$dir/env.log" >&2; die "round $round: gym env start exited $rc, not 143"; }
  warnings=$(grep -c 'telemetry: ' "$dir/env.log" || true)
  reports=$(grep -cF "$REPORT" "$dir/env.log" || true)
  ((reports >= 1)) || { tail -n 30 "$dir/env.log" >&2; die "round $round: no '$REPORT' line"; }
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  printf '%s\t%s\t%s\t%s\n' "$round" "$secs" "$warnings" "$reports" >>"$RESULTS"
  echo "round $round: stopped in $secs s, $warnings telemetry line(s), $reports report line(s)" >&2
done

# --- report --------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR COLLECTOR ROUNDS TASKS; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/shutdown_dead_collector.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
CPU_MODEL=$(cpu_model)
export RESULTS RECORD CMD BUILT_FROM CPU_MODEL COLLECTOR
export SECTION_FILE=$TMP/section.md
$PYTHON - <<'EOF'
import datetime, os, statistics

env = os.environ
rows = [line.rstrip("\n").split("\t") for line in open(env["RESULTS"]) if line.strip()]
secs = [float(r[1]) for r in rows]
head = ["round", "SIGTERM to exit (s)", "telemetry warning lines", "of them the shutdown report"]
cells = [[r[0], r[1], r[2], r[3]] for r in rows]
cells.append(["median", f"{statistics.median(secs):.2f}", "", ""])
table = "\n".join(["| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
                  + ["| " + " | ".join(c) + " |" for c in cells])
collector = ("`gym_test_server --otlp-mode hang` (connections accepted, never answered)"
             if env["COLLECTOR"] == "hang" else "a port where nothing listens")
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
section = f"""<!-- shutdown_dead_collector.sh:begin (generated by bench/shutdown_dead_collector.sh; edits here are overwritten) -->
## Stopping a deployment whose OTLP collector never answers

`{env["CMD"]}` ({now}; nproc={os.cpu_count()}, CPU: {env["CPU_MODEL"]}). Build: {env["BUILT_FROM"]}.

`gym env start --resources-server example_single_tool_call --model-type replay_model` (the
orchestrator and three servers) with `NEMO_GYM_OTEL_ENABLED=1`, OTLP/HTTP protobuf to
{collector}, `OTEL_METRIC_EXPORT_INTERVAL=60000`; one rollout through the agent's `/run`, then
SIGTERM to the orchestrator, timed to its exit (143). The lines are those of its output holding
`telemetry: `; the report is `{"telemetry: the last export at shutdown did not complete: "}...`.

{table}

One bound for the whole shutdown: the orchestrator flushes for at most 1 s before it signals the
servers, which get the 4 s left (`GYM_TELEMETRY_SHUTDOWN_MS=4000`, of which their exporter takes
95 %, 3.8 s) while the orchestrator makes its own last export; a collector that never answers
costs about 1 + 3.8 s.

Measured when that bound came in (issue 28 item 6, commit cae5f66), with a collector that never
answers: before it, the orchestrator's flush, every server's last export and its own came one
after the other, each with its 5 s bound, and each process said its failure: 15.2 s and 9
warning lines; with it, 5.6 s and 1 line.
<!-- shutdown_dead_collector.sh:end -->
"""
print(table)
open(env["SECTION_FILE"], "w").write(section)
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
EOF
[[ $RECORD == 1 ]] && record_section shutdown_dead_collector.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"
exit 0
