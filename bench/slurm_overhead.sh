#!/usr/bin/env bash
# What the Slurm path costs (issue 16.4): one environment collected by `gym eval submit` with its
# servers spread over two nodes, on one node, and by a plain `gym eval run` on this machine.
#
# The cluster is the tests' own (tests/support/slurm_cluster.sh): two network-namespace nodes on
# this machine, so both "nodes" share its two cores. Spreading the servers cannot make anything
# faster here; the figures show the overhead of the Slurm path (srun steps, traffic between
# namespaces over a bridge instead of loopback), not a speed-up.
#
# Workload: mcqa with simple_agent and replay_model (no language model), the five example rows
# of environments/mcqa, ROLLOUTS rollouts (default 20000) at concurrency CONCURRENCY (default
# 64), --disable-aggregation. Per run: rollouts/s of the collection (the progress bar's final
# figure, which `gym eval run` prints the same way in all three variants) and the time from the
# command's start to the first row in the rollouts file (for submit: sbatch, scheduling, srun
# steps, readiness). ROUNDS rounds (default 3) alternate local, 1 node, 2 nodes; medians.
#
# Usage: [GYM_BUILD_DIR=build] bash bench/slurm_overhead.sh [--no-record]   (as root)
# Environment: ROUNDS, ROLLOUTS, CONCURRENCY, KEEP_TMP=1.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
PROG=slurm_overhead.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

RECORD=1
case ${1:-} in
  --no-record) RECORD=0 ;;
  -h | --help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (try --help)" ;;
esac

ROUNDS=${ROUNDS:-3}
ROLLOUTS=${ROLLOUTS:-20000}
CONCURRENCY=${CONCURRENCY:-64}
((ROLLOUTS % 5 == 0)) || die "ROLLOUTS must be a multiple of 5"
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
[[ -x $GYM ]] || die "gym binary not found: $GYM (build it, or set GYM_BUILD_DIR)"
[[ $(id -u) == 0 ]] || die "needs root (the cluster's nodes are network namespaces)"
CLUSTER_SCRIPT=$REPO_ROOT/tests/support/slurm_cluster.sh

bench_tmpdir gym-slurm-overhead
CLUSTER=
stop_cluster() { if [[ -n $CLUSTER ]]; then bash "$CLUSTER_SCRIPT" down "$CLUSTER" || true; fi; }
BENCH_CLEANUP_HOOK=stop_cluster
CLUSTER=$(bash "$CLUSTER_SCRIPT" up 2)
export SLURM_CONF=$CLUSTER/etc/slurm.conf

ARGS=(--resources-server mcqa --model-type replay_model --agent mcqa_simple_agent
  --input "$REPO_ROOT/environments/mcqa/data/example.jsonl" --num-repeats $((ROLLOUTS / 5))
  --concurrency "$CONCURRENCY" --disable-aggregation -q ++head_server.port=0)

# run VARIANT DIR: runs one collection into DIR; prints "rollouts/s<TAB>seconds to the first row".
run() {
  local variant=$1 dir=$2 start first="" pid log
  mkdir -p "$dir"
  start=$(now_ns)
  case $variant in
    local) (cd "$dir" && exec "$GYM" eval run "${ARGS[@]}" -o out/rollouts.jsonl) >"$dir/run.log" 2>&1 & ;;
    slurm1 | slurm2)
      (cd "$dir" && exec "$GYM" eval submit "${ARGS[@]}" -o out/rollouts.jsonl --nodes "${variant#slurm}" --wait) \
        >"$dir/run.log" 2>&1 & ;;
  esac
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [[ -z $first && -s $dir/out/rollouts.jsonl ]]; then first=$(now_ns); fi
    sleep 0.01
  done
  wait "$pid" || die "$variant: exit code $? (log: $dir/run.log)"
  [[ -n $first ]] || first=$(now_ns)
  local rows
  rows=$(wc -l <"$dir/out/rollouts.jsonl")
  ((rows == ROLLOUTS)) || die "$variant: $rows rows, not $ROLLOUTS (log: $dir/run.log)"
  log=$dir/run.log
  local rate
  rate=$(grep -ao 'Collecting rollouts: 100%[^]]*' "$log" | tail -1 | sed 's/.*, \([0-9.]*\) rollouts\/s/\1/')
  [[ -n $rate ]] || die "$variant: no final progress line (log: $log)"
  printf '%s\t%s\n' "$rate" "$(awk "BEGIN { print ($first - $start) / 1e9 }")"
}

RESULTS=$TMP/results.tsv
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
  for variant in local slurm1 slurm2; do
    m=$(run "$variant" "$TMP/$variant.r$round")
    printf '%s\t%s\n' "$variant" "$m" >>"$RESULTS"
    echo "$variant round $round: $(cut -f1 <<<"$m") rollouts/s, first row after $(cut -f2 <<<"$m") s"
  done
done

"$PYTHON" - "$RESULTS" "$TMP/section.md" "$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")" "$(cpu_model)" \
  "$ROLLOUTS" "$CONCURRENCY" <<'EOF'
import statistics, sys
from collections import defaultdict
results, section, build, cpu, rollouts, concurrency = sys.argv[1:]
runs = defaultdict(list)
for line in open(results):
    variant, rate, first = line.split("\t")
    runs[variant].append((float(rate), float(first)))
med = lambda v, i: statistics.median(r[i] for r in runs[v])
names = {"local": "`gym eval run` on this machine", "slurm1": "`gym eval submit --nodes 1`",
         "slurm2": "`gym eval submit --nodes 2` (servers on both nodes)"}
out = ["<!-- slurm_overhead.sh:begin -->", "## The Slurm path: `gym eval submit` on one and two nodes", "",
       "`bash bench/slurm_overhead.sh` (as root): mcqa with simple_agent and replay_model, "
       f"{rollouts} rollouts at concurrency {concurrency}, on the tests' own Slurm cluster",
       "(tests/support/slurm_cluster.sh: two network-namespace nodes on this 2-core machine, so both",
       "nodes share the same two cores: the point is the overhead of the Slurm path, not a",
       "speed-up). Rounds alternate the three variants; medians.", "",
       f"Build: {build}. CPU: {cpu}.", "",
       "| variant | rollouts/s | vs local | start to first row (s) |", "| --- | ---: | ---: | ---: |"]
for v in ("local", "slurm1", "slurm2"):
    out.append(f"| {names[v]} | {med(v, 0):.0f} | {med(v, 0) / med('local', 0):.2f}x | {med(v, 1):.2f} |")
out += ["", "Start to first row: from the command's start to the first line in the rollouts file; for",
        "submit that includes sbatch, scheduling, the srun steps and readiness over the bridge.",
        "<!-- slurm_overhead.sh:end -->", ""]
open(section, "w").write("\n".join(out))
print("\n".join(out))
EOF
if [[ $RECORD == 1 ]]; then record_section slurm_overhead.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
