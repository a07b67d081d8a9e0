#!/usr/bin/env bash
# Idle memory of every server kind: starts `gym env start --resources-server mcqa --model-type
# replay_model` (replaying mcqa/example_rollouts.jsonl), waits for "All 3 / 3 servers ready!",
# reads GET /server_instances from the head server and, for every listed pid and for the
# orchestrator itself, /proc/<pid>/smaps_rollup (Rss, Pss, private = Private_Clean +
# Private_Dirty, in kB): resources server (mcqa), agent (mcqa_simple_agent), model
# (policy_model), orchestrator (which also runs the head server). Then the same for the FastAPI
# peer of bench/verify_load.sh (bench/mcqa_fastapi.py under uvicorn, one process), for
# comparison. Every process is idle: started, answered its readiness probe, SETTLE seconds of
# rest. Prints a table and records it in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] bash bench/server_footprint.sh [--no-record]
#
# Environment:
#   GYM_BUILD_DIR        build dir holding src/cli/gym (default: build; relative to the repo root)
#   GYM_CONFORMANCE_DIR  conformance data root (default: ../shared/data/conformance, relative to
#                        the repo root); must hold mcqa/example_rollouts.jsonl
#   SETTLE               seconds to wait after readiness before reading memory (default 3)
#   READY_TIMEOUT        seconds to wait for "All 3 / 3 servers ready!" (default 120)
#   KEEP_TMP=1           keep the temp dir (orchestrator output, /server_instances)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=server_footprint.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

bench_record_args "$@"

SETTLE=${SETTLE:-3}
READY_TIMEOUT=${READY_TIMEOUT:-120}
for v in SETTLE READY_TIMEOUT; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done
PYTHON=/usr/bin/python3
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
DATA_ROOT=${GYM_CONFORMANCE_DIR:-$REPO_ROOT/../shared/data/conformance}
[[ $DATA_ROOT == /* ]] || DATA_ROOT=$REPO_ROOT/$DATA_ROOT

command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
$PYTHON -c 'import fastapi, uvicorn, uvloop, httptools' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/uvloop/httptools (apt-get install python3-fastapi python3-uvicorn python3-uvloop python3-httptools)"
[[ -x $GYM ]] || die "gym binary not found: $GYM (set GYM_BUILD_DIR to the build dir that has src/cli/gym)"
[[ -d $DATA_ROOT ]] || die "conformance data root not found: $DATA_ROOT
  set GYM_CONFORMANCE_DIR to the directory that holds mcqa/example_rollouts.jsonl"
ROLLOUTS=$DATA_ROOT/mcqa/example_rollouts.jsonl
[[ -f $ROLLOUTS ]] || die "data file not found: $ROLLOUTS (is $DATA_ROOT the conformance data root?)"
ROLLOUTS=$(cd "$(dirname "$ROLLOUTS")" && pwd)/$(basename "$ROLLOUTS")
[[ -r /proc/self/smaps_rollup ]] || die "/proc/<pid>/smaps_rollup is not available on this kernel"

# The orchestrator stops its servers (docs/design/processes.md#shutdown-order) within about 10 s.
STOP_WAIT=150
# The orchestrator's children die with it (parent-death signal); make sure of it.
stop_children() {
  local pid
  for pid in ${CHILD_PIDS:-}; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null && echo "warning: server pid $pid outlived the orchestrator" >&2
  done
}
BENCH_CLEANUP_AFTER_HOOK=stop_children
bench_tmpdir gym-footprint

for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

read -r PORT_HEAD PORT_FASTAPI < <(free_ports 2)

mem_kb() { # pid -> "rss pss private"
  awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } /^Private_(Clean|Dirty):/ { u += $2 }
       END { print r, p, u }' "/proc/$1/smaps_rollup"
}

# --- gym env start -----------------------------------------------------------------------
START_CMD=("$GYM" env start --resources-server mcqa --model-type replay_model
  "++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpaths=[$ROLLOUTS]"
  "++head_server.port=$PORT_HEAD")
(cd "$TMP" && exec "${START_CMD[@]}") >"$TMP/orchestrator.log" 2>&1 &
PID_ORCH=$!
PIDS+=("$PID_ORCH")
wait_log "$TMP/orchestrator.log" 'All 3 / 3 servers ready!' "$PID_ORCH" "$READY_TIMEOUT" "gym env start"
curl -sf "http://127.0.0.1:$PORT_HEAD/server_instances" >"$TMP/server_instances.json" ||
  die "GET http://127.0.0.1:$PORT_HEAD/server_instances failed"
CHILD_PIDS=$($PYTHON -c 'import json, sys; print(*(i["pid"] for i in json.load(open(sys.argv[1]))))' \
  "$TMP/server_instances.json")
sleep "$SETTLE"

ROWS=$TMP/rows.tsv
: >"$ROWS"
$PYTHON - "$TMP/server_instances.json" >"$TMP/instances.tsv" <<'EOF'
import json, sys
kind = {"resources_servers": "resources server", "responses_api_agents": "agent",
        "responses_api_models": "model"}
for i in json.load(open(sys.argv[1])):
    print(kind.get(i["server_type"], i["server_type"]), i["process_name"], i["name"], i["pid"], sep="\t")
EOF
[[ $(wc -l <"$TMP/instances.tsv") == 3 ]] || die "/server_instances lists $(wc -l <"$TMP/instances.tsv") servers, expected 3"
while IFS=$'\t' read -r kind inst impl pid; do
  [[ -r /proc/$pid/smaps_rollup ]] || die "pid $pid ($inst) from /server_instances is not running"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$inst" "$impl" "$pid" "$(threads "$pid")" "$(mem_kb "$pid" | tr ' ' '\t')" >>"$ROWS"
done <"$TMP/instances.tsv"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "orchestrator + head server" "-" "gym env start" "$PID_ORCH" \
  "$(threads "$PID_ORCH")" "$(mem_kb "$PID_ORCH" | tr ' ' '\t')" >>"$ROWS"
# Any descendant of the orchestrator that /server_instances does not list (there should be none).
EXTRA=$(for p in /proc/[0-9]*; do
  p=${p#/proc/}
  pp=$(awk '{ sub(/^.*\) /, ""); print $2 }' "/proc/$p/stat" 2>/dev/null) || continue
  if [[ $pp == "$PID_ORCH" ]] && ! grep -qw "$p" <<<"$CHILD_PIDS"; then echo "$p"; fi
done | tr '\n' ' ')

# Stop the deployment before the peer starts, so that the machine holds one of them at a time.
kill -TERM "$PID_ORCH"
for _ in $(seq 150); do kill -0 "$PID_ORCH" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID_ORCH" 2>/dev/null && die "the orchestrator did not stop within 15 s of SIGTERM"
wait "$PID_ORCH" 2>/dev/null || true
LEFT=
for pid in $CHILD_PIDS; do kill -0 "$pid" 2>/dev/null && LEFT+="$pid "; done
[[ -z $LEFT ]] || die "servers still running after the orchestrator stopped: $LEFT"

# --- the FastAPI peer --------------------------------------------------------------------
UVICORN_ARGS=(-m uvicorn mcqa_fastapi:app --app-dir "$BENCH_DIR" --host 127.0.0.1 --port "$PORT_FASTAPI"
  --loop uvloop --http httptools --workers 1 --no-access-log --log-level warning)
$PYTHON "${UVICORN_ARGS[@]}" >"$TMP/fastapi.log" 2>&1 &
PID_FASTAPI=$!
PIDS+=("$PID_FASTAPI")
ok=0
for _ in $(seq 300); do
  if curl -sf -o /dev/null "http://127.0.0.1:$PORT_FASTAPI/"; then ok=1; break; fi
  kill -0 "$PID_FASTAPI" 2>/dev/null || break
  sleep 0.1
done
[[ $ok == 1 ]] || { tail -n 30 "$TMP/fastapi.log" >&2; die "the FastAPI peer did not answer GET / within 30 s"; }
sleep "$SETTLE"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "FastAPI peer (uvicorn)" "-" "bench/mcqa_fastapi.py" "$PID_FASTAPI" \
  "$(threads "$PID_FASTAPI")" "$(mem_kb "$PID_FASTAPI" | tr ' ' '\t')" >>"$ROWS"

# --- report ------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR GYM_CONFORMANCE_DIR SETTLE; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/server_footprint.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
SRC_DIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
BUILT_FROM="\`${GYM#"$REPO_ROOT"/}\` (${BUILD_TYPE:-unknown build type}, $(($(stat -c %s "$GYM") / 1024)) KiB), built from ${SRC_DIR:-an unknown source tree}"
if [[ -n $SRC_DIR ]] && git -C "$SRC_DIR" rev-parse --git-dir >/dev/null 2>&1; then
  BUILT_FROM+=" at \`$(git -C "$SRC_DIR" log -1 --format='%h')\`"
fi
PEER_VERSIONS=$($PYTHON -c 'import fastapi, pydantic, uvicorn, sys
print(f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, pydantic {pydantic.VERSION}, uvicorn {uvicorn.__version__}")')
export ROWS RECORD CMD BUILT_FROM PEER_VERSIONS SETTLE EXTRA
CPU_MODEL=$(cpu_model)
export SECTION_FILE=$TMP/section.md CPU_MODEL
$PYTHON - <<'EOF'
import datetime, os, platform

env = os.environ
rows = [line.rstrip("\n").split("\t") for line in open(env["ROWS"]) if line.strip()]
head = ["process", "instance", "impl", "threads", "Rss kB", "Pss kB", "private kB"]
cells = [[r[0], r[1], r[2], r[4], f"{int(r[5]):,}", f"{int(r[6]):,}", f"{int(r[7]):,}"] for r in rows]
gym_rows = [r for r in rows if r[2] != "bench/mcqa_fastapi.py"]
peer = [r for r in rows if r[2] == "bench/mcqa_fastapi.py"][0]
tot = lambda i: sum(int(r[i]) for r in gym_rows)
cells.insert(len(gym_rows), ["all four gym processes (sum)", "", "", "", f"{tot(5):,}", f"{tot(6):,}", f"{tot(7):,}"])

w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
line = lambda cs: "| " + " | ".join(x.ljust(n) for x, n in zip(cs, w)) + " |"
table = "\n".join([line(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [line(c) for c in cells])
res = [r for r in gym_rows if r[0] == "resources server"][0]
notes = [
    f"resources server (mcqa) / FastAPI peer: Rss {int(res[5]) / int(peer[5]):.2f}x, "
    f"Pss {int(res[6]) / int(peer[6]):.2f}x, private {int(res[7]) / int(peer[7]):.2f}x",
    f"the whole gym deployment (4 processes, Pss sum) / one FastAPI peer process: "
    f"{tot(6) / int(peer[6]):.2f}x",
    "descendants of the orchestrator not listed by /server_instances: "
    + (env["EXTRA"].strip() or "none"),
]
print(table)
print()
for n in notes:
    print("  " + n)
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
load = " ".join(open("/proc/loadavg").read().split()[:3])
section = f"""<!-- server_footprint.sh:begin (generated by bench/server_footprint.sh; edits here are overwritten) -->
## Idle memory of each server kind (RSS / PSS)

- Date: {now}
- Machine: nproc={os.cpu_count()}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}; load average
  {load} at the end.
- Command (repo root): `{env['CMD']}`
- gym: {env['BUILT_FROM']}. Deployment:
  `gym env start --resources-server mcqa --model-type replay_model ++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpaths=[<conformance>/mcqa/example_rollouts.jsonl] ++head_server.port=<free>`
  (telemetry off, as by default); read once "All 3 / 3 servers ready!" was printed and
  {env['SETTLE']} s had passed; pids from the head server's `GET /server_instances`, plus the
  orchestrator's own pid (it runs the head server). Every server is one process (no `num_workers`).
- FastAPI peer: `/usr/bin/python3 -m uvicorn mcqa_fastapi:app --app-dir bench --host 127.0.0.1 --port <free> --loop uvloop --http httptools --workers 1 --no-access-log --log-level warning`
  ({env['PEER_VERSIONS']}), started after the deployment had stopped, read {env['SETTLE']} s
  after it answered `GET /`.
- From `/proc/<pid>/smaps_rollup`: Rss; Pss (shared pages divided among the processes that map
  them, so the Pss of the four gym processes, which map the same `gym` binary, add up to their
  real total); private = Private_Clean + Private_Dirty. All in kB.

{table}

{chr(10).join('- ' + n for n in notes)}
<!-- server_footprint.sh:end -->
"""
with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section server_footprint.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
