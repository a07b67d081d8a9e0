#!/usr/bin/env bash
# What tracing costs per rollout, counted with callgrind (bench/RESULTS.md, "Tracing overhead,
# counted"): instructions, allocations and mutex locks per rollout in the three servers of a
# deployment, for each telemetry variant, all on the same workload.
#
# Workload: the deployment of bench/e2e_load.sh (example_single_tool_call's resources server,
# simple_agent, replay_model over bench/e2e_data.py's cities), each server one `gym serve` under
# `valgrind --tool=callgrind`. bench/http_client_bench posts one input row to the agent's /run
# (7 HTTP exchanges per rollout inside the deployment) from CONNS connections: WARM rollouts each
# to warm up, counters zeroed in all three servers (`callgrind_control -z`), REQS rollouts each,
# then SIGTERM: each server flushes its telemetry (queued spans included) and callgrind writes its
# totals at exit, so the figures cover the measured rollouts and one shutdown.
# The warm-up is a whole number of span batches (CONNS x WARM a multiple of 512, the batch size)
# and the counters are zeroed once its last batch has reached the receiver: every warm-up span has
# left by then and the measured window exports the measured rollouts' spans, no more (a warm-up
# that left a partial batch behind added up to 511 spans to each server's exports).
# Variants (OTLP/HTTP protobuf to tests/support/gym_test_server --otlp-mode ok, which decodes
# the metrics, accepts the spans unread and is not counted; the periodic metric export is pushed
# past the run so every enabled variant exports metrics exactly once, at shutdown, and so is the
# span processor's
# schedule (OTEL_BSP_SCHEDULE_DELAY), so spans leave in full batches of 512 and at shutdown, as
# in a busy run; under valgrind a 5 s schedule would send many small batches instead):
#   off          no telemetry variable (the default);
#   metrics      NEMO_GYM_OTEL_ENABLED=1 with NEMO_GYM_OTEL_TRACES_ENABLED=0: the base line;
#   default      metrics + traces with the `default` span groups and OTEL_TRACES_SAMPLER=always_on;
#   per_rollout  metrics + traces with NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout, always_on.
# Allocations are calls to malloc, calloc, realloc, posix_memalign, aligned_alloc and operator new
# (not those made by operator new itself); locks are calls to pthread_mutex_lock and
# pthread_mutex_trylock (short_lock.h tries first).
#
# Usage: GYM_BUILD_DIR=build [CONNS=8] [WARM=64] [REQS=100] [VARIANTS="off metrics default
#        per_rollout"] [VALGRIND_ARGS=--separate-threads=yes] bash bench/trace_callgrind.sh
# (KEEP_TMP=1 keeps the callgrind files: <variant>.<server>.out, for callgrind_annotate.)
set -euo pipefail
PROG=trace_callgrind.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD=${GYM_BUILD_DIR:-build}
GYM=$BUILD/src/cli/gym
BENCH=$BUILD/bench/http_client_bench
RECEIVER=$BUILD/tests/support/gym_test_server
CONNS=${CONNS:-8}
WARM=${WARM:-64}
REQS=${REQS:-100}
VARIANTS=${VARIANTS:-off metrics default per_rollout}
PYTHON=${PYTHON:-python3}
[[ -x $GYM && -x $BENCH && -x $RECEIVER ]] ||
  die "build gym, http_client_bench and gym_test_server in $BUILD first"
((CONNS * WARM % 512 == 0)) ||
  die "CONNS x WARM must be a multiple of 512 (the span batch size), not $((CONNS * WARM))"
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
  die "valgrind (callgrind) is not installed"
bench_tmpdir trace_callgrind

for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done
# callgrind counts each byte a `rep movsb` or `rep stosb` moves as one instruction, and glibc's
# memcpy and memset take them for large buffers, memcpy also depending on the addresses
# (alignment, overlap), which differ between variants with the heap layout while the work does
# not: a request body's copy in the agent once came out 3.7 k instructions per rollout apart.
# With these thresholds every copy and fill of every variant takes the vector loop, whose count
# follows the bytes moved (32 per instruction), as the time does on the hardware.
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.cpu.x86_rep_movsb_threshold=4294967295:glibc.cpu.x86_rep_stosb_threshold=4294967295}

"$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/e2e_data.py" --out-dir "$TMP/data" --name weather \
  --tasks 64 >"$TMP/data.log" || die "bench/e2e_data.py failed: $(cat "$TMP/data.log")"
head -n 1 "$TMP/data/weather.jsonl" >"$TMP/row.json"

read -r P_RES P_AGENT P_MODEL P_RECV < <(free_ports 4)
RES=example_single_tool_call
AGENT=example_single_tool_call_simple_agent
"$GYM" config show --resources-server $RES --model-type replay_model \
  "++input_jsonl_fpath=$TMP/data/weather.jsonl" \
  "++$RES.resources_servers.$RES.host=127.0.0.1" "++$RES.resources_servers.$RES.port=$P_RES" \
  "++$AGENT.responses_api_agents.simple_agent.host=127.0.0.1" \
  "++$AGENT.responses_api_agents.simple_agent.port=$P_AGENT" \
  "++policy_model.responses_api_models.replay_model.host=127.0.0.1" \
  "++policy_model.responses_api_models.replay_model.port=$P_MODEL" \
  >"$TMP/config.yaml" 2>"$TMP/config.err" || { cat "$TMP/config.err" >&2; die "'gym config show' failed"; }
URL=http://127.0.0.1:$P_AGENT/run

"$RECEIVER" --host 127.0.0.1 --port "$P_RECV" --otlp-mode ok >"$TMP/receiver.log" 2>&1 &
PIDS+=("$!")
wait_log "$TMP/receiver.log" '^LISTENING ' "$!" 10 "OTLP receiver"

# variant_env VARIANT: the telemetry variables of a variant, one per line.
variant_env() {
  [[ $1 == off ]] && return 0
  printf '%s\n' NEMO_GYM_OTEL_ENABLED=1 OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
    "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$P_RECV" OTEL_METRIC_EXPORT_INTERVAL=3600000 \
    OTEL_BSP_SCHEDULE_DELAY=3600000
  case $1 in
    metrics) echo NEMO_GYM_OTEL_TRACES_ENABLED=0 ;;
    default) printf '%s\n' NEMO_GYM_OTEL_SPAN_GROUPS=default OTEL_TRACES_SAMPLER=always_on ;;
    per_rollout) printf '%s\n' NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout OTEL_TRACES_SAMPLER=always_on ;;
    *) die "unknown variant $1" ;;
  esac
}

# counts FILE: "instructions allocations locks" of one callgrind output file.
counts() {
  "$PYTHON" - "$1" <<'EOF'
import re, sys
names, fn, cfn = {}, "", ""
alloc = re.compile(r"^(malloc|calloc|realloc|posix_memalign|aligned_alloc|operator new)")
ir = allocs = locks = 0
def name(ref):
    m = re.match(r"\((\d+)\)(?: (.*))?", ref)
    if not m:
        return ref
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), "")
calls = False
for line in open(sys.argv[1], errors="replace"):
    if line.startswith(("summary:", "totals:")):
        ir = int(line.split()[1])
    elif line.startswith("fn="):
        fn = name(line[3:].strip())
    elif line.startswith("cfn="):
        cfn = name(line[4:].strip())
    elif line.startswith("calls="):
        n = int(line[6:].split()[0])
        if alloc.match(cfn) and not fn.startswith("operator new"):
            allocs += n
        elif cfn.startswith(("pthread_mutex_lock", "pthread_mutex_trylock")):
            locks += n
print(ir, allocs, locks)
EOF
}

# wait_exports_settled: returns once the receiver's count of span exports has not moved for a
# second (the warm-up's last batches are encoded and sent after its last response).
wait_exports_settled() {
  local last=-1 now
  for _ in $(seq 60); do
    now=$(curl -sf "http://127.0.0.1:$P_RECV/stats" | "$PYTHON" -c \
      'import json, sys; print(json.load(sys.stdin)["trace_requests"])') ||
      die "GET /stats of the OTLP receiver failed"
    [[ $now == "$last" ]] && return 0
    last=$now
    sleep 1
  done
  die "the span exports of the warm-up did not settle within 60 s"
}

declare -A IR ALLOCS LOCKS
SERVERS=("$RES" "$AGENT" policy_model)
for variant in $VARIANTS; do
  mapfile -t venv < <(variant_env "$variant")
  declare -A SPID=()
  for name in "${SERVERS[@]}"; do
    env "${venv[@]}" NEMO_GYM_CONFIG_DICT="$(cat "$TMP/config.yaml")" NEMO_GYM_CONFIG_PATH=$name \
      valgrind --tool=callgrind ${VALGRIND_ARGS:-} "--callgrind-out-file=$TMP/$variant.$name.out" "$GYM" serve \
      >"$TMP/$variant.$name.log" 2>&1 &
    SPID[$name]=$!
    PIDS+=("$!")
  done
  for port in $P_RES $P_MODEL $P_AGENT; do
    for i in $(seq 600); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      ((i < 600)) || die "a server of $variant did not listen on $port within 60 s"
      sleep 0.1
    done
  done
  "$BENCH" "$URL" "$CONNS" "$WARM" "$TMP/row.json" >"$TMP/$variant.warm" ||
    die "warm-up of $variant failed: $(cat "$TMP/$variant.warm")"
  wait_exports_settled
  for name in "${SERVERS[@]}"; do callgrind_control -z "${SPID[$name]}" >/dev/null 2>&1; done
  "$BENCH" "$URL" "$CONNS" "$REQS" "$TMP/row.json" >"$TMP/$variant.measured" ||
    die "measured run of $variant failed: $(cat "$TMP/$variant.measured")"
  for name in "${SERVERS[@]}"; do kill -TERM "${SPID[$name]}"; done
  for name in "${SERVERS[@]}"; do wait "${SPID[$name]}" 2>/dev/null || true; done
  PIDS=("${PIDS[0]}")
  for name in "${SERVERS[@]}"; do
    read -r ir allocs locks < <(counts "$TMP/$variant.$name.out")
    IR[$variant.$name]=$ir ALLOCS[$variant.$name]=$allocs LOCKS[$variant.$name]=$locks
    IR[$variant]=$((${IR[$variant]:-0} + ir))
    ALLOCS[$variant]=$((${ALLOCS[$variant]:-0} + allocs))
    LOCKS[$variant]=$((${LOCKS[$variant]:-0} + locks))
  done
  echo "$variant: $(cat "$TMP/$variant.measured")" >&2
done

N=$((CONNS * REQS))
echo "rollouts measured per variant: $N (after $((CONNS * WARM)) to warm up), one shutdown each"
printf '| variant | instructions / rollout | vs metrics | allocations / rollout | mutex locks / rollout | agent | model | resources |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for variant in $VARIANTS; do
  per=$((IR[$variant] / N))
  vs=-
  [[ -n ${IR[metrics]:-} && $variant != metrics ]] &&
    vs=$(awk -v a="${IR[$variant]}" -v b="${IR[metrics]}" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$variant" "$per" "$vs" \
    "$(awk -v a="${ALLOCS[$variant]}" -v n=$N 'BEGIN { printf "%.1f", a / n }')" \
    "$(awk -v a="${LOCKS[$variant]}" -v n=$N 'BEGIN { printf "%.1f", a / n }')" \
    $((IR[$variant.$AGENT] / N)) $((IR[$variant.policy_model] / N)) $((IR[$variant.$RES] / N))
done
