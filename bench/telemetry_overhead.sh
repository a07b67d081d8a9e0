#!/usr/bin/env bash
# Telemetry overhead on the end-to-end rollout benchmark: our stack with telemetry off (the
# default) and on, side by side, on the same data, in one run.
#
# Workload: that of bench/e2e_load.sh (ours only): `example_single_tool_call` with a replay model,
# TASKS distinct synthetic cities from bench/e2e_data.py, 7 HTTP exchanges per rollout. One
# deployment per variant, `gym env start --resources-server example_single_tool_call --model-type
# replay_model ++input_jsonl_fpath=<data>/weather.jsonl ++head_server.port=<free>` (4 processes
# each) stay up for the whole run, each measured by its own `gym eval run --no-serve` collector
# (`--agent example_single_tool_call_simple_agent --concurrency C --disable-aggregation`),
# started with the same environment as its deployment:
#   off    no telemetry variable at all (telemetry off, as by default);
#   on     NEMO_GYM_OTEL_ENABLED=1, NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED=1,
#          NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS=1 (memory sampler every second in the
#          orchestrator), OTLP/HTTP protobuf to a local receiver (OTEL_EXPORTER_OTLP_ENDPOINT,
#          OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf) at the default export interval (10 s);
#   on_1s  the same with OTEL_METRIC_EXPORT_INTERVAL=1000: an export every second from every
#          process, the worst case of frequent exports;
#   spans  on, plus spans (issue 14): NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout (every request's
#          SERVER and CLIENT span, gym.rollout, gym.agent.responses, gym.model.responses,
#          gym.verify), exported as OTLP/HTTP protobuf to the receiver's /v1/traces (on and on_1s
#          set NEMO_GYM_OTEL_TRACES_ENABLED=0: metrics only, as before traces existed);
#   off2   a second deployment exactly like off: the A/A control, whose difference from off is
#          the noise floor of the comparison (machine, and which deployment got which memory and
#          cores), not telemetry.
# The receiver of each enabled deployment is build/tests/support/gym_test_server --otlp-mode ok,
# a fake OTLP collector that decodes every request (protobuf) and counts them per
# service.instance.id; its own CPU is reported apart (it is not part of our stack).
#
# At each concurrency of LEVELS (default 64 1024), ROUNDS times (default 4), every variant runs
# ROLLOUTS rollouts, all meeting the same machine conditions. The order within a round follows a
# Williams design: over n rounds (2n for an odd number n of variants) each variant takes every
# position equally often and follows every other variant equally often, since a run can slow the
# one after it (a plain rotation always puts the same predecessor before each variant). Measured per run, as
# bench/e2e_load.sh does (bench/lib.sh measure_run): wall time of the collector command ->
# rollouts/s; CPU time of every process (servers' process trees and the orchestrator from /proc,
# the collector from /usr/bin/time) -> CPU s per 1000 rollouts; peak RSS (VmHWM, reset before
# each run) of all processes. Every output is checked: the expected number of rows, each (task,
# rollout) once, reward 1.0, the recorded trajectory and usage, no failure rows. After the runs
# the enabled deployments are stopped (SIGTERM: each process flushes) and their receivers must have
# decoded exports from every process: the orchestrator, agent, model and resources servers (matched
# by process.pid) and one rollout_collection instance per collector run, all with the same
# nemo.run.id (the collectors adopt the served one), no undecodable request, the agent's cumulative
# gym.rollout.duration_ms count and the resources server's gym.verify.duration_ms count equal to the
# rollouts run through that deployment, the collectors' gym.http.connection_pool.connect_total equal
# to their rollouts, every server's http.server.request.duration count at least its inbound requests
# and its http.server.active_requests back to 0, and the orchestrator's memory gauges present. Any
# failure stops the script before anything is recorded.
#
# Prints the tables and records them in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] bash bench/telemetry_overhead.sh [--no-record]
#
# Environment:
#   GYM_BUILD_DIR  build dir holding src/cli/gym and tests/support/gym_test_server (default: build;
#                  relative to the repo root)
#   TASKS          distinct tasks generated (default 2048)
#   LEVELS         concurrencies (default "64 1024")
#   ROUNDS         rounds at each level (default 4; about 3 minutes in all on a quiet 2-core
#                  machine, 5-6 on a busy one)
#   ROLLOUTS       rollouts of each variant per level and round, "C:N ..." (default
#                  "64:12288 1024:12288"); run as --limit L --num-repeats R with L * R = N
#   VARIANTS       variants run (default "off on on_1s off2"; off, the baseline, is required;
#                  spans adds the traces variant)
#   READY_TIMEOUT  seconds to wait for each deployment (default 60)
#   KEEP_TMP=1     keep the temp dir (data, outputs, logs, receiver stats)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=telemetry_overhead.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

RECORD=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --no-record) RECORD=0 ;;
    -h | --help)
      awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

TASKS=${TASKS:-2048}
LEVELS=${LEVELS:-64 1024}
ROUNDS=${ROUNDS:-4}
ROLLOUTS=${ROLLOUTS:-64:12288 1024:12288}
VARIANTS=${VARIANTS:-off on on_1s off2}
READY_TIMEOUT=${READY_TIMEOUT:-60}
for v in TASKS ROUNDS READY_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
for c in $LEVELS; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || die "LEVELS must hold positive integers, got '$c'"
  split_count "$(rollouts_for "$ROLLOUTS" "$c")" >/dev/null
done
read -r -a VARIANT_LIST <<<"$VARIANTS"
[[ " $VARIANTS " == *" off "* ]] || die "VARIANTS must include off (the baseline)"
((${#VARIANT_LIST[@]} >= 2)) || die "VARIANTS must name off and at least one other variant"
for v in "${VARIANT_LIST[@]}"; do
  [[ $v == off || $v == off2 || $v == on || $v == on_1s || $v == spans ]] ||
    die "unknown variant '$v' in VARIANTS (off, off2, on, on_1s, spans)"
done
AGENT=example_single_tool_call_simple_agent
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
RECEIVER=$BUILD_DIR/tests/support/gym_test_server

# --- tools -------------------------------------------------------------------------------
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
for b in "$GYM" "$RECEIVER"; do
  [[ -x $b ]] || die "$b not found
  build it: cmake -S . -B ${GYM_BUILD_DIR:-build} -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ${GYM_BUILD_DIR:-build} --target gym gym_test_server
  or point GYM_BUILD_DIR at the build dir that has them"
done
$GYM eval run --help >/dev/null 2>&1 || die "$GYM has no 'eval run' (build a newer gym)"

bench_tmpdir gym-telemetry-overhead
DATA=$TMP/data
$PYTHON "$BENCH_DIR/e2e_data.py" --out-dir "$DATA" --name weather --tasks "$TASKS" >"$TMP/data.log" ||
  die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
INPUT=$DATA/weather.jsonl

# One socket per rollout in flight on each side of /run, plus the agent's downstream connections.
raise_fd_limit $((${LEVELS##* } + 4096))

# Telemetry comes only from the variables below: drop any of the calling shell.
for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

# --- receivers and deployments -------------------------------------------------------------
declare -A VENV PORT_HEAD PID_ORCH PID_RECV PORT_RECV
read -r -a PORTS < <(free_ports $((2 * ${#VARIANT_LIST[@]})))
i=0
for v in "${VARIANT_LIST[@]}"; do
  PORT_HEAD[$v]=${PORTS[$i]}
  PORT_RECV[$v]=${PORTS[$((i + 1))]}
  i=$((i + 2))
  VENV[$v]=
  [[ $v == off* ]] && continue
  "$RECEIVER" --host 127.0.0.1 --port "${PORT_RECV[$v]}" --otlp-mode ok >"$TMP/receiver_$v.log" 2>&1 &
  PID_RECV[$v]=$!
  PIDS+=("$!")
  VENV[$v]="NEMO_GYM_OTEL_ENABLED=1 NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED=1 NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS=1 OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:${PORT_RECV[$v]} OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
  [[ $v == on_1s ]] && VENV[$v]+=" OTEL_METRIC_EXPORT_INTERVAL=1000"
  if [[ $v == spans ]]; then
    VENV[$v]+=" NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout"
  else
    VENV[$v]+=" NEMO_GYM_OTEL_TRACES_ENABLED=0"
  fi
done
for v in "${VARIANT_LIST[@]}"; do
  [[ $v == off* ]] && continue
  wait_log "$TMP/receiver_$v.log" '^LISTENING ' "${PID_RECV[$v]}" 10 "receiver of $v"
done

for v in "${VARIANT_LIST[@]}"; do
  mkdir -p "$TMP/$v"
  read -r -a venv <<<"${VENV[$v]}"
  (cd "$TMP/$v" && exec env "${venv[@]}" "$GYM" env start --resources-server example_single_tool_call \
    --model-type replay_model "++input_jsonl_fpath=$INPUT" "++head_server.port=${PORT_HEAD[$v]}") \
    >"$TMP/${v}_env.log" 2>&1 &
  PID_ORCH[$v]=$!
  PIDS+=("$!")
done
declare -A SPID SURL # [variant.kind]
for v in "${VARIANT_LIST[@]}"; do
  wait_log "$TMP/${v}_env.log" 'All 3 / 3 servers ready!' "${PID_ORCH[$v]}" "$READY_TIMEOUT" "gym env start ($v)"
  while IFS=$'\t' read -r kind pid url; do
    SPID[$v.$kind]=$pid
    SURL[$v.$kind]=$url
  done < <(server_instances "${PORT_HEAD[$v]}" "$TMP/${v}_server_instances.json")
  for kind in agent model resources; do
    [[ -n ${SPID[$v.$kind]:-} ]] || die "/server_instances of $v lists no $kind server"
  done
done

# One rollout through each deployment, by hand, before any load: 200 and reward 1.0.
sed -n 1p "$INPUT" >"$TMP/row.json"
for v in "${VARIANT_LIST[@]}"; do check_run "$v" "${SURL[$v.agent]}" "$TMP/row.json"; done

# --- what each deployment costs while idle -----------------------------------------------------
# While one variant runs, the others are idle but the enabled ones still sample memory and export
# (and their receivers decode): that CPU is taken from the running variant. Measured here, with
# nothing running, over IDLE_SECONDS, as cores (CPU seconds per second).
IDLE_SECONDS=10
declare -A IDLE0
idle_ticks() { # VARIANT: CPU ticks of the deployment (orchestrator's tree) and its receiver
  local t
  t=$(tree_cpu_ticks "${PID_ORCH[$1]}")
  [[ $1 != off* ]] && t=$((t + $(cpu_ticks "${PID_RECV[$1]}")))
  echo "$t"
}
for v in "${VARIANT_LIST[@]}"; do IDLE0[$v]=$(idle_ticks "$v"); done
sleep "$IDLE_SECONDS"
IDLE_COST=
for v in "${VARIANT_LIST[@]}"; do
  IDLE_COST+="$v:$(awk -v a="${IDLE0[$v]}" -v b="$(idle_ticks "$v")" -v t="$(getconf CLK_TCK)" -v s="$IDLE_SECONDS" \
    'BEGIN { printf "%.4f", (b - a) / t / s }') "
done
echo "idle cost, cores (CPU s per s; deployment + receiver): $IDLE_COST" >&2

# --- measurement ---------------------------------------------------------------------------
RESULTS=$TMP/results.tsv
: >"$RESULTS"

# run_variant VARIANT CONCURRENCY ROLLOUTS ROUND: one collector run, one line in RESULTS.
run_variant() {
  local v=$1 c=$2 n=$3 round=$4
  local limit repeats dir out kind specs=
  read -r limit repeats < <(split_count "$n")
  dir=$TMP/${v}_c${c}_r$round
  mkdir -p "$dir"
  out=$dir/rollouts.jsonl
  for kind in resources model agent; do specs+=" $kind:${SPID[$v.$kind]}:tree"; done
  # The orchestrator's tree holds the servers: count only its own process (its memory sampler and
  # exporter threads included).
  specs+=" orchestrator:${PID_ORCH[$v]}:self"
  [[ $v != off* ]] && specs+=" receiver:${PID_RECV[$v]}:self"
  local -a venv cmd
  read -r -a venv <<<"${VENV[$v]}"
  cmd=(env "${venv[@]}" "$GYM" eval run --no-serve "++head_server.port=${PORT_HEAD[$v]}" --input "$INPUT"
    --output "$out" --agent "$AGENT" --limit "$limit" --num-repeats "$repeats" --concurrency "$c"
    --disable-aggregation)
  echo "running ($v, concurrency $c, round $round, $n rollouts)" >&2
  measure_run "$dir" "$v" "$specs" "${cmd[@]}"
  # variant round conc rollouts limit repeats rc wall_s collector_rss collector_cpu_s
  # machine_busy_s, then label:hwm_kb:cpu_s per process
  echo "$v	$round	$c	$n	$limit	$repeats	$MEASURED" >>"$RESULTS"
  check_rollouts "$out" "$n" "$DATA/weather_rollouts.jsonl" "${MEASURED%%	*}" >"$dir/check.txt" 2>&1 ||
    { echo "--- $dir/collector.log (tail)" >&2; tail -n 20 "$dir/collector.log" >&2
      die "$v at concurrency $c: $(cat "$dir/check.txt")"; }
  echo "  -> $(awk -F'\t' '{ printf "%.1f rollouts/s; ", $4 / $8 }' <<<"$v	$round	$c	$n	$limit	$repeats	$MEASURED")$(cat "$dir/check.txt")" >&2
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(cpu_busy_pct 3)
echo "CPU busy with other work in the 3 s before the runs: ${BUSY_BEFORE}% (load average $LOAD_BEFORE)"
[[ $BUSY_BEFORE -lt 20 ]] || warn "the machine is busy; figures will be noisy (ratios within a round still compare)"
T_START=$(date +%s)

# williams_order ROUND: the indexes of VARIANT_LIST in the order of round ROUND (1-based): row
# ROUND - 1 of a Williams square (first row 0, 1, k-1, 2, k-2, ...; row i adds i mod k), and for
# an odd k the rows k..2k-1 are rows 0..k-1 reversed.
williams_order() {
  local k=${#VARIANT_LIST[@]} row=$((($1 - 1) % (2 * ${#VARIANT_LIST[@]}))) j a
  local -a order=()
  for j in $(seq 0 $((k - 1))); do
    if ((j == 0)); then a=0; elif ((j % 2 == 1)); then a=$(((j + 1) / 2)); else a=$((k - j / 2)); fi
    order+=($(((a + row % k) % k)))
  done
  if ((k % 2 == 1 && row >= k)); then
    for ((j = k - 1; j >= 0; j--)); do echo -n "${order[$j]} "; done
  else
    echo "${order[*]}"
  fi
}

for c in $LEVELS; do
  n=$(rollouts_for "$ROLLOUTS" "$c")
  for round in $(seq "$ROUNDS"); do
    for j in $(williams_order "$round"); do
      run_variant "${VARIANT_LIST[$j]}" "$c" "$n" "$round"
    done
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
T_RUNS=$(($(date +%s) - T_START))

# --- exports: stop the enabled deployments (each process flushes), then read the receivers ----
for v in "${VARIANT_LIST[@]}"; do
  [[ $v == off* ]] && continue
  kill -TERM "${PID_ORCH[$v]}" 2>/dev/null || true
done
for v in "${VARIANT_LIST[@]}"; do
  [[ $v == off* ]] && continue
  for _ in $(seq 300); do kill -0 "${PID_ORCH[$v]}" 2>/dev/null || break; sleep 0.1; done
  kill -0 "${PID_ORCH[$v]}" 2>/dev/null && die "gym env start ($v) did not stop within 30 s of SIGTERM"
  curl -sf "http://127.0.0.1:${PORT_RECV[$v]}/stats" >"$TMP/receiver_$v.json" ||
    die "GET /stats of the receiver of $v failed"
done
ACCEPT_WARNINGS=$(cat "$TMP"/*_env.log | grep -c 'accept failed' || true)

# --- check and report ----------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR TASKS LEVELS ROUNDS ROLLOUTS VARIANTS; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v='$(printenv "$v")' "
done
CMD+="bash bench/telemetry_overhead.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
HEAD_HERE=$(git -C "$REPO_ROOT" log -1 --format='%h' 2>/dev/null || echo unknown)
: >"$TMP/deployments.tsv"
for v in "${VARIANT_LIST[@]}"; do
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "${PID_ORCH[$v]}" "${SPID[$v.agent]}" "${SPID[$v.model]}" \
    "${SPID[$v.resources]}" "${VENV[$v]}" >>"$TMP/deployments.tsv"
done
export RESULTS RECORD CMD BUILT_FROM HEAD_HERE LOAD_BEFORE LOAD_AFTER BUSY_BEFORE T_RUNS TASKS ROUNDS \
  FD_LIMIT ACCEPT_WARNINGS TMP VARIANTS IDLE_COST IDLE_SECONDS
CPU_MODEL=$(cpu_model)
export SECTION_FILE=$TMP/section.md CPU_MODEL
$PYTHON - <<'EOF'
import datetime, json, os, platform, statistics

env = os.environ
tmp = env["TMP"]
variants = env["VARIANTS"].split()
label = {"off": "off (default)", "off2": "off, 2nd deployment (A/A)", "on": "on, export every 10 s",
         "on_1s": "on, export every 1 s", "spans": "on + per_rollout spans"}
OURS = ("agent", "model", "resources", "orchestrator")

runs = []
for line in open(env["RESULTS"]):
    f = line.rstrip("\n").split("\t")
    r = dict(v=f[0], round=int(f[1]), c=int(f[2]), n=int(f[3]), limit=int(f[4]), repeats=int(f[5]),
             rc=int(f[6]), wall=float(f[7]), col_rss=int(f[8]), col_cpu=float(f[9]), busy=float(f[10]), procs={})
    for p in f[11:]:
        name, hwm, cpu = p.split(":")
        r["procs"][name] = (int(hwm), float(cpu))
    r["rps"] = r["n"] / r["wall"]
    # Our stack: the collector and the four processes of the deployment (not the receiver).
    r["cpu"] = r["col_cpu"] + sum(r["procs"][k][1] for k in OURS)
    r["cpu_k"] = r["cpu"] / r["n"] * 1000
    r["rss"] = r["col_rss"] + sum(r["procs"][k][0] for k in OURS)
    r["recv_cpu"] = r["procs"]["receiver"][1] if "receiver" in r["procs"] else None
    r["other"] = max(r["busy"] - r["cpu"] - (r["procs"].get("receiver", (0, 0.0))[1]), 0.0) / r["wall"]
    runs.append(r)

deploy = {}
for line in open(os.path.join(tmp, "deployments.tsv")):
    v, orch, agent, model, resources, venv = (line.rstrip("\n").split("\t") + [""])[:6]
    deploy[v] = dict(orchestrator=int(orch), agent=int(agent), model=int(model), resources=int(resources), env=venv)

# --- the exports every enabled deployment must have delivered -------------------------------
problems, export_notes, exports_per = [], [], {}
for v in variants:
    if v.startswith("off"):
        continue
    st = json.load(open(os.path.join(tmp, f"receiver_{v}.json")))["otlp"]
    inst = st.get("instances", {})
    mine = [r for r in runs if r["v"] == v]
    rollouts = sum(r["n"] for r in mine) + 1  # + the rollout sent by hand
    if st["requests"] == 0:
        problems.append(f"{v}: the receiver got no request")
    if st["undecodable"]:
        problems.append(f"{v}: {st['undecodable']} undecodable requests")
    by_pid = {int(e.get("process.pid", -1)): e for e in inst.values()}
    run_ids = {e.get("nemo.run.id") for e in inst.values()}
    if len(run_ids) != 1:
        problems.append(f"{v}: {len(run_ids)} distinct nemo.run.id values: {sorted(map(str, run_ids))}")
    per = {}
    for kind in OURS:
        e = by_pid.get(deploy[v][kind])
        if not e:
            problems.append(f"{v}: no export from the {kind} (pid {deploy[v][kind]})")
            continue
        per[kind] = e["requests"]
        if e["requests"] < 2:
            problems.append(f"{v}: only {e['requests']} export(s) from the {kind}")
    agent_last = by_pid.get(deploy[v]["agent"], {}).get("last", {})
    res_last = by_pid.get(deploy[v]["resources"], {}).get("last", {})
    orch_last = by_pid.get(deploy[v]["orchestrator"], {}).get("last", {})
    got = agent_last.get("gym.rollout.duration_ms")
    if got != rollouts:
        problems.append(f"{v}: the agent's last export counts {got} rollouts (gym.rollout.duration_ms), expected {rollouts}")
    got = res_last.get("gym.verify.duration_ms")
    if got != rollouts:
        problems.append(f"{v}: the resources server's last export counts {got} verifications, expected {rollouts}")
    # The HTTP server metrics: at least the inbound requests of every rollout (/run and the agent's
    # own /v1/responses; the model's two turns; /seed_session, /get_weather, /verify), more with
    # the readiness probes; nothing in flight once the servers stopped.
    for kind, per_rollout in (("agent", 2), ("model", 2), ("resources", 3)):
        last = by_pid.get(deploy[v][kind], {}).get("last", {})
        got = last.get("http.server.request.duration", 0)
        if got < per_rollout * rollouts:
            problems.append(f"{v}: the {kind}'s last export counts {got} HTTP requests, fewer than {per_rollout * rollouts}")
        if last.get("http.server.active_requests") != 0:
            problems.append(f"{v}: the {kind}'s last export has {last.get('http.server.active_requests')} active requests, not 0")
    for m in ("gym.server.memory.usage", "gym.server.memory.sampled_peak", "gym.server.processes",
              "gym.host.memory.usage", "gym.servers.active"):
        if m not in orch_last:
            problems.append(f"{v}: the orchestrator's last export has no {m}")
    collectors = [e for e in inst.values() if e.get("nemo.gym.server.name") == "rollout_collection"]
    if len(collectors) != len(mine):
        problems.append(f"{v}: exports from {len(collectors)} collector processes, expected one per run ({len(mine)})")
    connects = sum(e["last"].get("gym.http.connection_pool.connect_total", 0) for e in collectors)
    if connects != sum(r["n"] for r in mine):  # one acquisition per POST /run, none retried
        problems.append(f"{v}: the collectors' connect_total sums to {connects}, not their {sum(r['n'] for r in mine)} rollouts")
    known = set(deploy[v][k] for k in OURS) | {int(e.get("process.pid", -1)) for e in collectors}
    strays = [e for e in inst.values() if int(e.get("process.pid", -1)) not in known]
    if strays:
        problems.append(f"{v}: exports from {len(strays)} unexpected processes")
    exports_per[v] = (per, st["requests"], [e["requests"] for e in collectors])
    export_notes.append(
        f"{label[v]}: the receiver decoded {st['requests']:,} export requests ({st['undecodable']} undecodable) from "
        f"{len(inst)} processes, all with nemo.run.id `{next(iter(run_ids))}`: orchestrator {per.get('orchestrator', 0)}, "
        f"agent {per.get('agent', 0)}, model {per.get('model', 0)}, resources {per.get('resources', 0)} exports, and "
        f"{len(collectors)} `rollout_collection` processes (one per collector run) with "
        f"{min(e['requests'] for e in collectors) if collectors else 0}-{max(e['requests'] for e in collectors) if collectors else 0} each; "
        f"cumulative counts in the last exports: gym.rollout.duration_ms {agent_last.get('gym.rollout.duration_ms', 0):,.0f} and "
        f"gym.verify.duration_ms {res_last.get('gym.verify.duration_ms', 0):,.0f} (= the {rollouts:,} rollouts sent), "
        f"http.server.request.duration agent {agent_last.get('http.server.request.duration', 0):,.0f}, resources "
        f"{res_last.get('http.server.request.duration', 0):,.0f} with 0 active requests left, "
        f"collectors' connect_total {connects:,.0f}; memory gauges present: checked")
if problems:
    print("EXPORT CHECK FAILED (nothing recorded):")
    for p in problems:
        print("- " + p)
    raise SystemExit(1)

# --- tables ---------------------------------------------------------------------------------
def med(xs):
    return statistics.median(xs) if xs else float("nan")

def render(head, cells):
    w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    fmt = lambda cs: "| " + " | ".join(x.ljust(n) for x, n in zip(cs, w)) + " |"
    return "\n".join([fmt(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [fmt(c) for c in cells])

def pct(x):
    return f"{(x - 1) * 100:+.1f}%"

levels = sorted({r["c"] for r in runs})
group = {(v, c): [r for r in runs if r["v"] == v and r["c"] == c] for v in variants for c in levels}
summary = {}
for (v, c), rs in group.items():
    summary[(v, c)] = dict(rps=med([r["rps"] for r in rs]), cpu_k=med([r["cpu_k"] for r in rs]),
                           rss=max(r["rss"] for r in rs), other=med([r["other"] for r in rs]),
                           recv=med([r["recv_cpu"] for r in rs]) if rs[0]["recv_cpu"] is not None else None,
                           wall=med([r["wall"] for r in rs]), n=rs[0]["n"], runs=len(rs),
                           procs={k: med([r["procs"][k][1] / r["n"] * 1000 for r in rs]) for k in OURS},
                           col=med([r["col_cpu"] / r["n"] * 1000 for r in rs]),
                           rss_procs={k: max(r["procs"][k][0] for r in rs) for k in OURS},
                           col_rss=max(r["col_rss"] for r in rs))

def paired(v, c, key):  # variant / off, round by round
    off = {r["round"]: r for r in group[("off", c)]}
    return [r[key] / off[r["round"]][key] for r in group[(v, c)] if r["round"] in off]

head = ["telemetry", "concurrency", "runs x rollouts", "rollouts/s (median)", "vs off", "per-round vs off",
        "CPU s / 1000 rollouts (median)", "vs off", "per-round vs off", "peak RSS MB, all processes", "vs off",
        "receiver CPU s per run"]
cells = []
for c in levels:
    base = summary[("off", c)]
    for v in variants:
        s = summary[(v, c)]
        is_off = v == "off"
        cells.append([label[v], f"{c:,}", f"{s['runs']} x {s['n']:,}", f"{s['rps']:,.1f}",
                      "-" if is_off else pct(s["rps"] / base["rps"]),
                      "-" if is_off else ", ".join(pct(x) for x in paired(v, c, "rps")),
                      f"{s['cpu_k']:.3f}", "-" if is_off else pct(s["cpu_k"] / base["cpu_k"]),
                      "-" if is_off else ", ".join(pct(x) for x in paired(v, c, "cpu_k")),
                      f"{s['rss'] / 1024:,.1f}", "-" if is_off else pct(s["rss"] / base["rss"]),
                      "-" if s["recv"] is None else f"{s['recv']:.2f}"])
table = render(head, cells)

cpu_head = ["telemetry", "concurrency", "collector", "agent", "model", "resources", "orchestrator", "all"]
cpu_cells = [[label[v], f"{c:,}", f"{summary[(v, c)]['col']:.3f}"]
             + [f"{summary[(v, c)]['procs'][k]:.3f}" for k in OURS] + [f"{summary[(v, c)]['cpu_k']:.3f}"]
             for c in levels for v in variants]
cpu_table = render(cpu_head, cpu_cells)

rss_head = ["telemetry", "concurrency", "collector", "agent", "model", "resources", "orchestrator", "all (largest run)"]
rss_cells = [[label[v], f"{c:,}", f"{summary[(v, c)]['col_rss'] / 1024:.1f}"]
             + [f"{summary[(v, c)]['rss_procs'][k] / 1024:.1f}" for k in OURS] + [f"{summary[(v, c)]['rss'] / 1024:.1f}"]
             for c in levels for v in variants]
rss_table = render(rss_head, rss_cells)

round_head = ["order", "telemetry", "concurrency", "round", "rollouts", "--limit x --num-repeats", "wall s", "rollouts/s",
              "CPU s / 1000 rollouts", "other work, cores"]
round_cells = [[str(i + 1), label[r["v"]], f"{r['c']:,}", str(r["round"]), f"{r['n']:,}", f"{r['limit']} x {r['repeats']}",
                f"{r['wall']:.2f}", f"{r['rps']:,.1f}", f"{r['cpu_k']:.3f}", f"{r['other']:.2f}"]
               for i, r in enumerate(runs)]
round_table = render(round_head, round_cells)

notes = []
for c in levels:
    base = summary[("off", c)]
    for v in variants:
        if v == "off":
            continue
        s = summary[(v, c)]
        d = s["rps"] / base["rps"] - 1
        pr = paired(v, c, "rps")
        if v == "off2":
            notes.append(f"concurrency {c:,}, A/A control (a 2nd deployment with telemetry off, like off): rollouts/s "
                         f"{pct(s['rps'] / base['rps'])} vs off, per round {', '.join(pct(x) for x in pr)}; CPU per "
                         f"rollout {pct(s['cpu_k'] / base['cpu_k'])}; peak RSS {pct(s['rss'] / base['rss'])}: "
                         "differences of this size are the noise floor of the comparison, not telemetry")
            continue
        noisy = max(pr) - min(pr) > 0.06
        off_round = {r["round"]: r for r in group[("off", c)]}
        quiet = [r["rps"] / off_round[r["round"]]["rps"] for r in group[(v, c)]
                 if r["round"] in off_round and max(r["other"], off_round[r["round"]]["other"]) < 0.2]
        notes.append(f"concurrency {c:,}, {label[v]}: rollouts/s {pct(s['rps'] / base['rps'])} vs off "
                     f"(goal: less than 3% difference: {'MET' if abs(d) < 0.03 else 'NOT MET'}; per round "
                     f"{min(pr) * 100 - 100:+.1f}% to {max(pr) * 100 - 100:+.1f}%"
                     + ("; the round-to-round noise is larger than the goal" if noisy else "")
                     + (f"; in the rounds where both runs had less than 0.2 cores of other work: "
                        + ", ".join(pct(x) for x in quiet) if quiet and len(quiet) < len(pr) else "")
                     + f"); CPU per rollout {pct(s['cpu_k'] / base['cpu_k'])}; peak RSS {pct(s['rss'] / base['rss'])}")
others = [r["other"] for r in runs]
notes.append(f"other work on the machine during the runs (busy time not spent by the measured processes, "
             f"cores): median {med(others):.2f}, range {min(others):.2f}-{max(others):.2f} of 2")
idle = dict(kv.split(":") for kv in env["IDLE_COST"].split())
notes.append(f"idle cost of each deployment (all its processes and its receiver, nothing running, over "
             f"{env['IDLE_SECONDS']} s; while one variant runs, the idle others take this from it): "
             + ", ".join(f"{label[v]} {float(idle[v]):.3f} cores" for v in variants))
notes.append(f"our servers logged {env['ACCEPT_WARNINGS']} 'accept failed' warnings")

print()
print(round_table)
print()
print(table)
print()
print("CPU ms per rollout (= CPU s per 1000 rollouts) by process, medians:")
print(cpu_table)
print()
print("Peak RSS MB by process (largest over the rounds):")
print(rss_table)
print()
for n in notes + export_notes:
    print("- " + n)
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
envs = "; ".join(f"{v}: `{deploy[v]['env']}`" if deploy[v]["env"] else f"{v}: no telemetry variable"
                 for v in variants)
section = f"""<!-- telemetry_overhead.sh:begin (generated by bench/telemetry_overhead.sh; edits here are overwritten) -->
## Telemetry overhead (bench/telemetry_overhead.sh)

- Date: {now}
- Machine: nproc={os.cpu_count()}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}; load average
  (1/5/15 min) before the runs {env['LOAD_BEFORE']}, after them {env['LOAD_AFTER']}; CPU busy with other
  work in the 3 s before the runs: {env['BUSY_BEFORE']}%; the {len(runs)} runs took {env['T_RUNS']} s.
  Open-file limit {env['FD_LIMIT']}.
- Command (repo root): `{env['CMD']}`
- Build: {env['BUILT_FROM']}; this repo's HEAD is `{env['HEAD_HERE']}`.
- Workload: bench/e2e_load.sh's (ours only): {env['TASKS']} distinct `example_single_tool_call` tasks from
  `bench/e2e_data.py`, replay model, 7 HTTP exchanges per rollout. One deployment per variant,
  all up for the whole run: `gym env start --resources-server example_single_tool_call --model-type replay_model ++input_jsonl_fpath=<data>/weather.jsonl ++head_server.port=<free>`
  (orchestrator, agent, model, resources); per run a collector
  `gym eval run --no-serve ++head_server.port=<same> --input <data>/weather.jsonl --output <tmp>/rollouts.jsonl --agent example_single_tool_call_simple_agent --limit <L> --num-repeats <R> --concurrency <C> --disable-aggregation`
  with the same environment as its deployment. Variants: {envs}. Each enabled variant exports to
  its own `build/tests/support/gym_test_server --otlp-mode ok` (a fake OTLP collector that decodes
  every protobuf request; its CPU, median per run, is the "receiver" column, not counted in ours).
- Method: at each concurrency, {env['ROUNDS']} rounds; in each round every variant runs once, in the
  order of a Williams design (each variant in every position and after every other variant
  equally often over {len(variants) * (1 if len(variants) % 2 == 0 else 2)} rounds). Rollouts/s = rollouts / wall time of the collector command
  (start-up, final flush and writing the output included); CPU = user + system time of the
  collector (/usr/bin/time) and of the four processes of the deployment (/proc; servers with
  their process trees, the orchestrator alone: its memory sampler and exporter threads
  included), per 1000 rollouts; peak RSS = VmHWM reset before each run, summed over the same
  processes, the largest run. Medians over the rounds; "per-round vs off" compares each run with
  the run of `off` in the same round. Every output checked (rows, each (task, rollout) once,
  reward 1.0, recorded trajectory and usage, no failure rows).

{table}

CPU ms per rollout (= CPU s per 1000 rollouts) by process, medians over the rounds:

{cpu_table}

Peak RSS MB by process, the largest over the rounds:

{rss_table}

Every run, in the order they ran:

{round_table}

{chr(10).join('- ' + n for n in notes)}

Exports checked after the runs (the enabled deployments stopped with SIGTERM, so each process
flushed; every figure below comes from the receiver's decoding):
{chr(10).join('- ' + n for n in export_notes)}
<!-- telemetry_overhead.sh:end -->
"""
with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section telemetry_overhead.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
