#!/usr/bin/env bash
# Soak: TASKS x REPEATS rollouts (500,000 by default) at CONCURRENCY in flight through
# `gym eval run`, one of the servers it started SIGKILLed mid-run, then `--resume` to the end;
# the RSS and open file descriptors of gym and of every process it started sampled every second
# (issue 28, "Proof that it stays fixed").
#
# Workload: `example_single_tool_call` with a replay model (no language model, no network), TASKS
# distinct tasks (bench/e2e_data.py writes the input rows and the recorded rollouts replay_model
# loads beside them) x REPEATS repeats. Every rollout is 7 HTTP exchanges (see bench/e2e_load.sh).
# Both phases run, in the temp dir,
#   gym eval run --resources-server example_single_tool_call --model-type replay_model
#     --agent example_single_tool_call_simple_agent --input <data>/weather.jsonl
#     --output <tmp>/out.jsonl --num-repeats REPEATS --concurrency CONCURRENCY
#     --disable-aggregation --json
# (no aggregate metrics: their one request holds every row and is measured by
# bench/resume_scale.sh; here it would only add a spike after the last rollout).
#   1. The fresh run. Once the rollouts file holds KILL_AT_PCT % of the rollouts, the KILL server
#      (resources, agent or model: its pid from the run's head server, GET /server_instances) gets
#      SIGKILL. Expected: gym stops within STOP_SECONDS, exit code 2, naming the server and printing
#      the command to run with --resume; the rows written stay.
#   2. The same command with --resume, to the end: exit code 0.
# Sampled every INTERVAL s during both phases (by a Python sampler reading /proc): VmRSS, VmHWM,
# threads and open fds (entries of /proc/PID/fd) of gym and of each of its descendants, and the
# rows in the rollouts file; CSV in <tmp>/samples.csv (kept with KEEP_TMP=1). A phase whose rows
# do not grow for STALL_SECONDS is a hang and fails the bench.
# Reported per role (gym = orchestrator + collector, agent, model, resources): RSS before the
# first row (servers up, run planned) and at 10 %, 50 % and 90 % of the rollouts (the sample where
# the rollouts file first holds that share; 10 % falls in phase 1, 50 % and 90 % in the resume),
# the largest sampled RSS (and when) and peak (VmHWM), the most open fds and threads.
# Flat: for each process, over its phase's dispatch (from its first new row to its last row, or to
# the kill), the largest RSS in the second half of that time (the medians are shown too) is at
# most the largest in the first half plus FLAT_MARGIN_PCT % (default 10) or FLAT_MARGIN_MB
# (default 8), whichever is more.
# Bounded: no process holds more fds than one connection per rollout in flight on each of its
# connection sets plus FD_MARGIN (default 64): gym CONCURRENCY (to the agent), the agent 5 x
# CONCURRENCY (from gym, its own /v1/responses in and out, to the model, to the resources server),
# the model and resources servers CONCURRENCY each. The verdict is printed; the figures matter.
# Checked at the end (exit 1 otherwise): the rollouts file has TASKS x REPEATS rows, each
# (task, rollout) of the materialized inputs exactly once, reward 1.0 on every row; every key of
# the failures file (failed rollouts of phase 1, which --resume runs again) has its row in the
# rollouts file; no server of either phase is left running.
#
# Prints the tables and records them in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] [TASKS=1000 REPEATS=500] bash bench/soak.sh [--no-record]
#        TASKS=100 REPEATS=200 bash bench/soak.sh --no-record     # a short run (20,000 rollouts)
#
# Environment:
#   GYM_BUILD_DIR   build dir holding src/cli/gym (default: build; relative to the repo root)
#   TASKS           distinct tasks (default 1000)
#   REPEATS         rollouts per task (default 500)
#   CONCURRENCY     rollouts in flight, --concurrency (default 1024)
#   KILL            the server killed in phase 1: resources, agent or model (default resources)
#   KILL_AT_PCT     share of the rollouts written when it is killed (default 40)
#   INTERVAL        seconds between samples (default 1)
#   STOP_SECONDS    the longest gym may take to stop after the kill (default 60)
#   STALL_SECONDS   the longest a phase may go without a new row (default 300)
#   FLAT_MARGIN_PCT, FLAT_MARGIN_MB, FD_MARGIN   the margins of the verdict (10, 8, 64)
#   KEEP_TMP=1      keep the temp dir (data, outputs, logs, samples.csv; about 3 KB a rollout)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=soak.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

bench_record_args "$@"

TASKS=${TASKS:-1000}
REPEATS=${REPEATS:-500}
CONCURRENCY=${CONCURRENCY:-1024}
KILL=${KILL:-resources}
KILL_AT_PCT=${KILL_AT_PCT:-40}
INTERVAL=${INTERVAL:-1}
STOP_SECONDS=${STOP_SECONDS:-60}
STALL_SECONDS=${STALL_SECONDS:-300}
FLAT_MARGIN_PCT=${FLAT_MARGIN_PCT:-10}
FLAT_MARGIN_MB=${FLAT_MARGIN_MB:-8}
FD_MARGIN=${FD_MARGIN:-64}
for v in TASKS REPEATS CONCURRENCY KILL_AT_PCT STOP_SECONDS STALL_SECONDS FLAT_MARGIN_PCT FLAT_MARGIN_MB FD_MARGIN; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
[[ $INTERVAL =~ ^[0-9]*\.?[0-9]+$ ]] || die "INTERVAL must be a number of seconds, got '$INTERVAL'"
((KILL_AT_PCT < 100)) || die "KILL_AT_PCT must be below 100, got $KILL_AT_PCT"
case $KILL in resources | agent | model) ;; *) die "KILL must be resources, agent or model, got '$KILL'" ;; esac
ROLLOUTS=$((TASKS * REPEATS))
KILL_ROWS=$((ROLLOUTS * KILL_AT_PCT / 100))
((KILL_ROWS > 0)) || die "KILL_AT_PCT % of $ROLLOUTS rollouts is no row"
AGENT=example_single_tool_call_simple_agent
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym

[[ -x $PYTHON ]] || die "$PYTHON not found"
command -v curl >/dev/null || die "curl not found"
[[ -x $GYM ]] || die "gym binary not found: $GYM
  build it: cmake --build ${GYM_BUILD_DIR:-build} --target gym, or point GYM_BUILD_DIR at the build dir that has src/cli/gym"

bench_tmpdir gym-soak
# About 2.7 KB per result, 0.6 KB per materialized row, the samples, plus a margin.
NEED_KB=$((ROLLOUTS * 35 / 10 + 1024 * 1024))
AVAIL_KB=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
((AVAIL_KB > NEED_KB)) || die "$TMP has $((AVAIL_KB / 1024)) MB free; the files need about $((NEED_KB / 1024)) MB (set TMPDIR, or lower TASKS/REPEATS)"

for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_* | NEMO_GYM_MAX_ROLLOUT_ATTEMPTS) unset "$v" ;; esac
done

DATA=$TMP/data
$PYTHON "$BENCH_DIR/e2e_data.py" --out-dir "$DATA" --name weather --tasks "$TASKS" >"$TMP/data.log" ||
  die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
INPUT=$DATA/weather.jsonl
OUT=$TMP/out.jsonl
GYM_ARGS=(eval run --resources-server example_single_tool_call --model-type replay_model
  --agent "$AGENT" --input "$INPUT" --output "$OUT" --num-repeats "$REPEATS"
  --concurrency "$CONCURRENCY" --disable-aggregation --json)

# --- the sampler: one CSV line per process and sample ---------------------------------------
SAMPLES=$TMP/samples.csv
echo "t_s,phase,rows,pid,name,rss_kb,hwm_kb,threads,fds" >"$SAMPLES"
cat >"$TMP/sampler.py" <<'EOF'
import os, sys, time

# sampler.py CSV PHASE ROOT_PID ROLLOUTS STATUS INTERVAL T0_NS: samples ROOT_PID and its
# descendants every INTERVAL s until ROOT_PID is gone; STATUS holds the latest row count.
csv_path, phase, root, rollouts, status, interval, t0 = sys.argv[1:]
root, interval, t0 = int(root), float(interval), int(t0)

def tree(pid):
    out = [pid]
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                for c in f.read().split():
                    out += tree(int(c))
    except OSError:
        pass
    return out

def name_of(pid):
    # The server's instance name; None while a child is not a server yet (forked, not exec'd).
    if pid == root:
        return "gym"
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"NEMO_GYM_CONFIG_PATH="):
                    return kv.split(b"=", 1)[1].decode(errors="replace")
    except OSError:
        pass
    return None

names, rows, offset = {}, 0, 0

def count_rows():
    # Counts the lines appended since the last call; starts over when the file got shorter.
    global rows, offset
    try:
        size = os.stat(rollouts).st_size
    except OSError:
        rows, offset = 0, 0
        return
    if size < offset:
        rows, offset = 0, 0
    with open(rollouts, "rb") as f:
        f.seek(offset)
        while chunk := f.read(1 << 22):
            rows += chunk.count(b"\n")
            offset += len(chunk)

with open(csv_path, "a") as out:
    next_t = time.monotonic()
    while True:
        alive = os.path.exists(f"/proc/{root}")
        count_rows()
        t = (time.time_ns() - t0) / 1e9
        for pid in tree(root) if alive else []:
            try:
                with open(f"/proc/{pid}/status") as f:
                    st = dict(line.split(":", 1) for line in f if ":" in line)
                if names.get(pid) is None:
                    names[pid] = name_of(pid)
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except (OSError, ValueError):
                continue  # gone meanwhile
            if "VmRSS" not in st:
                continue  # a zombie
            kb = lambda k: st.get(k, "0 kB").split()[0]
            out.write(f"{t:.2f},{phase},{rows},{pid},{names[pid] or '?'},{kb('VmRSS')},{kb('VmHWM')},"
                      f"{st['Threads'].strip()},{fds}\n")
        out.flush()
        with open(status + ".new", "w") as f:
            f.write(f"{rows}\n")
        os.replace(status + ".new", status)
        if not alive:
            break
        next_t += interval
        time.sleep(max(0.0, next_t - time.monotonic()))
EOF

# server_roles HEAD_PORT PHASE: GET /server_instances of the run's head server; appends
# "phase<TAB>pid<TAB>role<TAB>instance" lines to ROLES once it lists the three servers.
ROLES=$TMP/roles.tsv
: >"$ROLES"
server_roles() {
  local port=$1 phase=$2
  for _ in $(seq 300); do
    if curl -sf --max-time 2 -o "$TMP/instances.json" "http://127.0.0.1:$port/server_instances" &&
      "$PYTHON" - "$TMP/instances.json" "$phase" >>"$ROLES" <<'EOF'; then
import json, sys
kind = {"resources_servers": "resources", "responses_api_agents": "agent", "responses_api_models": "model"}
inst = json.load(open(sys.argv[1]))
# Listed before it is spawned, a server has pid -1.
if sorted(kind[i["server_type"]] for i in inst) != ["agent", "model", "resources"] or \
        any(int(i["pid"]) <= 0 for i in inst):
    sys.exit(1)
for i in inst:
    print(sys.argv[2], i["pid"], kind[i["server_type"]], i["config_path"], sep="\t")
EOF
      return 0
    fi
    sleep 0.1
  done
  die "phase $phase: the head server on port $port did not list the three servers with their pids"
}

# run_phase PHASE [flags]: runs gym eval run (its stdout, the --json summary, in
# TMP/phaseN.json; stderr in TMP/phaseN.log) with the sampler beside it. Phase 1 kills the KILL
# server at KILL_ROWS rows. Sets PHASE_RC and the PN_* timings (ns) and counts.
SOAK_T0=$(now_ns)
run_phase() {
  local phase=$1 log=$TMP/phase$1.log status=$TMP/phase$1.rows rows=0 last_rows=-1 last_change
  local gym_pid sampler_pid port="" roles_done=0 victim="" t_kill="" t_plan="" t_first="" start_rows
  shift
  start_rows=$( [[ -f $OUT ]] && wc -l <"$OUT" || echo 0)
  local t0
  t0=$(now_ns)
  (cd "$TMP" && exec "$GYM" "${GYM_ARGS[@]}" "$@") >"$TMP/phase$phase.json" 2>"$log" &
  gym_pid=$!
  PIDS+=("$gym_pid")
  printf '%s\t%s\tgym\tgym\n' "$phase" "$gym_pid" >>"$ROLES"
  "$PYTHON" "$TMP/sampler.py" "$SAMPLES" "$phase" "$gym_pid" "$OUT" "$status" "$INTERVAL" "$SOAK_T0" &
  sampler_pid=$!
  PIDS+=("$sampler_pid")
  last_change=$(now_ns)
  while kill -0 "$gym_pid" 2>/dev/null; do
    if [[ -z $port ]]; then
      port=$(sed -n 's|.*Head server at http://[^:]*:\([0-9]*\).*|\1|p' "$log" | head -n 1)
    fi
    if [[ -n $port && $roles_done == 0 ]]; then
      server_roles "$port" "$phase"
      roles_done=1
      victim=$(awk -F'\t' -v p="$phase" -v k="$KILL" '$1 == p && $3 == k { print $2 }' "$ROLES")
      echo "phase $phase: gym pid $gym_pid, head server port $port; servers: $(awk -F'\t' -v p="$phase" '$1 == p && $3 != "gym" { printf "%s %s (%s)  ", $3, $2, $4 }' "$ROLES")" >&2
    fi
    [[ -f $status ]] && rows=$(cat "$status")
    if ((rows != last_rows)); then
      last_rows=$rows
      last_change=$(now_ns)
      [[ -z $t_first ]] && ((rows > start_rows)) && t_first=$(now_ns)
    fi
    if [[ -z $t_plan ]] && grep -q 'rollouts that still need to be run\|Querying with' "$log" 2>/dev/null; then
      t_plan=$(now_ns)
    fi
    if [[ $phase == 1 && -z $t_kill && -n $victim ]] && ((rows >= KILL_ROWS)); then
      kill -KILL "$victim" || die "phase 1: cannot kill the $KILL server (pid $victim)"
      t_kill=$(now_ns)
      P1_KILL_ROWS=$rows
      echo "phase 1: SIGKILL to the $KILL server (pid $victim) at $rows rows" >&2
    fi
    if [[ -n $t_kill ]] && (($(now_ns) - t_kill > STOP_SECONDS * 1000000000)); then
      tail -n 30 "$log" >&2
      die "phase 1: gym (pid $gym_pid) still runs $STOP_SECONDS s after the $KILL server was killed (a hang; log: $log)"
    fi
    if (($(now_ns) - last_change > STALL_SECONDS * 1000000000)); then
      tail -n 30 "$log" >&2
      die "phase $phase: no new row for $STALL_SECONDS s at $rows rows (a hang; log: $log)"
    fi
    sleep 0.2
  done
  PHASE_RC=0
  wait "$gym_pid" || PHASE_RC=$?
  local t_end
  t_end=$(now_ns)
  wait "$sampler_pid" || die "phase $phase: the sampler failed"
  PIDS=()
  [[ $roles_done == 1 ]] || { tail -n 30 "$log" >&2; die "phase $phase: gym exited $PHASE_RC before its servers were listed (log: $log)"; }
  # Every server of the phase must be gone with gym.
  local pid left=""
  for _ in $(seq 50); do
    left=""
    for pid in $(awk -F'\t' -v p="$phase" '$1 == p && $3 != "gym" { print $2 }' "$ROLES"); do
      kill -0 "$pid" 2>/dev/null && left+=" $pid"
    done
    [[ -z $left ]] && break
    sleep 0.1
  done
  [[ -z $left ]] || die "phase $phase: servers left running after gym exited: pids$left"
  rows=$(wc -l <"$OUT")
  printf -v "P${phase}_T0" '%s' "$t0"
  printf -v "P${phase}_END" '%s' "$t_end"
  printf -v "P${phase}_PLAN" '%s' "${t_plan:-}"
  printf -v "P${phase}_FIRST" '%s' "${t_first:-}"
  printf -v "P${phase}_ROWS" '%s' "$rows"
  printf -v "P${phase}_START_ROWS" '%s' "$start_rows"
  [[ $phase == 1 ]] && P1_KILL=$t_kill
  echo "phase $phase: gym exited $PHASE_RC after $(((t_end - t0) / 1000000000)) s; the rollouts file holds $rows rows" >&2
}

echo "soak: $ROLLOUTS rollouts ($TASKS tasks x $REPEATS), $CONCURRENCY in flight; the $KILL server is killed at $KILL_ROWS rows; temp dir $TMP" >&2
P1_KILL=""
P1_KILL_ROWS=""
run_phase 1
[[ -n $P1_KILL ]] || die "phase 1 ended (exit $PHASE_RC, $P1_ROWS rows) before the $KILL server was killed"
P1_RC=$PHASE_RC
P1_FAILURES=$( [[ -f $TMP/out_failures.jsonl ]] && wc -l <"$TMP/out_failures.jsonl" || echo 0)
# What gym said when the server died: from the error line to the end, without the per-percent
# summaries and progress lines.
grep -vE '^(Collecting rollouts|[[:space:]]*-?[[:space:]]*[A-Za-z_]+: [0-9.]+$)' "$TMP/phase1.log" |
  sed -n '/error: server .* exited/,$p' | head -n 20 >"$TMP/phase1_stop.txt" || true
[[ -s $TMP/phase1_stop.txt ]] || grep -iE 'error|stopped|resume' "$TMP/phase1.log" | head -n 20 >"$TMP/phase1_stop.txt" || true
echo "phase 1: what gym said:" >&2
sed 's/^/  | /' "$TMP/phase1_stop.txt" >&2
[[ $P1_RC == 2 ]] || warn "phase 1: gym exited $P1_RC after the $KILL server was killed, not 2 (the deployment failed)"
grep -q -- '--resume' "$TMP/phase1_stop.txt" || warn "phase 1: gym printed no command with --resume"

run_phase 2 --resume
P2_RC=$PHASE_RC
[[ $P2_RC == 0 ]] || { tail -n 30 "$TMP/phase2.log" >&2; die "phase 2: gym eval run --resume exited $P2_RC (log: $TMP/phase2.log)"; }
P2_FAILURES=$( [[ -f $TMP/out_failures.jsonl ]] && wc -l <"$TMP/out_failures.jsonl" || echo 0)
grep -E '^ *- ' "$TMP/phase2.log" | head -n 8 >"$TMP/phase2_plan.txt" || true

# --- the rows: TASKS x REPEATS, each (task, rollout) of the materialized inputs once ---------
echo "checking $OUT ..." >&2
CHECK_OK=1
"$PYTHON" - "$OUT" "$ROLLOUTS" >"$TMP/check.txt" <<'EOF' || CHECK_OK=0
import json, os, re, sys
out, n = sys.argv[1], int(sys.argv[2])
stem = out[: -len(".jsonl")]
# The top-level keys come after the row's nested objects: the last match of each is the row's.
task = re.compile(rb'"_ng_task_index":(\d+)')
rollout = re.compile(rb'"_ng_rollout_index":(\d+)')
reward = re.compile(rb'"reward":([^,}]+)')
problems = []
expected = set()
with open(stem + "_materialized_inputs.jsonl", "rb") as f:
    for line in f:
        t, r = task.findall(line), rollout.findall(line)
        expected.add((int(t[-1]), int(r[-1])))
if len(expected) != n:
    problems.append(f"{len(expected)} distinct keys in the materialized inputs, expected {n}")
seen = {}
rows = bad_reward = 0
with open(out, "rb") as f:
    for line in f:
        rows += 1
        t, r, w = task.findall(line), rollout.findall(line), reward.findall(line)
        key = (int(t[-1]), int(r[-1])) if t and r else None
        seen[key] = seen.get(key, 0) + 1
        if not w or float(w[-1]) != 1.0:
            bad_reward += 1
twice = sorted(k for k, c in seen.items() if c > 1 and k is not None)
if None in seen:
    problems.append(f"{seen[None]} rows without _ng_task_index/_ng_rollout_index")
if twice:
    problems.append(f"{len(twice)} keys more than once, e.g. {twice[:5]}")
missing = sorted(expected - seen.keys())
if missing:
    problems.append(f"{len(missing)} keys missing, e.g. {missing[:5]}")
extra = sorted(k for k in seen.keys() - expected if k is not None)
if extra:
    problems.append(f"{len(extra)} keys not in the materialized inputs, e.g. {extra[:5]}")
if bad_reward:
    problems.append(f"{bad_reward} rows with a reward other than 1.0")
if rows != n:
    problems.append(f"{rows} rows, expected {n}")
nf = 0
if os.path.exists(stem + "_failures.jsonl"):
    unresolved = set()
    for line in open(stem + "_failures.jsonl", encoding="utf-8"):
        if line.strip():
            nf += 1
            row = json.loads(line)
            k = (row.get("_ng_task_index"), row.get("_ng_rollout_index"))
            if k not in seen:
                unresolved.add(k)
    if unresolved:
        problems.append(f"{len(unresolved)} failed keys without a row, e.g. {sorted(unresolved)[:5]}")
print("; ".join(problems) if problems else
      f"ok: {rows:,} rows, each (task, rollout) of the materialized inputs exactly once, all reward 1.0"
      + (f"; the {nf} failure rows' keys all have their row" if nf else "; no failure rows"))
sys.exit(1 if problems else 0)
EOF
cat "$TMP/check.txt" >&2

# --- report --------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR TASKS REPEATS CONCURRENCY KILL KILL_AT_PCT INTERVAL; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/soak.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
CPU_MODEL=$(cpu_model)
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
export SAMPLES ROLES RECORD CMD BUILT_FROM CPU_MODEL LOADAVG TASKS REPEATS CONCURRENCY ROLLOUTS KILL \
  KILL_AT_PCT INTERVAL FLAT_MARGIN_PCT FLAT_MARGIN_MB FD_MARGIN AGENT SOAK_T0 \
  P1_T0 P1_END P1_PLAN P1_FIRST P1_ROWS P1_START_ROWS P1_KILL P1_KILL_ROWS P1_RC P1_FAILURES \
  P2_T0 P2_END P2_PLAN P2_FIRST P2_ROWS P2_START_ROWS P2_RC P2_FAILURES CHECK_OK
export CHECK_FILE=$TMP/check.txt STOP_FILE=$TMP/phase1_stop.txt PLAN_FILE=$TMP/phase2_plan.txt
export P1_JSON=$TMP/phase1.json P2_JSON=$TMP/phase2.json SECTION_FILE=$TMP/section.md TMPDIR_SHOWN=$TMP
FLAT_OK=1
$PYTHON - <<'EOF' || FLAT_OK=0
import csv, datetime, json, os, sys

env = os.environ
total = int(env["ROLLOUTS"])
t0 = int(env["SOAK_T0"])
sec = lambda ns: (int(ns) - t0) / 1e9 if ns else None
role_of = {}
for line in open(env["ROLES"]):
    phase, pid, role, inst = line.rstrip("\n").split("\t")
    role_of[(phase, pid)] = role
samples = []
for r in csv.DictReader(open(env["SAMPLES"])):
    role = role_of.get((r["phase"], r["pid"]), "other")
    samples.append(dict(t=float(r["t_s"]), phase=r["phase"], rows=int(r["rows"]), pid=r["pid"],
                        role=role, rss=int(r["rss_kb"]), hwm=int(r["hwm_kb"]),
                        threads=int(r["threads"]), fds=int(r["fds"])))
roles = ["gym", "agent", "model", "resources"]
roles += sorted({s["role"] for s in samples} - set(roles))
mb = lambda kb: f"{kb / 1024:,.1f}"

# RSS at 10 %, 50 %, 90 % of the rollouts: the role's first sample at which the file holds that
# share (the samples are in time order).
marks = {p: total * p / 100 for p in (10, 50, 90)}
def at(role, rows):
    v = next((s for s in samples if s["role"] == role and s["rows"] >= rows), None)
    return mb(v["rss"]) if v else "-"
# Before the first row: the role's last sample of phase 1 with an empty rollouts file (the
# servers are up, gym has planned the run).
def before_first(role):
    v = [s for s in samples if s["role"] == role and s["phase"] == "1" and s["rows"] == 0]
    return mb(v[-1]["rss"]) if v else "-"
head1 = ["process", "RSS before the first row (MB)", "at 10 %", "at 50 %", "at 90 %",
         "largest sampled RSS", "sampled at (rows, phase)", "peak (VmHWM)", "most open fds",
         "most threads"]
rows1 = []
for role in roles:
    ss = [s for s in samples if s["role"] == role]
    if not ss:
        continue
    top = max(ss, key=lambda s: s["rss"])
    rows1.append([role, before_first(role), at(role, marks[10]), at(role, marks[50]), at(role, marks[90]),
                  mb(top["rss"]), f"{top['rows']:,}, {top['phase']}", mb(max(s["hwm"] for s in ss)),
                  f"{max(s['fds'] for s in ss):,}", str(max(s["threads"] for s in ss))])

# Flatness per process over its phase's dispatch: first new row .. last row (phase 1: the kill).
windows = {}
for phase in ("1", "2"):
    start_rows = int(env[f"P{phase}_START_ROWS"])
    end = sec(env["P1_KILL"]) if phase == "1" else None
    ps = [s for s in samples if s["phase"] == phase]
    first = next((s["t"] for s in ps if s["rows"] > start_rows), None)
    final = max((s["rows"] for s in ps), default=0)
    last = next((s["t"] for s in ps if s["rows"] >= final), None)
    windows[phase] = (first, end if end is not None else last)
pct, floor_mb, fd_margin = int(env["FLAT_MARGIN_PCT"]), int(env["FLAT_MARGIN_MB"]), int(env["FD_MARGIN"])
# fds bounded: at most one connection per rollout in flight on each of a process's connection
# sets (gym: to the agent; agent: from gym, to itself and from itself (/v1/responses), to the
# model, to the resources server; model, resources: from the agent) plus FD_MARGIN.
conc = int(env["CONCURRENCY"])
fd_bound = {"gym": conc + fd_margin, "agent": 5 * conc + fd_margin, "model": conc + fd_margin,
            "resources": conc + fd_margin}
head2 = ["process", "phase", "pid", "window (s)", "samples", "RSS median, 1st half (MB)", "2nd half",
         "RSS max, 1st half (MB)", "2nd half", "growth of the max", "fds max, 1st half", "2nd half",
         "fds bound", "verdict"]
med = lambda v: sorted(v)[len(v) // 2]
rows2, all_flat = [], True
for phase in ("1", "2"):
    a, b = windows[phase]
    if a is None or b is None or b <= a:
        continue
    mid = (a + b) / 2
    for role in roles:
        for pid in sorted({s["pid"] for s in samples if s["phase"] == phase and s["role"] == role}):
            ss = [s for s in samples if s["pid"] == pid and s["phase"] == phase and a <= s["t"] <= b]
            h1 = [s for s in ss if s["t"] < mid]
            h2 = [s for s in ss if s["t"] >= mid]
            if not h1 or not h2:
                continue
            r1, r2 = max(s["rss"] for s in h1), max(s["rss"] for s in h2)
            f1, f2 = max(s["fds"] for s in h1), max(s["fds"] for s in h2)
            rss_ok = r2 <= r1 + max(r1 * pct / 100, floor_mb * 1024)
            bound = fd_bound.get(role)
            fd_ok = bound is None or max(f1, f2) <= bound
            verdict = ("flat" if rss_ok else "RSS grows (!)") + (", fds bounded" if fd_ok else ", fds over the bound (!)")
            all_flat = all_flat and rss_ok and fd_ok
            rows2.append([role, phase + (" (resume)" if phase == "2" else ""), pid,
                          f"{a - (sec(env[f'P{phase}_T0'])):.0f}-{b - sec(env[f'P{phase}_T0']):.0f}",
                          str(len(ss)), mb(med([s["rss"] for s in h1])), mb(med([s["rss"] for s in h2])),
                          mb(r1), mb(r2), f"{(r2 - r1) / 1024:+,.1f}", f"{f1:,}", f"{f2:,}",
                          f"{bound:,}" if bound else "-", verdict])

def table(head, rows, right_from=1):
    lines = ["| " + " | ".join(head) + " |",
             "| " + " | ".join("---" if i < right_from else "---:" for i in range(len(head))) + " |"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])

def dur(a, b):
    return f"{(int(b) - int(a)) / 1e9:,.1f}" if a and b else "-"
p1_s = (int(env["P1_END"]) - int(env["P1_T0"])) / 1e9
p2_s = (int(env["P2_END"]) - int(env["P2_T0"])) / 1e9
p1_new = int(env["P1_ROWS"])
p2_new = int(env["P2_ROWS"]) - int(env["P2_START_ROWS"])
kill_rows = int(env["P1_KILL_ROWS"])
summary = json.loads(open(env["P1_JSON"]).read().strip().splitlines()[-1]) if os.path.getsize(env["P1_JSON"]) else {}
summary2 = json.loads(open(env["P2_JSON"]).read().strip().splitlines()[-1]) if os.path.getsize(env["P2_JSON"]) else {}
stop = open(env["STOP_FILE"]).read().rstrip("\n")
plan = open(env["PLAN_FILE"]).read().rstrip("\n")
check = open(env["CHECK_FILE"]).read().strip()
r1 = summary.get("rollouts", {})
n = lambda v: f"{v:,}" if isinstance(v, int) else "?"
abandoned = n(r1["dispatched"] - r1["succeeded"] - r1["failed"]) if r1 else "?"
r2 = summary2.get("rollouts", {})

table1 = table(head1, rows1)
table2 = table(head2, rows2, right_from=3)
phases = f"""| phase | exit code | wall (s) | to the plan (s) | to the first new row (s) | new rows | rollouts/s | failure rows (file, cumulative) |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1: fresh run, {env["KILL"]} server killed at {kill_rows:,} rows | {env["P1_RC"]} | {p1_s:,.1f} | {dur(env["P1_T0"], env["P1_PLAN"])} | {dur(env["P1_T0"], env["P1_FIRST"])} | {p1_new:,} | {p1_new / p1_s:,.0f} | {int(env["P1_FAILURES"]):,} |
| 2: `--resume` | {env["P2_RC"]} | {p2_s:,.1f} | {dur(env["P2_T0"], env["P2_PLAN"])} | {dur(env["P2_T0"], env["P2_FIRST"])} | {p2_new:,} | {p2_new / p2_s:,.0f} | {int(env["P2_FAILURES"]):,} |
| both | | {p1_s + p2_s:,.1f} | | | {p1_new + p2_new:,} | {(p1_new + p2_new) / (p1_s + p2_s):,.0f} | |"""
kill_to_exit = (int(env["P1_END"]) - int(env["P1_KILL"])) / 1e9
# gym's RSS before a phase's first new row: what planning the run holds. Said when it is most of
# gym's largest RSS.
gym_note = ""
gs = [s for s in samples if s["role"] == "gym"]
if gs:
    top = max(gs, key=lambda s: s["rss"])
    ph = top["phase"]
    start_rows = int(env[f"P{ph}_START_ROWS"])
    before = [s for s in gs if s["phase"] == ph and s["rows"] == start_rows]
    if before and before[-1]["rss"] >= 0.9 * top["rss"]:
        left = total - start_rows
        gym_note = (f" gym's RSS before the first new row of phase {ph} was {mb(before[-1]['rss'])} MB"
                    f" with {left:,} rollouts to run ({before[-1]['rss'] / left:.2f} KB a rollout; its"
                    f" largest {mb(top['rss'])} MB): the rows to dispatch are expanded and held in"
                    " memory (`Plan::rows`, src/rollouts/plan.h), and the RSS falls as they are"
                    " dispatched.")
verdict = ("flat and bounded: no process's RSS grew beyond the margin in the second half of its"
           " phase, and no process held more fds than its bound" if all_flat else
           "NOT flat or not bounded: see the rows marked (!)")
print("\n" + phases + "\n\n" + table1 + "\n\n" + table2 + "\n\n" + verdict + gym_note + "\n" + check)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
stop_block = "\n".join("    " + l for l in stop.splitlines()) or "    (nothing)"
plan_block = "\n".join("    " + l for l in plan.splitlines()) or "    (nothing)"
section = f"""<!-- soak.sh:begin (generated by bench/soak.sh; edits here are overwritten) -->
## Soak: {total:,} rollouts, a server killed mid-run, resume (`bench/soak.sh`)

`{env["CMD"]}` ({now}; nproc={os.cpu_count()}, CPU: {env["CPU_MODEL"]}; load average at the end
{env["LOADAVG"]}). Build: {env["BUILT_FROM"]}.

`example_single_tool_call` with the replay model, {int(env["TASKS"]):,} tasks x
{int(env["REPEATS"]):,} repeats = {total:,} rollouts, {int(env["CONCURRENCY"]):,} in flight:
`gym eval run --resources-server example_single_tool_call --model-type replay_model --agent
{env["AGENT"]} --input <data>/weather.jsonl --output <tmp>/out.jsonl --num-repeats {env["REPEATS"]}
--concurrency {env["CONCURRENCY"]} --disable-aggregation --json` (gym starts the agent, model and
resources servers). When the rollouts file held {kill_rows:,} rows ({env["KILL_AT_PCT"]} %), the
{env["KILL"]} server got SIGKILL; then the same command with `--resume` ran to the end. Every
{env["INTERVAL"]} s a sampler read VmRSS, VmHWM, threads and open fds (`/proc/PID/fd`) of gym and
each process it started, and the rows in the rollouts file.

{phases}

Phase 1: gym exited {kill_to_exit:.1f} s after the kill with code {env["P1_RC"]}
({n(r1.get("succeeded"))} rollouts succeeded, {n(r1.get("failed"))} failed,
{n(r1.get("dispatched"))} dispatched: {abandoned} in flight abandoned, not recorded as failures; the
rollouts file grew from {kill_rows:,} rows at the kill (as sampled just before it) to {p1_new:,}; stop
reason: {summary.get("stop_reason")}). It said:

{stop_block}

Phase 2, the resume plan:

{plan_block}

Memory and descriptors per process (MB; before the first row = the last sample of phase 1 with
an empty rollouts file, the servers up and the run planned; 10 %, 50 %, 90 % = the first sample
at which the rollouts file held that share of the {total:,} rollouts: 10 % in phase 1, 50 % and
90 % in the resume; largest, peak and most over both phases):

{table1}

Flat or not, per process over its phase's dispatch (from its first new row to the kill, or to its
last row), split at half time: flat when the second half's largest RSS is at most the first
half's plus {pct} % or {floor_mb} MB, whichever is more; fds bounded when they never exceed one
connection per rollout in flight on each connection set of the process, plus {fd_margin} (gym: to the
agent, {conc:,} + {fd_margin}; the agent: from gym, its own `/v1/responses` calls in and out, to the
model, to the resources server, 5 x {conc:,} + {fd_margin}; the model and resources servers: from the
agent, {conc:,} + {fd_margin}).

{table2}

Verdict: {verdict}.{gym_note} Rows: {check}.
<!-- soak.sh:end -->
"""
open(env["SECTION_FILE"], "w").write(section)
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
sys.exit(0 if all_flat else 1)
EOF
[[ $CHECK_OK == 1 ]] || die "the rows are wrong: $(cat "$TMP/check.txt")"
[[ $RECORD == 1 ]] && record_section soak.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"
[[ $FLAT_OK == 1 ]] || warn "RSS or fds not flat (see above); the samples: $SAMPLES (KEEP_TMP=1 keeps them)"
exit 0
