#!/usr/bin/env bash
# An external Python resources server vs the same environment built in (issue 15.6): what
# running a NeMo Gym-style Python environment under gym-cpp costs, and what porting it to C++
# buys.
#
# Workload: environments/python_example (FastAPI, started from its folder as an external server)
# and environments/calculator (its C++ port, same routes, bodies and rewards), each in its own
# `gym env start` with simple_agent and replay_model (no language model), replaying the five
# example rows of the folder (about 1.4 tool calls and 3.8 resources-server requests per rollout:
# /seed_session, /calculate, /verify). Collector: `gym eval run --no-serve --input
# <env>/data/example.jsonl --num-repeats R --concurrency C --disable-aggregation`.
#
# At each concurrency of LEVELS (default "1 64"), ROUNDS times (default 3), the Python
# deployment and then the C++ one collect ROLLOUTS_<C> rollouts (defaults 500 and 3000; the same
# for both). Measured per run (bench/lib.sh measure_run): wall time of the collector -> rollouts/s;
# CPU time of the resources server's process tree, of our other processes (agent, model,
# collector) and of the machine. Every run is checked: the expected number of rows, no failure
# rows, rewards 1, 1, 0, 1, 1 by task. Prints a table and records it in bench/RESULTS.md.
#
# Usage: [GYM_BUILD_DIR=build] bash bench/external_env_load.sh [--no-record]
# Environment: LEVELS, ROUNDS, ROLLOUTS_1, ROLLOUTS_64 (any ROLLOUTS_<C> of LEVELS; a multiple of
# 5), READY_TIMEOUT (default 60), KEEP_TMP=1.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
PROG=external_env_load.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

RECORD=1
case ${1:-} in
  --no-record) RECORD=0 ;;
  -h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (try --help)" ;;
esac

LEVELS=${LEVELS:-1 64}
ROUNDS=${ROUNDS:-3}
ROLLOUTS_1=${ROLLOUTS_1:-500}
ROLLOUTS_64=${ROLLOUTS_64:-3000}
READY_TIMEOUT=${READY_TIMEOUT:-60}
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
[[ -x $GYM ]] || die "gym binary not found: $GYM (build it, or set GYM_BUILD_DIR)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
$PYTHON -c 'import fastapi, uvicorn, yaml' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/yaml (bash scripts/setup.sh test installs them)"
# The external server's python3 is the first on PATH: make it the one with FastAPI.
export PATH="$(dirname "$PYTHON"):$PATH"

bench_tmpdir gym-external-env
declare -A HEAD
start_deployment() {  # ENV
  local env=$1 port
  port=$(free_ports 1)
  HEAD[$env]=$port
  "$GYM" env start --resources-server "$env" --model-type replay_model \
    "++input_jsonl_fpath=$REPO_ROOT/environments/$env/data/example.jsonl" \
    "++head_server.port=$port" >"$TMP/$env.deploy.log" 2>&1 &
  PIDS+=($!)
  wait_log "$TMP/$env.deploy.log" 'servers ready!' $! "$READY_TIMEOUT" "$env deployment"
}
for env in python_example calculator; do start_deployment "$env"; done

# label:pid:tree words for measure_run: the resources server, the agent, the model.
specs_of() {
  local kind pid url
  while IFS=$'\t' read -r kind pid url; do printf '%s:%s:tree ' "$kind" "$pid"; done \
    < <(server_instances "${HEAD[$1]}" "$TMP/$1.instances.json")
}

check_output() {  # OUT N RC
  "$PYTHON" - "$@" <<'EOF'
import json, os, sys
out, n, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
fail = out[:-6] + "_failures.jsonl"
nf = sum(1 for l in open(fail) if l.strip()) if os.path.exists(fail) else 0
want = [1.0, 1.0, 0.0, 1.0, 1.0]
bad = [r for r in rows if r["reward"] != want[r["_ng_task_index"]]]
problems = [p for p in [rc and f"exit code {rc}", len(rows) != n and f"{len(rows)} rows, not {n}",
                        nf and f"{nf} failure rows", bad and f"{len(bad)} rows with another reward"] if p]
print("; ".join(problems) if problems else "ok")
sys.exit(1 if problems else 0)
EOF
}

RESULTS=$TMP/results.tsv
: >"$RESULTS"
for c in $LEVELS; do
  var=ROLLOUTS_$c
  n=${!var:-$ROLLOUTS_64}
  ((n % 5 == 0)) || die "$var must be a multiple of 5"
  for round in $(seq "$ROUNDS"); do
    for env in python_example calculator; do
      dir=$TMP/$env.c$c.r$round
      mkdir -p "$dir"
      measure_run "$dir" "$env" "$(specs_of "$env")" \
        "$GYM" eval run --no-serve "++head_server.port=${HEAD[$env]}" \
        --input "$REPO_ROOT/environments/$env/data/example.jsonl" --agent "${env}_simple_agent" \
        --output "$dir/rollouts.jsonl" --num-repeats $((n / 5)) --concurrency "$c" \
        --disable-aggregation
      rc=${MEASURED%%$'\t'*}
      verdict=$(check_output "$dir/rollouts.jsonl" "$n" "$rc") ||
        die "$env at concurrency $c: $verdict (log: $dir/collector.log)"
      printf '%s\t%s\t%s\t%s\n' "$env" "$c" "$n" "$MEASURED" >>"$RESULTS"
      echo "$env c=$c round $round: $(cut -f2 <<<"$MEASURED") s for $n rollouts"
    done
  done
done

"$PYTHON" - "$RESULTS" "$TMP/section.md" "$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")" "$(cpu_model)" <<'EOF'
import statistics, sys
from collections import defaultdict
results, section, build, cpu = sys.argv[1:]
runs = defaultdict(list)
for line in open(results):
    env, c, n, rc, wall, col_rss, col_cpu, busy, *procs = line.rstrip("\n").split("\t")
    cpu_of = {p.split(":")[0]: float(p.split(":")[2]) for p in procs}
    n = int(n)
    runs[(env, int(c))].append({
        "rate": n / float(wall),
        "resources_ms": 1000 * cpu_of["resources"] / n,
        "ours_ms": 1000 * (cpu_of["agent"] + cpu_of["model"] + float(col_cpu)) / n,
        "machine_ms": 1000 * float(busy) / n,
    })
med = lambda env, c, k: statistics.median(r[k] for r in runs[(env, c)])
levels = sorted({c for _, c in runs})
out = ["<!-- external_env_load.sh:begin -->", "## External Python server vs the same environment built in", "",
       "`bash bench/external_env_load.sh`: `environments/python_example` (FastAPI, an external server",
       "started from its folder) and `environments/calculator` (its C++ port: same routes, bodies and",
       "rewards), each with simple_agent and replay_model under `gym env start`, collected by",
       "`gym eval run --no-serve` over the folder's five example rows; rounds alternate the two.",
       "Medians of the rounds; CPU per rollout in ms: the resources server's process tree, our other",
       "processes (agent + model + collector), the whole machine.", "",
       f"Build: {build}. CPU: {cpu}.", "",
       "| concurrency | environment | rollouts/s | resources server CPU/rollout | agent+model+collector CPU/rollout | machine CPU/rollout |",
       "| ---: | --- | ---: | ---: | ---: | ---: |"]
for c in levels:
    for env in ("python_example", "calculator"):
        out.append(f"| {c} | {env} | {med(env, c, 'rate'):.0f} | {med(env, c, 'resources_ms'):.3f} | "
                   f"{med(env, c, 'ours_ms'):.3f} | {med(env, c, 'machine_ms'):.3f} |")
out += ["", "Ratios (C++ port vs Python server):", ""]
for c in levels:
    out.append(f"- concurrency {c}: {med('calculator', c, 'rate') / med('python_example', c, 'rate'):.1f}x "
               f"the rollouts/s, {med('python_example', c, 'resources_ms') / med('calculator', c, 'resources_ms'):.1f}x less "
               f"resources-server CPU per rollout; our other processes: "
               f"{med('python_example', c, 'ours_ms'):.3f} vs {med('calculator', c, 'ours_ms'):.3f} ms per rollout")
out += ["", "An external server costs our side nothing extra when the CPU per rollout of agent, model and",
        "collector is the same with either server (it is the same code; only the peer differs).",
        "<!-- external_env_load.sh:end -->", ""]
open(section, "w").write("\n".join(out))
print("\n".join(out))
EOF
if [[ $RECORD == 1 ]]; then record_section external_env_load.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
