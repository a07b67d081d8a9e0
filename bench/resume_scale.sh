#!/usr/bin/env bash
# `gym eval run --resume` over a rollouts file of gigabytes: peak memory and time.
#
# Workload: `example_single_tool_call` with a replay model (no language model), TASKS distinct
# tasks (bench/e2e_data.py) x REPEATS repeats. The output files of a long run that stopped just
# before its end are generated (bench/resume_scale.sh's own Python below, no gym involved):
#   <out>_materialized_inputs.jsonl  every rollout, as `gym eval run --agent A --num-repeats R`
#                                    expands the input (agent_ref, _ng_task_index,
#                                    _ng_rollout_index);
#   <out>.jsonl                      a result for every rollout but the last LEFT, each the
#                                    recorded rollout of its task in compact JSON as the collector
#                                    writes it (about 2.6 KB a row: 1,048,576 rows by default,
#                                    about 2.7 GB).
# Then, in the same temp dir:
#   gym eval run --resources-server example_single_tool_call --model-type replay_model
#     --agent example_single_tool_call_simple_agent --input <data>/weather.jsonl
#     --output <tmp>/out.jsonl --num-repeats REPEATS ++http_max_request_body_bytes=1073741824
#     --resume [--disable-aggregation]
# (one /aggregate_metrics request carries every row, stripped: about 150 bytes a row, more than
# the servers' default limit of 64 MiB for a million rows)
# under /usr/bin/time -v, once with the aggregate metrics (the default: every row of the file is
# read back for /aggregate_metrics) and once with --disable-aggregation (the resume alone); the
# rollouts file is cut back to its generated size between the two. Measured: the peak RSS of the
# whole command (/usr/bin/time's "Maximum resident set size": the largest of gym and the servers
# it started), gym's own peak RSS (VmHWM of its process, read every 0.2 s), the time from the
# start to the resume plan ("- N rollouts that still need to be run"), to the first new row in
# the rollouts file, and to the end. Every run must exit 0 with TASKS x REPEATS rows, each
# (task, rollout) once.
#
# Prints a table and records it in bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] bash bench/resume_scale.sh [--no-record]
#
# Environment:
#   GYM_BUILD_DIR  build dir holding src/cli/gym (default: build; relative to the repo root)
#   TASKS          distinct tasks (default 2048)
#   REPEATS        rollouts per task (default 512)
#   LEFT           rollouts without a result, run by the resume (default 64; at most TASKS x REPEATS)
#   KEEP_TMP=1     keep the temp dir (data, outputs, logs; several GB)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=resume_scale.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

bench_record_args "$@"

TASKS=${TASKS:-2048}
REPEATS=${REPEATS:-512}
LEFT=${LEFT:-64}
for v in TASKS REPEATS LEFT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
ROLLOUTS=$((TASKS * REPEATS))
((LEFT <= ROLLOUTS)) || die "LEFT ($LEFT) is more than the $ROLLOUTS rollouts"
AGENT=example_single_tool_call_simple_agent
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
TIME=/usr/bin/time

[[ -x $TIME ]] || die "$TIME not found (apt-get install time, or bash scripts/setup.sh bench)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
[[ -x $GYM ]] || die "gym binary not found: $GYM
  build it: cmake --build ${GYM_BUILD_DIR:-build} --target gym, or point GYM_BUILD_DIR at the build dir that has src/cli/gym"

bench_tmpdir gym-resume-scale
# About 2.6 KB per result and 0.6 KB per materialized row, plus a margin.
NEED_KB=$((ROLLOUTS * 35 / 10 + 1024 * 1024))
AVAIL_KB=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
((AVAIL_KB > NEED_KB)) || die "$TMP has $((AVAIL_KB / 1024)) MB free; the files need about $((NEED_KB / 1024)) MB (set TMPDIR, or lower TASKS/REPEATS)"

for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

# --- the files of a long run that stopped LEFT rollouts before its end ---------------------
DATA=$TMP/data
$PYTHON "$BENCH_DIR/e2e_data.py" --out-dir "$DATA" --name weather --tasks "$TASKS" >"$TMP/data.log" ||
  die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
INPUT=$DATA/weather.jsonl
OUT=$TMP/out.jsonl
echo "generating $ROLLOUTS materialized rows and $((ROLLOUTS - LEFT)) results in $TMP ..." >&2
GEN_START=$(now_ns)
$PYTHON - "$INPUT" "$DATA/weather_rollouts.jsonl" "$OUT" "$REPEATS" "$LEFT" "$AGENT" <<'EOF'
import json, sys

input_path, recorded_path, out, repeats, left, agent = sys.argv[1:]
repeats, left = int(repeats), int(left)
stem = out[: -len(".jsonl")]
compact = dict(separators=(",", ":"), ensure_ascii=False)
agent_ref = json.dumps({"name": agent}, **compact)
inputs = [json.loads(line) for line in open(input_path, encoding="utf-8")]
# e2e_data.py writes one recorded rollout per task, in task order.
results = []
for line in open(recorded_path, encoding="utf-8"):
    r = json.loads(line)
    for k in ("_ng_task_index", "_ng_rollout_index", "agent_ref"):
        r.pop(k, None)
    results.append(json.dumps(r, **compact)[:-1])  # without its closing brace
assert len(results) == len(inputs)
total = len(inputs) * repeats
n = 0
with open(stem + "_materialized_inputs.jsonl", "w", encoding="utf-8") as mat, \
        open(out, "w", encoding="utf-8") as res:
    for task, row in enumerate(inputs):
        # What `gym eval run --agent A --num-repeats R` materializes: the row, agent_ref, indices.
        base = json.dumps(row, **compact)[:-1] + ',"agent_ref":' + agent_ref
        for rollout in range(repeats):
            ids = f',"_ng_task_index":{task},"_ng_rollout_index":{rollout}'
            mat.write(base + ids + "}\n")
            if n < total - left:
                res.write(results[task] + ids + ',"agent_ref":' + agent_ref + "}\n")
            n += 1
EOF
GEN_S=$(awk -v a="$GEN_START" -v b="$(now_ns)" 'BEGIN { printf "%.0f", (b - a) / 1e9 }')
ROLLOUTS_BYTES=$(stat -c %s "$OUT")
MATERIALIZED_BYTES=$(stat -c %s "$TMP/out_materialized_inputs.jsonl")
echo "generated in ${GEN_S} s: $OUT $((ROLLOUTS_BYTES / 1000000)) MB, materialized inputs $((MATERIALIZED_BYTES / 1000000)) MB" >&2

# check_output: TASKS x REPEATS rows in the rollouts file, each (task, rollout) once.
check_output() {
  "$PYTHON" - "$OUT" "$ROLLOUTS" <<'EOF'
import re, sys
out, n = sys.argv[1], int(sys.argv[2])
# The top-level keys come after the row's nested objects: the last match of each is the row's.
task = re.compile(rb'"_ng_task_index":(\d+)')
rollout = re.compile(rb'"_ng_rollout_index":(\d+)')
seen = set()
rows = 0
with open(out, "rb") as f:
    for line in f:
        rows += 1
        t, r = task.findall(line), rollout.findall(line)
        seen.add((t[-1], r[-1]) if t and r else None)
ok = rows == n and len(seen) == n and None not in seen
print(f"ok: {rows} rows, each (task, rollout) once" if ok else f"{rows} rows, {len(seen)} distinct keys, expected {n}")
sys.exit(0 if ok else 1)
EOF
}

# run_resume NAME [extra flags]: one measured resume; a tab-separated line in RESULTS.
RESULTS=$TMP/results.tsv
: >"$RESULTS"
run_resume() {
  local name=$1 dir=$TMP/$1 rc=0 t0 pid_time pid_gym="" hwm=0 v t_plan="" t_first="" t_end
  shift
  mkdir -p "$dir"
  rm -f "$TMP/out_failures.jsonl" "$TMP/out_aggregate_metrics.json"
  truncate -s "$ROLLOUTS_BYTES" "$OUT"
  sync
  t0=$(now_ns)
  (cd "$TMP" && exec "$TIME" -v -o "$dir/time.txt" "$GYM" eval run --resources-server example_single_tool_call \
    --model-type replay_model --agent "$AGENT" --input "$INPUT" --output "$OUT" \
    --num-repeats "$REPEATS" ++http_max_request_body_bytes=1073741824 --resume "$@") >"$dir/gym.log" 2>&1 &
  pid_time=$!
  PIDS+=("$pid_time")
  while kill -0 "$pid_time" 2>/dev/null; do
    [[ -z $pid_gym ]] && pid_gym=$(cat "/proc/$pid_time/task/$pid_time/children" 2>/dev/null | awk '{ print $1 }')
    if [[ -n $pid_gym ]]; then
      v=$(hwm_kb "$pid_gym")
      [[ -n $v ]] && hwm=$v
    fi
    if [[ -z $t_plan ]] && grep -q 'rollouts that still need to be run' "$dir/gym.log" 2>/dev/null; then
      t_plan=$(now_ns)
    fi
    if [[ -z $t_first ]] && (($(stat -c %s "$OUT") > ROLLOUTS_BYTES)); then t_first=$(now_ns); fi
    sleep 0.2
  done
  wait "$pid_time" || rc=$?
  PIDS=()
  t_end=$(now_ns)
  # Rows written in the last poll interval: the end is the bound.
  if [[ -z $t_first ]] && (($(stat -c %s "$OUT") > ROLLOUTS_BYTES)); then t_first=$t_end; fi
  [[ $rc == 0 ]] || { tail -n 30 "$dir/gym.log" >&2; die "$name: gym eval run --resume exited $rc (log: $dir/gym.log)"; }
  check_output >"$dir/check.txt" || die "$name: $(cat "$dir/check.txt")"
  grep -q "still need to be run" "$dir/gym.log" || die "$name: no resume summary in $dir/gym.log"
  if grep -q "WARNING" "$dir/gym.log"; then die "$name: $(grep WARNING "$dir/gym.log" | head -n 1)"; fi
  local max_rss
  max_rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$dir/time.txt")
  secs() { [[ -n $1 ]] && awk -v a="$t0" -v b="$1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }' || echo "-"; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$max_rss" "$hwm" "$(secs "$t_plan")" "$(secs "$t_first")" \
    "$(secs "$t_end")" "$(cat "$dir/check.txt")" >>"$RESULTS"
  echo "$name: peak RSS $((max_rss / 1024)) MB (gym alone $((hwm / 1024)) MB), plan $(secs "$t_plan") s, first new row $(secs "$t_first") s, end $(secs "$t_end") s" >&2
}

run_resume with_aggregation
run_resume resume_only --disable-aggregation

# --- report --------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR TASKS REPEATS LEFT; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/resume_scale.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
CPU_MODEL=$(cpu_model)
export RESULTS RECORD CMD BUILT_FROM CPU_MODEL TASKS REPEATS LEFT ROLLOUTS ROLLOUTS_BYTES MATERIALIZED_BYTES AGENT
export SECTION_FILE=$TMP/section.md
$PYTHON - <<'EOF'
import datetime, os

env = os.environ
rows = [line.rstrip("\n").split("\t") for line in open(env["RESULTS"]) if line.strip()]
size_gb = int(env["ROLLOUTS_BYTES"]) / 1e9
head = ["run", "peak RSS, gym + servers (MB)", "peak RSS, gym alone (MB)", "to the resume plan (s)",
        "to the first new row (s)", "whole command (s)"]
cells = [["`--resume`" if r[0] == "with_aggregation" else "`--resume --disable-aggregation`",
          f"{int(r[1]) / 1024:,.0f}", f"{int(r[2]) / 1024:,.0f}", r[3], r[4], r[5]] for r in rows]
table = "\n".join(["| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
                  + ["| " + " | ".join(c) + " |" for c in cells])
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
section = f"""<!-- resume_scale.sh:begin (generated by bench/resume_scale.sh; edits here are overwritten) -->
## `gym eval run --resume` over a rollouts file of {size_gb:.1f} GB

`{env["CMD"]}` ({now}; nproc={os.cpu_count()}, CPU: {env["CPU_MODEL"]}). Build: {env["BUILT_FROM"]}.

A long run that stopped {env["LEFT"]} rollouts before its end: `example_single_tool_call`,
{int(env["TASKS"]):,} tasks x {int(env["REPEATS"]):,} repeats = {int(env["ROLLOUTS"]):,} rollouts;
the rollouts file holds {int(env["ROLLOUTS"]) - int(env["LEFT"]):,} results
({int(env["ROLLOUTS_BYTES"]) / 1e9:.2f} GB, the recorded rollout of each task in compact JSON, about
{int(env["ROLLOUTS_BYTES"]) / (int(env["ROLLOUTS"]) - int(env["LEFT"])) / 1000:.1f} KB a row), the
materialized inputs every rollout ({int(env["MATERIALIZED_BYTES"]) / 1e9:.2f} GB). The resume runs
`gym eval run --resources-server example_single_tool_call --model-type replay_model --agent
{env["AGENT"]} --input <data>/weather.jsonl --output <tmp>/out.jsonl --num-repeats {env["REPEATS"]}
++http_max_request_body_bytes=1073741824 --resume` (the one `/aggregate_metrics` request of
every row, stripped, is larger than the servers' default limit of 64 MiB; servers started by the command, replay model) under `/usr/bin/time -v`: the peak RSS
of the command is the largest of gym and its servers (the agent and the resources server parse
the `/aggregate_metrics` body); gym alone is its process's VmHWM. Both runs end with exit code 0
and every (task, rollout) once in the rollouts file.

{table}

The resume itself (the second run) holds per rollout its key, a digest of its materialized row
and the offset of its line, whatever the size of the rows. What the first run adds is the
aggregate metrics: one `/aggregate_metrics` request per agent with every row (stripped of its
response and create params, about 150 bytes a row) and an answer whose `group_level_metrics` list
every rollout (`rollout_infos`), parsed by gym and rendered into the metrics file; both grow with
the number of rollouts, in gym and in the agent and resources servers that parse the request.

Before (issue 28, the resume that read every output file whole into parsed rows): a rollouts
file of 1.29 GB peaked at 9.36 GB RSS and took about 90 s before the first new rollout.
<!-- resume_scale.sh:end -->
"""
print(table)
open(env["SECTION_FILE"], "w").write(section)
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
EOF
[[ $RECORD == 1 ]] && record_section resume_scale.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"
exit 0
