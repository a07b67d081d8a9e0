#!/usr/bin/env bash
# End-to-end rollouts per second: gym-cpp vs a Python peer built on NeMo Gym's stack, side by side.
#
# Workload: `example_single_tool_call` with a replay model (no language model): every rollout is
# collector -> agent /run -> resources /seed_session -> agent /v1/responses (over HTTP, as
# simple_agent does) -> model /v1/responses (turn 1: a get_weather call) -> resources /get_weather
# -> model /v1/responses (turn 2: the final message) -> resources /verify (reward 1.0): 7 HTTP
# exchanges. The tasks are TASKS distinct synthetic cities (bench/e2e_data.py writes the input rows
# and the matching recorded rollouts, which replay_model loads beside the input file).
#
# Ours:  gym env start --resources-server example_single_tool_call --model-type replay_model
#          ++input_jsonl_fpath=<data>/weather.jsonl ++head_server.port=<free>          (4 processes)
#        gym eval run --no-serve ++head_server.port=<same> --input <data>/weather.jsonl
#          --output <tmp>/ours_c<C>/rollouts.jsonl --agent example_single_tool_call_simple_agent
#          --limit L --num-repeats R --concurrency C --disable-aggregation                (collector)
# Peer:  bench/e2e_peer.py: 3 uvicorn processes (resources_app, model_app, agent_app) and its
#        collector (`e2e_peer.py collect`, asyncio.Semaphore(C) around POST /run).
#
# At each concurrency of LEVELS (default 1 64 1024), ROUNDS times (default 3), ours and then the
# peer run their share of rollouts (ours about 20,000 in all; the peer fewer, enough for a steady
# rate); both deployments stay up for the whole run, the idle one costs nothing. Interleaving the
# two in rounds puts both under the same conditions on a shared machine, where the speed of either
# varies by tens of percent from minute to minute. Measured per run: wall time of the
# collector command (start to exit, so start-up and writing the output are included) -> rollouts/s;
# peak RSS (VmHWM) of every process, reset before each run (/proc/PID/clear_refs), summed over each
# server's process tree (the collector's from /usr/bin/time); CPU time of every process. Every
# output is checked: the expected number of rows, each (task, rollout) once, reward 1.0, the
# recorded trajectory (function_call, function_call_output, message) and usage, no failure rows.
# Then ours alone at BIG_CONCURRENCY (default 16384) with BIG_ROLLOUTS (default 16384) rollouts,
# all in flight at once (the collector's per-host pool limit is raised to the concurrency;
# aggregation on), which must finish with exit code 0 and no failure rows.
#
# Prints a table with the ratios and records it in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] bash bench/e2e_load.sh [--no-record] [--no-peer] [--no-big]
#
# Environment:
#   GYM_BUILD_DIR    build dir holding src/cli/gym (default: build; relative to the repo root)
#   TASKS            distinct tasks generated (default 2048)
#   LEVELS           concurrencies compared (default "1 64 1024")
#   ROUNDS           rounds of ours-then-peer at each level (default 3)
#   OURS_ROLLOUTS    rollouts of ours per level and round, "C:N ..." (default "1:512 64:3072 1024:3072");
#                    run as --limit L --num-repeats R with L * R = N, L <= TASKS, R as small as
#                    possible
#   PEER_ROLLOUTS    the same for the peer (default "1:256 64:1024 1024:2048")
#   BIG_CONCURRENCY  concurrency of the last run of ours (default 16384; 0 skips it, as --no-big)
#   BIG_ROLLOUTS     rollouts of that run (default 16384)
#   READY_TIMEOUT    seconds to wait for each deployment (default 60)
#   KEEP_TMP=1       keep the temp dir (data, outputs, logs)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=e2e_load.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

RECORD=1
PEER=1
BIG=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --no-record) RECORD=0 ;;
    --no-peer) PEER=0 ;;
    --no-big) BIG=0 ;;
    -h | --help)
      sed -n '2,47p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

TASKS=${TASKS:-2048}
LEVELS=${LEVELS:-1 64 1024}
ROUNDS=${ROUNDS:-3}
OURS_ROLLOUTS=${OURS_ROLLOUTS:-1:512 64:3072 1024:3072}
PEER_ROLLOUTS=${PEER_ROLLOUTS:-1:256 64:1024 1024:2048}
BIG_CONCURRENCY=${BIG_CONCURRENCY:-16384}
BIG_ROLLOUTS=${BIG_ROLLOUTS:-16384}
READY_TIMEOUT=${READY_TIMEOUT:-60}
[[ $BIG_CONCURRENCY == 0 ]] && BIG=0
for v in TASKS ROUNDS BIG_ROLLOUTS READY_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
[[ $BIG_CONCURRENCY =~ ^[0-9]+$ ]] || die "BIG_CONCURRENCY must be a non-negative integer"
AGENT=example_single_tool_call_simple_agent
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
TIME=/usr/bin/time

for c in $LEVELS; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || die "LEVELS must hold positive integers, got '$c'"
  split_count "$(rollouts_for "$OURS_ROLLOUTS" "$c")" >/dev/null
  [[ $PEER == 1 ]] && split_count "$(rollouts_for "$PEER_ROLLOUTS" "$c")" >/dev/null
done
[[ $BIG == 1 ]] && split_count "$BIG_ROLLOUTS" >/dev/null

# --- tools -------------------------------------------------------------------------------
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x $TIME ]] || die "$TIME not found (apt-get install time)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
$PYTHON -c 'import fastapi, uvicorn, uvloop, httptools, aiohttp, itsdangerous' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/uvloop/httptools/aiohttp/itsdangerous (bash scripts/setup.sh installs them)"
[[ -x $GYM ]] || die "gym binary not found: $GYM
  build it: cmake -S . -B ${GYM_BUILD_DIR:-build} -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ${GYM_BUILD_DIR:-build} --target gym
  or point GYM_BUILD_DIR at the build dir that has src/cli/gym"
$GYM eval run --help >/dev/null 2>&1 || die "$GYM has no 'eval run' (build a newer gym)"

bench_tmpdir gym-e2e-load
DATA=$TMP/data
$PYTHON "$BENCH_DIR/e2e_data.py" --out-dir "$DATA" --name weather --tasks "$TASKS" >"$TMP/data.log" ||
  die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
INPUT=$DATA/weather.jsonl

# The peer's pydantic work per rollout (no HTTP) on its pydantic 1 and, where an interpreter has
# it, on pydantic 2 (what NeMo Gym runs on), for the estimate in the report. Done now, while no
# server runs.
PEER_TIME=
PEER_TIME_V2=
PY2=
if [[ $PEER == 1 ]]; then
  PEER_TIME=$($PYTHON "$BENCH_DIR/e2e_peer.py" time "$INPUT" "$DATA/weather_rollouts.jsonl" 200 2>"$TMP/time_peer.err") ||
    { cat "$TMP/time_peer.err" >&2; die "bench/e2e_peer.py time failed"; }
  PY2=$(pydantic2_python)
  if [[ -n $PY2 ]]; then
    PEER_TIME_V2=$("$PY2" "$BENCH_DIR/e2e_peer.py" time "$INPUT" "$DATA/weather_rollouts.jsonl" 200 2>"$TMP/time_v2.err") ||
      { warn "timing the peer's models with $PY2 failed: $(tail -n 1 "$TMP/time_v2.err")"; PEER_TIME_V2=; }
  fi
fi

# --- open files: the largest run needs one socket per rollout in flight on each side of /run,
# plus the agent's downstream connections (at most the per-host pool limit, 1024, per server).
NEED=$((${LEVELS##* } + 4096))
[[ $BIG == 1 ]] && NEED=$((BIG_CONCURRENCY + 1024))
raise_fd_limit "$NEED"

# Telemetry stays at its default (off): drop any telemetry variables of the calling shell.
for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

read -r PORT_HEAD PORT_RES PORT_MODEL PORT_AGENT < <(free_ports 4)

# --- ours --------------------------------------------------------------------------------
START_CMD=("$GYM" env start --resources-server example_single_tool_call --model-type replay_model
  "++input_jsonl_fpath=$INPUT" "++head_server.port=$PORT_HEAD")
(cd "$TMP" && exec "${START_CMD[@]}") >"$TMP/ours_env.log" 2>&1 &
PID_ORCH=$!
PIDS+=("$PID_ORCH")

# --- the peer ------------------------------------------------------------------------------
declare -A PEER_PID
if [[ $PEER == 1 ]]; then
  export E2E_PEER_ROLLOUTS=$DATA/weather_rollouts.jsonl
  export E2E_PEER_RESOURCES_URL=http://127.0.0.1:$PORT_RES
  export E2E_PEER_MODEL_URL=http://127.0.0.1:$PORT_MODEL
  export E2E_PEER_AGENT_URL=http://127.0.0.1:$PORT_AGENT
  for spec in resources:$PORT_RES model:$PORT_MODEL agent:$PORT_AGENT; do
    name=${spec%%:*}
    # What NeMo Gym's run_webserver passes to uvicorn.run (keep-alive 30 s, no access log); uvloop
    # and httptools are what uvicorn picks when installed, named here to be explicit.
    $PYTHON -m uvicorn "e2e_peer:${name}_app" --factory --app-dir "$BENCH_DIR" --host 127.0.0.1 \
      --port "${spec#*:}" --loop uvloop --http httptools --timeout-keep-alive 30 --no-access-log \
      --log-level warning >"$TMP/peer_$name.log" 2>&1 &
    PEER_PID[$name]=$!
    PIDS+=("$!")
  done
fi

wait_log "$TMP/ours_env.log" 'All 3 / 3 servers ready!' "$PID_ORCH" "$READY_TIMEOUT" "gym env start"
declare -A OURS_PID OURS_URL
while IFS=$'\t' read -r kind pid url; do
  OURS_PID[$kind]=$pid
  OURS_URL[$kind]=$url
done < <(server_instances "$PORT_HEAD" "$TMP/server_instances.json")
[[ ${#OURS_PID[@]} == 3 ]] || die "/server_instances lists ${#OURS_PID[@]} servers, expected 3"
if [[ $PEER == 1 ]]; then
  for name in resources model agent; do
    port_var=PORT_${name^^}
    [[ $name == resources ]] && port_var=PORT_RES
    wait_http "http://127.0.0.1:${!port_var}/" "${PEER_PID[$name]}" "$READY_TIMEOUT" "peer $name server"
  done
fi

# One rollout through each deployment, by hand, before any load: 200 and reward 1.0.
sed -n 1p "$INPUT" >"$TMP/row.json"
check_run ours "${OURS_URL[agent]}" "$TMP/row.json"
[[ $PEER == 1 ]] && check_run peer "http://127.0.0.1:$PORT_AGENT" "$TMP/row.json"

# --- measurement ---------------------------------------------------------------------------
RESULTS=$TMP/results.tsv
: >"$RESULTS"

# run_level SIDE CONCURRENCY ROLLOUTS ROUND [extra gym overrides...]: one collector run, one line
# in RESULTS.
run_level() {
  local side=$1 c=$2 n=$3 round=$4
  shift 4
  local limit repeats dir out name specs=
  read -r limit repeats < <(split_count "$n")
  dir=$TMP/${side}_c${c}_r$round
  mkdir -p "$dir"
  out=$dir/rollouts.jsonl
  local -a cmd=()
  if [[ $side == peer ]]; then
    for name in resources model agent; do specs+=" $name:${PEER_PID[$name]}:tree"; done
    cmd=("$PYTHON" "$BENCH_DIR/e2e_peer.py" collect --agent-url "http://127.0.0.1:$PORT_AGENT" --input "$INPUT"
      --output "$out" --limit "$limit" --num-repeats "$repeats" --concurrency "$c")
  else
    for name in resources model agent; do specs+=" $name:${OURS_PID[$name]}:tree"; done
    # The orchestrator's tree holds the servers: count only its own process.
    specs+=" orchestrator:$PID_ORCH:self"
    cmd=("$GYM" eval run --no-serve "++head_server.port=$PORT_HEAD" --input "$INPUT" --output "$out"
      --agent "$AGENT" --limit "$limit" --num-repeats "$repeats" --concurrency "$c" "$@")
  fi
  echo "running ($side, concurrency $c, round $round, $n rollouts): ${cmd[*]}" >&2
  measure_run "$dir" "$side" "$specs" "${cmd[@]}"
  # side round conc rollouts limit repeats rc wall_s collector_rss collector_cpu_s machine_busy_s, then
  # label:hwm_kb:cpu_s per server
  echo "$side	$round	$c	$n	$limit	$repeats	$MEASURED" >>"$RESULTS"
  # The output must be complete and correct (checked after the measurement, not timed).
  check_rollouts "$out" "$n" "$DATA/weather_rollouts.jsonl" "${MEASURED%%	*}" >"$dir/check.txt" 2>&1 ||
    { echo "--- $dir/collector.log (tail)" >&2; tail -n 20 "$dir/collector.log" >&2
      die "$side at concurrency $c: $(cat "$dir/check.txt")"; }
  echo "  -> $(cat "$dir/check.txt")" >&2
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(cpu_busy_pct 3)
echo "CPU busy with other work in the 3 s before the runs: ${BUSY_BEFORE}% (load average $LOAD_BEFORE)"
[[ $BUSY_BEFORE -lt 20 ]] || warn "the machine is busy; figures will be noisy (ratios still compare)"

for c in $LEVELS; do
  for round in $(seq "$ROUNDS"); do
    run_level ours "$c" "$(rollouts_for "$OURS_ROLLOUTS" "$c")" "$round" --disable-aggregation
    [[ $PEER == 1 ]] && run_level peer "$c" "$(rollouts_for "$PEER_ROLLOUTS" "$c")" "$round"
  done
done
LOAD_AFTER_LEVELS=$(cut -d' ' -f1-3 /proc/loadavg)

# The peer is done: stop it so that the big run has the machine to itself.
if [[ $PEER == 1 ]]; then
  for name in resources model agent; do kill -TERM "${PEER_PID[$name]}" 2>/dev/null || true; done
fi

BIG_OVERRIDES=()
if [[ $BIG == 1 ]]; then
  # All rollouts in flight at once: the collector's pool may hold one connection per rollout to
  # the agent (its default per-host limit, 1024, would queue the rest).
  BIG_OVERRIDES=("++global_aiohttp_connector_limit_per_host=$BIG_CONCURRENCY")
  run_level ours_big "$BIG_CONCURRENCY" "$BIG_ROLLOUTS" 1 "${BIG_OVERRIDES[@]}"
fi
ACCEPT_WARNINGS=$(grep -c 'accept failed' "$TMP/ours_env.log" || true)

# --- report --------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR TASKS LEVELS ROUNDS OURS_ROLLOUTS PEER_ROLLOUTS BIG_CONCURRENCY BIG_ROLLOUTS; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v='$(printenv "$v")' "
done
CMD+="bash bench/e2e_load.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
HEAD_HERE=$(git -C "$REPO_ROOT" log -1 --format='%h' 2>/dev/null || echo unknown)
PEER_VERSIONS=$($PYTHON -c 'import aiohttp, fastapi, pydantic, starlette, uvicorn, uvloop, httptools, sys
print(f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, pydantic {pydantic.VERSION}, "
      f"starlette {starlette.__version__}, uvicorn {uvicorn.__version__}, uvloop {uvloop.__version__}, "
      f"httptools {httptools.__version__}, aiohttp {aiohttp.__version__}")')
export RESULTS RECORD CMD BUILT_FROM HEAD_HERE PEER_VERSIONS LOAD_BEFORE LOAD_AFTER_LEVELS BUSY_BEFORE \
  TASKS ROUNDS FD_LIMIT ACCEPT_WARNINGS BIG_OVERRIDES_TEXT="${BIG_OVERRIDES[*]}" PEER PEER_TIME PEER_TIME_V2 PY2
CPU_MODEL=$(cpu_model)
export SECTION_FILE=$TMP/section.md CPU_MODEL
$PYTHON - <<'EOF'
import datetime, os, platform

env = os.environ
runs = []
for line in open(env["RESULTS"]):
    f = line.rstrip("\n").split("\t")
    r = dict(side=f[0], round=int(f[1]), c=int(f[2]), n=int(f[3]), limit=int(f[4]), repeats=int(f[5]),
             rc=int(f[6]), wall=float(f[7]), col_rss=int(f[8]), col_cpu=float(f[9]), busy=float(f[10]), procs={})
    for p in f[11:]:
        label, hwm, cpu = p.split(":")
        r["procs"][label] = (int(hwm), float(cpu))
    runs.append(r)

def finish(r):
    r["rps"] = r["n"] / r["wall"]
    r["cpu_total"] = r["col_cpu"] + sum(c for _, c in r["procs"].values())
    r["rss_total"] = r["col_rss"] + sum(h for h, _ in r["procs"].values())
    # Cores used by everything else on the machine during the run (other users' work, kernel time
    # charged to no process), on average.
    r["other"] = max(r["busy"] - r["cpu_total"], 0.0) / r["wall"]
    return r

for r in runs:
    finish(r)

# Per side and concurrency, all rounds together: rollouts and wall time summed (so rollouts/s is
# total rollouts / total time), CPU summed, peak RSS the largest of the rounds per process.
agg = {}
for r in runs:
    a = agg.setdefault((r["side"], r["c"]), dict(side=r["side"], c=r["c"], n=0, wall=0.0, col_rss=0, col_cpu=0.0,
                                                 busy=0.0, procs={}, rounds=[], rc=0))
    a["n"] += r["n"]
    a["wall"] += r["wall"]
    a["col_rss"] = max(a["col_rss"], r["col_rss"])
    a["col_cpu"] += r["col_cpu"]
    a["busy"] += r["busy"]
    a["rc"] = a["rc"] or r["rc"]
    a["rounds"].append(r)
    for label, (hwm, cpu) in r["procs"].items():
        h0, c0 = a["procs"].get(label, (0, 0.0))
        a["procs"][label] = (max(h0, hwm), c0 + cpu)
for a in agg.values():
    finish(a)

label = {"ours": "ours (gym)", "peer": "peer (NeMo Gym stack)", "ours_big": "ours (gym)"}
def mb(kb):
    return f"{kb / 1024:,.1f}"

def render(head, cells):
    w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    fmt = lambda cs: "| " + " | ".join(x.ljust(n) for x, n in zip(cs, w)) + " |"
    return "\n".join([fmt(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [fmt(c) for c in cells])

order = sorted(agg.values(), key=lambda a: (a["side"] == "ours_big", a["c"], a["side"] != "ours"))
head = ["side", "concurrency", "rollouts", "wall s", "rollouts/s", "CPU ms/rollout", "cores used", "other work, cores",
        "peak RSS MB: collector", "agent", "model", "resources", "orchestrator", "all"]
cells = []
for r in order:
    p = r["procs"]
    cells.append([label[r["side"]], f"{r['c']:,}", f"{r['n']:,}", f"{r['wall']:.2f}", f"{r['rps']:,.1f}",
                  f"{r['cpu_total'] / r['n'] * 1000:.2f}", f"{r['cpu_total'] / r['wall']:.2f}", f"{r['other']:.2f}",
                  mb(r["col_rss"]), mb(p["agent"][0]), mb(p["model"][0]), mb(p["resources"][0]),
                  mb(p["orchestrator"][0]) if "orchestrator" in p else "-", mb(r["rss_total"])])
table = render(head, cells)

cpu_head = ["side", "concurrency", "collector", "agent", "model", "resources", "orchestrator"]
cpu_cells = []
for r in order:
    p = r["procs"]
    ms = lambda s: f"{s / r['n'] * 1000:.2f}"
    cpu_cells.append([label[r["side"]], f"{r['c']:,}", ms(r["col_cpu"]), ms(p["agent"][1]), ms(p["model"][1]),
                      ms(p["resources"][1]), ms(p["orchestrator"][1]) if "orchestrator" in p else "-"])
cpu_table = render(cpu_head, cpu_cells)

round_head = ["side", "concurrency", "round", "rollouts", "--limit x --num-repeats", "wall s", "rollouts/s",
              "CPU ms/rollout", "other work, cores"]
round_cells = [[label[r["side"]], f"{r['c']:,}", str(r["round"]), f"{r['n']:,}", f"{r['limit']} x {r['repeats']}",
                f"{r['wall']:.2f}", f"{r['rps']:,.1f}", f"{r['cpu_total'] / r['n'] * 1000:.2f}", f"{r['other']:.2f}"]
               for r in runs]
round_table = render(round_head, round_cells)

by = {(a["side"], a["c"]): a for a in agg.values()}
notes = []
levels = sorted({r["c"] for r in runs if r["side"] == "ours"})
for c in levels:
    o, p = by.get(("ours", c)), by.get(("peer", c))
    if o and p:
        ratio = o["rps"] / p["rps"]
        per_round = [ro["rps"] / rp["rps"] for ro, rp in zip(o["rounds"], p["rounds"])]
        goal = " (goal >= 30x: " + ("MET" if ratio >= 30 else "NOT MET") + ")" if c >= 64 else ""
        notes.append(f"concurrency {c}: rollouts/s ours/peer **{ratio:.1f}x**{goal}, per round "
                     + ", ".join(f"{x:.1f}x" for x in per_round)
                     + f"; CPU per rollout peer/ours {p['cpu_total'] / p['n'] / (o['cpu_total'] / o['n']):.1f}x; "
                     f"peak RSS of all processes peer/ours {p['rss_total'] / o['rss_total']:.1f}x")
# ESTIMATE of a peer on pydantic 2 and a current FastAPI (what NeMo Gym runs on): its CPU per
# rollout minus the pydantic work saved (pydantic 1 minus pydantic 2 time) and minus FastAPI 0.92's
# extra jsonable_encoder walk of response-model answers; rollouts/s scaled by the CPU ratio.
def ms_of(text, what):
    for line in (text or "").splitlines():
        if what in line:
            return float(line.split(" ms ")[0])
    return None
t1 = ms_of(env.get("PEER_TIME"), "pydantic ")
walk = ms_of(env.get("PEER_TIME"), "jsonable_encoder")
t2 = ms_of(env.get("PEER_TIME_V2"), "pydantic ")
saving = (t1 - t2 + (walk or 0.0)) if t1 is not None and t2 is not None else None
estimates = []
if saving is not None:
    for c in sorted({r["c"] for r in runs if r["side"] == "peer"}):
        o, p = by.get(("ours", c)), by.get(("peer", c))
        if not o:
            continue
        cpu = p["cpu_total"] / p["n"] * 1000
        est = max(cpu - saving, 0.001)
        estimates.append(f"concurrency {c}: the peer's {cpu:.1f} ms of CPU per rollout would be about {est:.1f} ms, "
                         f"its rollouts/s about {p['rps'] * cpu / est:,.1f}, and ours/it about "
                         f"{o['rps'] / (p['rps'] * cpu / est):.1f}x")
big = [r for r in runs if r["side"] == "ours_big"]
for r in big:
    notes.append(f"ours at concurrency {r['c']:,} ({r['n']:,} rollouts, all in flight at once; "
                 f"{env['BIG_OVERRIDES_TEXT']} for the collector; aggregation on): exit code {r['rc']}, "
                 f"0 failure rows, every output row checked: " + ("MET" if r["rc"] == 0 else "NOT MET"))
notes.append(f"our servers logged {env['ACCEPT_WARNINGS']} 'accept failed' warnings")

print()
print(round_table)
print()
print(table)
print()
print("CPU time per rollout (ms, user + system, each server's process tree):")
print(cpu_table)
pyd_lines = []
if t1 is not None:
    pyd_lines.append(f"the peer's pydantic work per rollout (bench/e2e_peer.py `time`: every validation, dump, copy and "
                     f"response-model check of its three servers for one rollout, no HTTP): {env['PEER_TIME'].splitlines()[0]} (the peer as run)"
                     + (f"; FastAPI's extra jsonable_encoder walk of the 5 response-model answers: {walk:.3f} ms" if walk else ""))
if t2 is not None:
    pyd_lines.append(f"the same work with pydantic 2, which NeMo Gym runs on: {env['PEER_TIME_V2']} ({t1 / t2:.1f}x less; "
                     f"{env['PY2']}, which has no FastAPI, so no peer is served on it)")
if estimates:
    pyd_lines.append("ESTIMATE, not a measurement, of a peer on pydantic 2 and a current FastAPI (CPU per rollout minus "
                     f"the {saving:.1f} ms saved; rollouts/s scaled by the CPU ratio; everything else as measured): "
                     + "; ".join(estimates))
print()
for n in notes + pyd_lines:
    print("- " + n.replace("**", ""))
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
ours_runs = [a for a in order if a["side"] == "ours"]
peer_runs = [a for a in order if a["side"] == "peer"]
desc_runs = lambda rs: ", ".join(f"{r['n']:,} at {r['c']:,}" for r in rs)
section = f"""<!-- e2e_load.sh:begin (generated by bench/e2e_load.sh; edits here are overwritten) -->
## End-to-end rollouts per second — ours (`gym env start` + `gym eval run`) vs a Python peer on NeMo Gym's stack

- Date: {now}
- Machine: nproc={os.cpu_count()}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}; load average
  (1/5/15 min) before the runs {env['LOAD_BEFORE']}, after the compared runs {env['LOAD_AFTER_LEVELS']}; CPU busy
  with other work in the 3 s before the runs: {env['BUSY_BEFORE']}%. Open-file limit {env['FD_LIMIT']}.
- Command (repo root): `{env['CMD']}`
- Ours: {env['BUILT_FROM']}; this repo's HEAD is `{env['HEAD_HERE']}`.
  Deployment: `gym env start --resources-server example_single_tool_call --model-type replay_model ++input_jsonl_fpath=<data>/weather.jsonl ++head_server.port=<free>`
  (4 processes: orchestrator with the head server, agent, model, resources; one process each,
  telemetry off as by default). Collector per run:
  `gym eval run --no-serve ++head_server.port=<same> --input <data>/weather.jsonl --output <tmp>/ours_c<C>/rollouts.jsonl --agent example_single_tool_call_simple_agent --limit <L> --num-repeats <R> --concurrency <C> --disable-aggregation`.
- Peer: `bench/e2e_peer.py` ({env['PEER_VERSIONS']}): three uvicorn processes
  (`python3 -m uvicorn e2e_peer:<resources|model|agent>_app --factory --loop uvloop --http httptools --timeout-keep-alive 30 --no-access-log`)
  with NeMo Gym's middleware (Starlette SessionMiddleware + session-id and exception `http`
  middlewares), pydantic models like NeMo Gym's, one aiohttp ClientSession per process with NeMo
  Gym's connector settings (limit 102400, limit_per_host 1024, keep-alive 15 s, TCP keepalive
  60/10/3, DummyCookieJar, no timeout), simple_agent's exchanges and cookies, a replay model
  answering by input-prefix lookup as ours does; collector `python3 bench/e2e_peer.py collect --concurrency <C> ...`
  (asyncio.Semaphore around `POST /run`, JSONL output). It runs on Debian's pydantic 1 / FastAPI
  0.92 / aiohttp 3.8 without orjson, where NeMo Gym runs on pydantic 2 and current releases, so it
  is slower than NeMo Gym itself; the last list below estimates by how much.
- Workload: {env['TASKS']} distinct `example_single_tool_call` tasks from `bench/e2e_data.py`
  (synthetic cities; each recorded rollout = `get_weather` call, its output, final message, with
  usage; replay_model loads `weather_rollouts.jsonl` beside the input file). Each rollout is 7 HTTP
  exchanges: /run, /seed_session, the agent's own /v1/responses, model x2, /get_weather, /verify.
  Rollouts, all rounds together: ours {desc_runs(ours_runs)} ({sum(a['n'] for a in ours_runs):,} in all){', then ' + desc_runs(big) if big else ''};
  peer {desc_runs(peer_runs) or 'not run'} (fewer: enough for a steady rate). At each concurrency
  {env['ROUNDS']} rounds of ours then the peer, so that both meet the same machine conditions; both
  deployments stay up during the compared runs (the idle one uses no CPU); the peer is stopped
  before the last run.
- Measured: rollouts/s = rollouts / wall time of the collector command (start-up and output
  included); CPU = user + system time of every process during the run (servers from /proc, the
  collector from /usr/bin/time), per rollout and as cores used on average (CPU s / wall s); other
  work = the machine's busy time (/proc/stat) minus that, per second of the run: other users'
  processes, plus kernel time charged to no process (softirq of the loopback traffic); peak RSS = VmHWM, reset before each run through
  /proc/PID/clear_refs, summed over each server's process tree (the orchestrator: its own process),
  the collector's from /usr/bin/time. After every run the output is checked: the expected number of
  rows, each (task, rollout) once, reward 1.0, the recorded trajectory and usage, no failure rows.

All rounds of each side and concurrency together (rollouts/s = all rollouts / all wall time; CPU
summed; peak RSS = the largest of the rounds, per process):

{table}

CPU time per rollout (ms, user + system), all rounds together:

{cpu_table}

Every run, in the order they ran:

{round_table}

{chr(10).join('- ' + n for n in notes)}

Python peer vs NeMo Gym's own stack:
{chr(10).join('- ' + n for n in pyd_lines) or '- (not measured)'}
<!-- e2e_load.sh:end -->
"""
with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section e2e_load.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
