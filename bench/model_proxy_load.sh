#!/usr/bin/env bash
# Model proxy: our `vllm_model` vs a Python peer built like NeMo Gym's, both in front of the same
# fast fake OpenAI-compatible endpoint, against calling that endpoint directly (issue 12, item 6).
#
#   fake:   $GYM_BUILD_DIR/tests/support/gym_fake_openai --no-record (prints "LISTENING <port>";
#           answers POST /v1/chat/completions with a small fixed chat.completion, "Hello" + usage)
#   ours:   gym env start --config <tmp>/model.yaml ++head_server.port=<free>, model.yaml holding
#           one `vllm_model` server (policy_model) with base_url http://127.0.0.1:<fake>/v1,
#           api_key dummy, model fake-model, return_token_id_information false,
#           uses_reasoning_parser false
#   peer:   /usr/bin/python3 bench/vllm_peer.py --port <free> --base-url http://127.0.0.1:<fake>/v1
#           (FastAPI + uvicorn/uvloop/httptools, one process; NeMo Gym's middleware, pydantic
#           validation, ResponsesConverter's conversion and one aiohttp ClientSession)
#   direct: the fake itself
#
# Load: wrk POSTing one fixed body: to ours and the peer a Responses create-params body (a user
# message plus one function tool, about 1 KB) on /v1/responses; to the fake the Chat Completions
# body the peer converts it to (`vllm_peer.py convert`) on /v1/chat/completions. Before any load
# each target must answer its body with 200, ours and the peer with a completed Response whose
# output text and usage are the fake's answer (and forward /v1/chat/completions).
#
# Two kinds of runs, each ROUNDS rounds of ours, the peer and direct for DURATION s (the order
# rotates from round to round; after every run the bench waits until the target and the fake are
# idle, as a proxy may still work through the requests wrk left in flight):
#   back to back, at each concurrency of LEVELS (bench/wrk_post.lua, after a WARMUP s warm-up):
#     every connection sends its next call when the last is answered, so each target runs flat out
#     on the shared cores; these give CPU per call (and throughput; their latency is queueing);
#   paced, at each concurrency of PACED_LEVELS (wrk_post.lua plus wrk's delay() hook): every
#     connection pauses a random time before each call (exponential, mean PACE_MS; not counted in
#     wrk's latency), so that no target is saturated and calls arrive about as a Poisson stream;
#     these give the latency a proxy adds when it is not the bottleneck.
# Measured per run: requests completed, latency p50/p99 (wrk), CPU time (user + system from
# /proc/PID/stat) of the target's process tree: for ours the model server that `gym env start`
# started (its pid from the head server's /server_instances), not the orchestrator; also the
# fake's CPU and the machine's busy time. CPU is counted from the start of a run until the target
# is idle again, and divided by the requests completed plus (back to back) the CONNS requests left
# in flight when wrk stopped, which the target still works on. Any non-2xx answer fails the bench.
# Reported per setting and target: CPU us per call (all rounds), p50/p99 (median of the rounds),
# added latency = proxy p50/p99 minus direct p50/p99 of the same round (median of the rounds), the
# peer/ours CPU ratio, and the peer's pydantic work on pydantic 1 vs 2 (`vllm_peer.py time`).
# Goals of the issue: >= 20x less CPU per proxied call than the peer; <= 100 us added p50 at 64
# in flight (judged on the paced runs at 64). Prints the tables and records them in
# bench/RESULTS.md (its own section).
#
# Usage: [GYM_BUILD_DIR=build] [DURATION=10] bash bench/model_proxy_load.sh [--no-record]
#
# Environment:
#   GYM_BUILD_DIR    build dir holding src/cli/gym and tests/support/gym_fake_openai (default:
#                    build; relative to the repo root)
#   DURATION         seconds per measured wrk run (default 10)
#   WARMUP           seconds of warm-up of each target at each concurrency (default 2; 0: none)
#   LEVELS           connections of the back-to-back runs (default "64 1024")
#   PACED_LEVELS     connections of the paced runs (default "64"; "" for none)
#   PACE_MS          mean pause of a connection before each call in the paced runs (default 500:
#                    at 64 connections at most 128 calls/s, which the peer serves unsaturated)
#   ROUNDS           rounds of ours, peer and direct at each setting (default 3)
#   WRK_THREADS      wrk threads (default 2)
#   WRK_TIMEOUT      wrk request timeout (default 30s): a slower answer is a timeout error (the
#                    peer at 1024 in flight answers in waves of seconds)
#   READY_TIMEOUT    seconds to wait for each server to answer GET / (default 60)
#   FAKE_ARGS        flags of gym_fake_openai (default "--no-record": it keeps no requests)
#   PYDANTIC2_PYTHON an interpreter with pydantic 2 to time the peer's models with, beside the
#                    peer's own pydantic 1 (default: the first python3 on PATH that has it)
#   KEEP_TMP=1       keep the temp dir (bodies, config, logs, raw wrk output)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=model_proxy_load.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

bench_record_args "$@"

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
LEVELS=${LEVELS-64 1024}
PACED_LEVELS=${PACED_LEVELS-64}
PACE_MS=${PACE_MS:-500}
ROUNDS=${ROUNDS:-3}
read -r -a FAKE_ARGS_A <<<"${FAKE_ARGS---no-record}"
WRK_THREADS=${WRK_THREADS:-2}
WRK_TIMEOUT=${WRK_TIMEOUT:-30s}
READY_TIMEOUT=${READY_TIMEOUT:-60}
for v in DURATION ROUNDS WRK_THREADS READY_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer, got '$WARMUP'"
[[ $PACE_MS =~ ^[0-9]+$ ]] || die "PACE_MS must be a non-negative integer, got '$PACE_MS'"
MAX_LEVEL=0
for c in $LEVELS $PACED_LEVELS; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || die "LEVELS and PACED_LEVELS must hold positive integers, got '$c'"
  ((c > MAX_LEVEL)) && MAX_LEVEL=$c
done
((MAX_LEVEL > 0)) || die "LEVELS and PACED_LEVELS are both empty"
PYTHON=/usr/bin/python3
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
FAKE=$BUILD_DIR/tests/support/gym_fake_openai
TARGETS=(ours peer direct)

# --- tools ---------------------------------------------------------------------------------
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
$PYTHON -c 'import fastapi, uvicorn, uvloop, httptools, aiohttp, itsdangerous' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/uvloop/httptools/aiohttp/itsdangerous (bash scripts/setup.sh installs them)"
[[ -x $GYM ]] || die "gym binary not found: $GYM
  build it: cmake -S . -B ${GYM_BUILD_DIR:-build} -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ${GYM_BUILD_DIR:-build} --target gym gym_fake_openai
  or point GYM_BUILD_DIR at the build dir that has src/cli/gym"
[[ -x $FAKE ]] || die "fake endpoint not found: $FAKE (build the gym_fake_openai target, which the tests build)"
for f in wrk_post.lua vllm_peer.py ng_models.py e2e_peer.py; do
  [[ -f $BENCH_DIR/$f ]] || die "missing $BENCH_DIR/$f"
done

bench_tmpdir gym-model-proxy

# --- the bodies ----------------------------------------------------------------------------
RESP_BODY=$TMP/responses_body.json
CHAT_BODY=$TMP/chat_body.json
$PYTHON - "$RESP_BODY" <<'EOF'
import json, sys

body = {
    "model": "fake-model",
    "input": [{
        "role": "user",
        "content": "I am planning a trip to Lisbon next week and want to pack the right clothes. "
                   "Please look up the current weather there with the tool you have, then tell me in "
                   "two short sentences whether I need a coat, an umbrella or sunscreen, and why.",
    }],
    "tools": [{
        "type": "function",
        "name": "get_weather",
        "description": "Get the current weather of a city: the temperature, the sky and the chance of "
                       "rain. Call it once per city the user asks about.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Lisbon or Paris"},
                "country": {"type": "string", "description": "ISO 3166 country code, e.g. PT"},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"],
                          "description": "The temperature unit of the answer"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": False,
    }],
    "temperature": 0.7,
    "max_output_tokens": 256,
}
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump(body, f, separators=(",", ":"))
EOF
$PYTHON "$BENCH_DIR/vllm_peer.py" convert "$RESP_BODY" --model fake-model >"$CHAT_BODY" 2>"$TMP/convert.err" ||
  { cat "$TMP/convert.err" >&2; die "bench/vllm_peer.py convert failed on the Responses body"; }
RESP_BYTES=$(wc -c <"$RESP_BODY")
CHAT_BYTES=$(wc -c <"$CHAT_BODY")

# The peer's work per call that is not HTTP (JSON, pydantic validation, conversion both ways, the
# Response model) on its pydantic 1 and, where an interpreter has it, on pydantic 2 (what NeMo Gym
# runs on), for the estimate in the report. Done now, while no server runs.
PEER_TIME=$($PYTHON "$BENCH_DIR/vllm_peer.py" time "$RESP_BODY" 500 2>"$TMP/time_peer.err") ||
  { cat "$TMP/time_peer.err" >&2; die "bench/vllm_peer.py time failed"; }
PEER_TIME_V2=
PY2=$(pydantic2_python)
if [[ -n $PY2 ]]; then
  PEER_TIME_V2=$("$PY2" "$BENCH_DIR/vllm_peer.py" time "$RESP_BODY" 500 2>"$TMP/time_v2.err") ||
    { warn "timing the peer's models with $PY2 failed: $(tail -n 1 "$TMP/time_v2.err")"; PEER_TIME_V2=; }
fi

# --- open files: each proxy holds one inbound and up to one outbound socket per call in flight
raise_fd_limit $((2 * MAX_LEVEL + 1000))

# Telemetry stays at its default (off): drop any telemetry variables of the calling shell.
for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

show_logs() {
  local f
  for f in "$@"; do
    [[ -s $f ]] && { echo "--- $f (tail)" >&2; tail -n 30 "$f" >&2; }
  done
  return 0
}

# --- the fake endpoint ------------------------------------------------------------------------
"$FAKE" "${FAKE_ARGS_A[@]}" >"$TMP/fake.out" 2>"$TMP/fake.err" &
PID_FAKE=$!
PIDS+=("$PID_FAKE")
wait_log "$TMP/fake.out" '^LISTENING [0-9]+' "$PID_FAKE" "$READY_TIMEOUT" "gym_fake_openai"
PORT_FAKE=$(awk '/^LISTENING [0-9]+/ { print $2; exit }' "$TMP/fake.out")
FAKE_V1=http://127.0.0.1:$PORT_FAKE/v1
wait_http "http://127.0.0.1:$PORT_FAKE/" "$PID_FAKE" "$READY_TIMEOUT" "gym_fake_openai"

read -r PORT_HEAD PORT_MODEL PORT_PEER < <(free_ports 3)

# --- ours ------------------------------------------------------------------------------------
cat >"$TMP/model.yaml" <<EOF
policy_model:
  responses_api_models:
    vllm_model:
      host: 127.0.0.1
      port: $PORT_MODEL
      base_url: $FAKE_V1
      api_key: dummy
      model: fake-model
      return_token_id_information: false
      uses_reasoning_parser: false
EOF
START_CMD=("$GYM" env start --config "$TMP/model.yaml" "++head_server.port=$PORT_HEAD")
(cd "$TMP" && exec "${START_CMD[@]}") >"$TMP/ours_env.log" 2>&1 &
PID_ORCH=$!
PIDS+=("$PID_ORCH")

# --- the peer ----------------------------------------------------------------------------------
PEER_CMD=("$PYTHON" "$BENCH_DIR/vllm_peer.py" --port "$PORT_PEER" --base-url "$FAKE_V1" --api-key dummy
  --model fake-model)
"${PEER_CMD[@]}" >"$TMP/peer.log" 2>&1 &
PID_PEER=$!
PIDS+=("$PID_PEER")

wait_http "http://127.0.0.1:$PORT_MODEL/" "$PID_ORCH" "$READY_TIMEOUT" "gym env start (vllm_model)"
wait_log "$TMP/ours_env.log" 'All 1 / 1 servers ready!' "$PID_ORCH" "$READY_TIMEOUT" "gym env start"
wait_http "http://127.0.0.1:$PORT_PEER/" "$PID_PEER" "$READY_TIMEOUT" "bench/vllm_peer.py"

# The model server's pid (its process tree is what is measured, not the orchestrator's).
PID_MODEL=
while IFS=$'\t' read -r kind pid url; do
  [[ $kind == model && $url == *":$PORT_MODEL" ]] && PID_MODEL=$pid
done < <(server_instances "$PORT_HEAD" "$TMP/server_instances.json")
[[ -n $PID_MODEL ]] || die "the head server's /server_instances lists no model server on port $PORT_MODEL (see $TMP/server_instances.json)"
kill -0 "$PID_MODEL" 2>/dev/null || die "the model server (pid $PID_MODEL) is not running"
[[ " $(proc_tree "$PID_ORCH" | tr '\n' ' ') " == *" $PID_MODEL "* ]] ||
  warn "the model server (pid $PID_MODEL) is not a descendant of gym env start (pid $PID_ORCH)"

declare -A URL BODY PID
URL[ours]=http://127.0.0.1:$PORT_MODEL/v1/responses
URL[peer]=http://127.0.0.1:$PORT_PEER/v1/responses
URL[direct]=$FAKE_V1/chat/completions
BODY[ours]=$RESP_BODY
BODY[peer]=$RESP_BODY
BODY[direct]=$CHAT_BODY
PID[ours]=$PID_MODEL
PID[peer]=$PID_PEER
PID[direct]=$PID_FAKE

# --- answers before any load: 200, and the proxies answer the fake's text as a Response ------
for t in "${TARGETS[@]}"; do
  code=$(curl -s -o "$TMP/$t.answer" -w '%{http_code}' --max-time 10 -X POST -H 'Content-Type: application/json' \
    --data-binary "@${BODY[$t]}" "${URL[$t]}" || true)
  [[ $code == 200 ]] || { show_logs "$TMP/ours_env.log" "$TMP/peer.log" "$TMP/fake.err"
    die "$t: POST ${URL[$t]} answered ${code:-nothing}: $(head -c 500 "$TMP/$t.answer" 2>/dev/null)"; }
done
# The /v1/chat/completions route of both proxies, forwarded as is.
for t in ours peer; do
  base=${URL[$t]%/responses}
  code=$(curl -s -o "$TMP/${t}_chat.answer" -w '%{http_code}' --max-time 10 -X POST \
    -H 'Content-Type: application/json' --data-binary "@$CHAT_BODY" "$base/chat/completions" || true)
  [[ $code == 200 ]] || die "$t: POST $base/chat/completions answered ${code:-nothing}: $(head -c 500 "$TMP/${t}_chat.answer" 2>/dev/null)"
done
ANSWER_CHECK=$($PYTHON - "$TMP" <<'EOF'
import json, sys

tmp = sys.argv[1]
load = lambda name: json.load(open(f"{tmp}/{name}.answer", encoding="utf-8"))
direct = load("direct")
text = direct["choices"][0]["message"].get("content")
usage = direct.get("usage") or {}
problems, shapes = [], {}
for t in ("ours", "peer"):
    r = load(t)
    out = r.get("output") or []
    got = "".join(p.get("text", "") for o in out if o.get("type") == "message"
                  for p in o.get("content") or [] if p.get("type") == "output_text")
    shapes[t] = ([o.get("type") for o in out], r.get("status"), r.get("usage"))
    if r.get("object") != "response" or r.get("status") != "completed":
        problems.append(f"{t}: not a completed Response (object {r.get('object')!r}, status {r.get('status')!r})")
    if got != text:
        problems.append(f"{t}: output text {got!r}, the endpoint answered {text!r}")
    u = r.get("usage") or {}
    if usage and (u.get("input_tokens"), u.get("output_tokens"), u.get("total_tokens")) != (
            usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")):
        problems.append(f"{t}: usage {u} does not map the endpoint's {usage}")
    c = load(f"{t}_chat")
    if c["choices"][0]["message"].get("content") != text:
        problems.append(f"{t}: /v1/chat/completions did not forward the endpoint's answer")
if problems:
    print("; ".join(problems))
    sys.exit(1)
same = shapes["ours"] == shapes["peer"]
print(f"both proxies answer a completed Response with output {shapes['ours'][0]} carrying the endpoint's text "
      f"{text!r} and its usage mapped" + ("" if same else f" (the peer: output {shapes['peer'][0]}, usage "
                                          f"{shapes['peer'][2]}; ours: usage {shapes['ours'][2]})")
      + "; both forward /v1/chat/completions")
EOF
) || die "$ANSWER_CHECK"
echo "$ANSWER_CHECK"

# --- measurement ---------------------------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)
RESULTS=$TMP/results.txt
: >"$RESULTS"
# The paced runs: wrk_post.lua plus wrk's delay() hook, a pause before each request of a
# connection (wrk times each request from its sending, so the pause is not in the latency). The
# pause is random, exponential with mean PACE_MS, so that the connections do not fall into step
# (calls then arrive about as a Poisson stream); each wrk thread seeds its own generator.
PACED_LUA=$TMP/wrk_paced.lua
{
  cat "$BENCH_DIR/wrk_post.lua"
  cat <<EOF

-- Appended by bench/model_proxy_load.sh: the paced runs.
local pace_ms = $PACE_MS
local pace_threads = 0
local post_setup = setup
function setup(thread)
  post_setup(thread)
  pace_threads = pace_threads + 1
  thread:set("pace_seed", pace_threads)
end

function delay()
  if not pace_seeded then
    math.randomseed(os.time() + 7919 * (pace_seed or 0))
    pace_seeded = true
  end
  return math.floor(-pace_ms * math.log(1 - math.random()))
end
EOF
} >"$PACED_LUA"
declare -A LUA=([sat]=$BENCH_DIR/wrk_post.lua [paced]=$PACED_LUA)
wrk_cmd() { # MODE: the wrk command line before -c/-d
  echo "wrk -t$WRK_THREADS --timeout $WRK_TIMEOUT --latency -s ${LUA[$1]}"
}

# wait_idle PID: wait (up to 60 s) until the process tree of PID stops using CPU (at most 1 tick
# in 0.5 s): a server may still be working through the requests wrk left in flight when it
# stopped, which must not load the next run.
wait_idle() {
  local a b
  for _ in $(seq 120); do
    a=$(tree_cpu_ticks "$1")
    sleep 0.5
    b=$(tree_cpu_ticks "$1")
    ((b - a <= 1)) && return 0
  done
  warn "pid $1 still busy 60 s after its run"
}

# run_one MODE TARGET CONNS ROUND: one measured wrk run (MODE sat: back to back; paced: PACE_MS
# between the calls of a connection), one line in RESULTS. CPU is read when wrk ends (the run) and
# again once the target and the fake are idle (the run plus the drain of the requests wrk left in
# flight, which the servers still work on).
run_one() {
  local mode=$1 t=$2 c=$3 round=$4 out t0 t1 t2 f0 f2 b0 b1 line what
  local -a cmd
  read -r -a cmd <<<"$(wrk_cmd "$mode")"
  out=$TMP/wrk_${mode}_${t}_c${c}_r$round.txt
  what="$t, $c connections, $mode, round $round"
  echo "running ($what): ${cmd[*]} -c$c -d${DURATION}s ${URL[$t]} -- $(basename "${BODY[$t]}")" >&2
  t0=$(tree_cpu_ticks "${PID[$t]}")
  f0=$(cpu_ticks "$PID_FAKE")
  b0=$(busy_ticks)
  "${cmd[@]}" "-c$c" "-d${DURATION}s" "${URL[$t]}" -- "${BODY[$t]}" >"$out" 2>&1 || true
  b1=$(busy_ticks)
  t1=$(tree_cpu_ticks "${PID[$t]}")
  wait_idle "${PID[$t]}"
  wait_idle "$PID_FAKE"
  t2=$(tree_cpu_ticks "${PID[$t]}")
  f2=$(cpu_ticks "$PID_FAKE")
  line=$(sed -n 's/^WRK_RESULT //p' "$out")
  [[ -n $line ]] || { cat "$out" >&2; die "wrk failed ($what)"; }
  kill -0 "${PID[$t]}" 2>/dev/null || { show_logs "$TMP/ours_env.log" "$TMP/peer.log" "$TMP/fake.err"
    die "$t (pid ${PID[$t]}) died during the run ($what)"; }
  [[ $line =~ (^| )non2xx=([0-9]+) ]] || die "no non2xx count in wrk's output: $line"
  if [[ ${BASH_REMATCH[2]} != 0 || $line =~ (^| )status_ge400=[1-9] ]]; then
    cat "$out" >&2
    die "$what: ${BASH_REMATCH[2]} answers were not 2xx ($line)"
  fi
  [[ $line =~ (^| )requests=0( |$) ]] && die "$what: no request completed within ${DURATION} s (raise DURATION?)"
  [[ $line =~ connect=0\ read=0\ write=0\ timeout=0 ]] || warn "$what: socket errors ($line)"
  echo "mode=$mode target=$t conns=$c round=$round $line run_ticks=$((t1 - t0)) cpu_ticks=$((t2 - t0)) fake_ticks=$((f2 - f0)) busy_ticks=$((b1 - b0)) clk_tck=$CLK_TCK" >>"$RESULTS"
}

# rounds MODE CONNS: ROUNDS rounds of every target, the order rotating so that no target always
# runs first (or last) in a round.
rounds() {
  local n=${#TARGETS[@]} round i
  for round in $(seq "$ROUNDS"); do
    for i in $(seq 0 $((n - 1))); do
      run_one "$1" "${TARGETS[$(((i + round - 1) % n))]}" "$2" "$round"
    done
  done
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(cpu_busy_pct 3)
echo "CPU busy with other work in the 3 s before the runs: ${BUSY_BEFORE}% (load average $LOAD_BEFORE)"
[[ $BUSY_BEFORE -lt 20 ]] || warn "the machine is busy; figures will be noisy (ratios still compare)"

read -r -a WARM <<<"$(wrk_cmd sat)"
for c in $LEVELS; do
  if ((WARMUP > 0)); then
    for t in "${TARGETS[@]}"; do
      "${WARM[@]}" "-c$c" "-d${WARMUP}s" "${URL[$t]}" -- "${BODY[$t]}" >"$TMP/warmup_${t}_c$c.txt" 2>&1 || true
      wait_idle "${PID[$t]}"
    done
  fi
  rounds sat "$c"
done
for c in $PACED_LEVELS; do rounds paced "$c"; done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
MODEL_THREADS=$(threads "$PID_MODEL" 2>/dev/null || echo '?')
PEER_THREADS=$(threads "$PID_PEER" 2>/dev/null || echo '?')

# --- report --------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR DURATION WARMUP LEVELS PACED_LEVELS PACE_MS ROUNDS WRK_THREADS WRK_TIMEOUT FAKE_ARGS \
  PYDANTIC2_PYTHON; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v='$(printenv "$v")' "
done
CMD+="bash bench/model_proxy_load.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
BUILT_FROM=$(build_info "$GYM" "$BUILD_DIR" "$REPO_ROOT")
HEAD_HERE=$(git -C "$REPO_ROOT" log -1 --format='%h' 2>/dev/null || echo unknown)
PEER_VERSIONS=$($PYTHON -c 'import aiohttp, fastapi, pydantic, starlette, uvicorn, uvloop, httptools, sys
print(f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, pydantic {pydantic.VERSION}, "
      f"starlette {starlette.__version__}, uvicorn {uvicorn.__version__}, uvloop {uvloop.__version__}, "
      f"httptools {httptools.__version__}, aiohttp {aiohttp.__version__}")')
CPU_MODEL=$(cpu_model)
export RESULTS RECORD CMD BUILT_FROM HEAD_HERE PEER_VERSIONS LOAD_BEFORE LOAD_AFTER BUSY_BEFORE CPU_MODEL \
  DURATION WARMUP ROUNDS PACE_MS WRK_THREADS WRK_TIMEOUT RESP_BYTES CHAT_BYTES ANSWER_CHECK FD_LIMIT \
  MODEL_THREADS PEER_THREADS PEER_TIME PEER_TIME_V2 PY2 FAKE_ARGS_TEXT="${FAKE_ARGS_A[*]}" \
  SECTION_FILE=$TMP/section.md
$PYTHON - <<'EOF'
import datetime, os, platform, re, statistics

env = os.environ
runs = []
for line in open(env["RESULTS"]):
    r = {}
    for kv in line.split():
        k, v = kv.split("=", 1)
        try:
            r[k] = float(v)
        except ValueError:
            r[k] = v
    r["conns"], r["round"] = int(r["conns"]), int(r["round"])
    tck = r["clk_tck"]
    r["cpu_s"], r["fake_s"], r["busy_s"] = r["cpu_ticks"] / tck, r["fake_ticks"] / tck, r["busy_ticks"] / tck
    r["run_s"] = r["run_ticks"] / tck
    # The requests the CPU was spent on: those completed, plus, back to back, the one in flight
    # on every connection when wrk stopped (worked on during the drain; paced, almost none is).
    r["calls"] = r["requests"] + (r["conns"] if r["mode"] == "sat" else 0)
    r["errors"] = int(r["connect"] + r["read"] + r["write"] + r["timeout"])
    runs.append(r)

targets = ["ours", "peer", "direct"]
label = {"ours": "ours (vllm_model)", "peer": "peer (FastAPI + aiohttp)", "direct": "direct (fake endpoint)"}
modes = [m for m in ("sat", "paced") if any(r["mode"] == m for r in runs)]
levels = {m: sorted({r["conns"] for r in runs if r["mode"] == m}) for m in modes}
by = {}
for r in runs:
    by.setdefault((r["mode"], r["target"], r["conns"]), []).append(r)
direct_of = {(r["mode"], r["conns"], r["round"]): r for r in runs if r["target"] == "direct"}

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def has_latency(r):
    return r["requests"] > r["timeout"] and r["p50_ms"] > 0

summary = {}
for (m, t, c), rs in by.items():
    n = sum(r["requests"] for r in rs)
    calls = sum(r["calls"] for r in rs)
    dur = sum(r["duration_s"] for r in rs)
    s = dict(n=n, rps=n / dur if dur else 0.0, cpu_us=sum(r["cpu_s"] for r in rs) / calls * 1e6,
             cores=sum(r["run_s"] for r in rs) / dur if dur else 0.0,
             fake_us=sum(r["fake_s"] for r in rs) / calls * 1e6,
             busy=sum(r["busy_s"] for r in rs) / dur if dur else 0.0,
             p50=med([r["p50_ms"] for r in rs if has_latency(r)]), p99=med([r["p99_ms"] for r in rs if has_latency(r)]),
             errors=sum(r["errors"] for r in rs), non2xx=int(sum(r["non2xx"] for r in rs)), rounds=len(rs))
    if t != "direct":
        adds50, adds99 = [], []
        for r in rs:
            d = direct_of.get((m, c, r["round"]))
            if d and has_latency(r) and has_latency(d):
                adds50.append((r["p50_ms"] - d["p50_ms"]) * 1000)
                adds99.append((r["p99_ms"] - d["p99_ms"]) * 1000)
        s["add50"], s["add99"], s["add50_rounds"] = med(adds50), med(adds99), adds50
    summary[m, t, c] = s

def render(head, cells):
    w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    fmt = lambda cs: "| " + " | ".join(x.ljust(n) for x, n in zip(cs, w)) + " |"
    return "\n".join([fmt(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [fmt(c) for c in cells])

f0 = lambda v: "n/a" if v != v else f"{v:,.0f}"
f1 = lambda v: "n/a" if v != v else f"{v:,.1f}"
f3 = lambda v: "n/a" if v != v else f"{v:.3f}"
pace = int(env["PACE_MS"])
mode_text = {"sat": "back to back", "paced": f"paced, {pace} ms mean pause"}

head = ["conns", "calls", "target", "requests", "req/s", "p50 ms", "p99 ms", "added p50 us", "added p99 us",
        "CPU us/call", "CPU cores", "endpoint CPU us/call", "machine busy cores", "socket errors", "non-2xx"]
cells = []
for m in modes:
    for c in levels[m]:
        for t in targets:
            s = summary.get((m, t, c))
            if not s:
                continue
            proxy = t != "direct"
            cells.append([f"{c:,}", mode_text[m], label[t], f"{s['n']:,.0f}", f"{s['rps']:,.0f}", f3(s["p50"]),
                          f3(s["p99"]), f0(s["add50"]) if proxy else "-", f0(s["add99"]) if proxy else "-",
                          f1(s["cpu_us"]), f"{s['cores']:.2f}", f1(s["fake_us"]), f"{s['busy']:.2f}",
                          str(s["errors"]), str(s["non2xx"])])
table = render(head, cells)

round_head = ["conns", "calls", "round", "target", "requests", "req/s", "p50 ms", "p99 ms", "CPU s: run",
              "run + drain", "CPU us/call", "endpoint CPU s", "socket errors (c/r/w/t)"]
round_cells = [[f"{r['conns']:,}", mode_text[r["mode"]], str(r["round"]), label[r["target"]], f"{r['requests']:,.0f}",
                f"{r['rps']:,.0f}", f3(r["p50_ms"]) if has_latency(r) else "n/a",
                f3(r["p99_ms"]) if has_latency(r) else "n/a", f"{r['run_s']:.2f}", f"{r['cpu_s']:.2f}",
                f1(r["cpu_s"] / r["calls"] * 1e6) if r["calls"] else "n/a", f"{r['fake_s']:.2f}",
                f"{r['errors']} ({int(r['connect'])}/{int(r['read'])}/{int(r['write'])}/{int(r['timeout'])})"]
               for r in runs]
round_table = render(round_head, round_cells)

notes = []
for c in levels.get("sat", []):
    o, p = summary.get(("sat", "ours", c)), summary.get(("sat", "peer", c))
    if not (o and p):
        continue
    ratio = p["cpu_us"] / o["cpu_us"] if o["cpu_us"] else float("inf")
    notes.append(f"{c:,} connections back to back: CPU per proxied call ours {f1(o['cpu_us'])} us, peer "
                 f"{f1(p['cpu_us'])} us: **{ratio:.1f}x** less (goal >= 20x: {'MET' if ratio >= 20 else 'NOT MET'}); "
                 f"req/s ours/peer {o['rps'] / p['rps']:.1f}x; added latency at saturation p50 ours "
                 f"{f0(o['add50'])} us vs peer {f0(p['add50'])} us, p99 ours {f0(o['add99'])} us vs peer "
                 f"{f0(p['add99'])} us (mostly queueing: every target saturates the shared cores)")
for c in levels.get("paced", []):
    o, p = summary.get(("paced", "ours", c)), summary.get(("paced", "peer", c))
    if not (o and p):
        continue
    line = (f"{c:,} connections paced ({pace} ms mean pause; no target saturated): added latency p50 ours {f0(o['add50'])} us "
            f"vs peer {f0(p['add50'])} us, p99 ours {f0(o['add99'])} us vs peer {f0(p['add99'])} us")
    if c == 64:
        ok = o["add50"] == o["add50"] and o["add50"] <= 100
        line += (f" (goal <= 100 us added p50 at 64: {'MET' if ok else 'NOT MET'}; per round "
                 + ", ".join(f"{x:.0f}" for x in o["add50_rounds"]) + " us)")
    notes.append(line)

def us(text):
    m = re.search(r"([0-9.]+) us per call", text or "")
    return float(m.group(1)) if m else None

pyd = [f"the peer's work per call that is not HTTP (JSON, validation, conversion both ways, the Response model; "
       f"`bench/vllm_peer.py time`): {env['PEER_TIME']} (the peer as served)"]
t1, t2 = us(env.get("PEER_TIME")), us(env.get("PEER_TIME_V2"))
if t1 is not None and t2 is not None:
    pyd.append(f"the same with pydantic 2, which NeMo Gym runs on: {env['PEER_TIME_V2']}, {t1 / t2:.1f}x less "
               f"({env['PY2']}, which has no FastAPI, so no peer is served on it)")
    est = []
    for c in levels.get("sat", []):
        o, p = summary.get(("sat", "ours", c)), summary.get(("sat", "peer", c))
        if o and p and o["cpu_us"] > 0:
            e = max(p["cpu_us"] - (t1 - t2), 1.0)
            est.append(f"at {c:,} connections about {e:,.0f} us instead of {p['cpu_us']:,.0f}, "
                       f"{e / o['cpu_us']:.1f}x ours")
    if est:
        pyd.append("ESTIMATE, not a measurement: if only that work went from pydantic 1's time to pydantic 2's, the "
                   "peer's CPU per call would be " + "; ".join(est) + " (FastAPI's own request and response "
                   "handling, Starlette, uvicorn and aiohttp left as measured, on their older releases, so a "
                   "NeMo Gym server's CPU per call is lower than this by an unmeasured amount)")
else:
    pyd.append("no interpreter with pydantic 2 was found (set PYDANTIC2_PYTHON), so the peer's pydantic 1 was not "
               "compared with pydantic 2, which NeMo Gym runs on")

print()
print(round_table)
print()
print(table)
print()
for n in notes + pyd:
    print("- " + n.replace("**", "").replace("`", ""))
if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
d, w, th, to = env["DURATION"], env["WARMUP"], env["WRK_THREADS"], env["WRK_TIMEOUT"]
section = f"""<!-- model_proxy_load.sh:begin (generated by bench/model_proxy_load.sh; edits here are overwritten) -->
## Model proxy: `vllm_model` vs a Python peer, in front of the same fake endpoint

- Date: {now}
- Machine: nproc={os.cpu_count()}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}; load average
  (1/5/15 min) before the runs {env['LOAD_BEFORE']}, after {env['LOAD_AFTER']}; CPU busy with other
  work in the 3 s before the runs: {env['BUSY_BEFORE']}%. Open-file limit {env['FD_LIMIT']}. wrk, the
  fake endpoint and the proxy share the same cores.
- Command (repo root): `{env['CMD']}`
- Ours: {env['BUILT_FROM']}; this repo's HEAD is `{env['HEAD_HERE']}`.
  `gym env start --config <tmp>/model.yaml ++head_server.port=<free>` with one `vllm_model` server
  (`base_url: http://127.0.0.1:<fake>/v1`, `api_key: dummy`, `model: fake-model`,
  `return_token_id_information: false`, `uses_reasoning_parser: false`); the model server process
  ({env['MODEL_THREADS']} threads after the runs) is measured, not the orchestrator.
- Peer: `/usr/bin/python3 bench/vllm_peer.py --port <free> --base-url http://127.0.0.1:<fake>/v1`
  ({env['PEER_VERSIONS']}; one process, {env['PEER_THREADS']} threads after the runs): FastAPI under
  uvicorn (uvloop, httptools) with NeMo Gym's session and exception middlewares, the create params
  validated into pydantic models shaped like NeMo Gym's, ResponsesConverter's conversion both ways
  restated, one aiohttp ClientSession with NeMo Gym's connector settings posting to
  `{{base_url}}/chat/completions`, the chat.completion validated and the Response built as pydantic
  models. It runs on Debian's pydantic 1 / FastAPI 0.92 / aiohttp 3.8 without orjson, where NeMo
  Gym runs on pydantic 2 and current releases.
- Endpoint: `tests/support/gym_fake_openai {env['FAKE_ARGS_TEXT']}` (a fixed small chat.completion).
  Direct = wrk against its `/v1/chat/completions` with the Chat Completions body the peer converts
  the Responses body to.
- Bodies: a Responses create-params body (a user message, one function tool with a JSON schema,
  temperature, max_output_tokens; {env['RESP_BYTES']} bytes) to `/v1/responses` of ours and the peer;
  its Chat Completions conversion ({env['CHAT_BYTES']} bytes) to the endpoint. Checked before the runs:
  {env['ANSWER_CHECK']}.
- Runs: `wrk -t{th} -c<conns> -d{d}s --timeout {to} --latency -s <script> <url> -- <body>`, {env['ROUNDS']}
  rounds of ours, the peer and direct at each setting (the order rotating). Back to back
  (`bench/wrk_post.lua`, after a {w} s warm-up of every target): each connection sends its next
  call as soon as the last is answered, so every target runs flat out and its latency is mostly
  queueing; these runs give the CPU per call. Paced (`wrk_post.lua` plus wrk's `delay()` hook):
  each connection pauses a random time before each call (exponential, mean {pace} ms; wrk does not
  count the pause in the latency), so that no target is saturated and the calls arrive about as a
  Poisson stream; these runs give the added latency of a proxy that is not the bottleneck. CPU = user + system time (/proc/PID/stat) of the target's process tree from the
  start of a run until it is idle again after wrk stopped, per request worked on (the completed
  ones plus, back to back, the one in flight on each connection when wrk stopped, which the server
  still works through), summed over the rounds; CPU cores = CPU during the run itself per second
  of it; p50/p99 = the median of the rounds; added = proxy minus direct p50/p99 of the same round
  and setting, median of the rounds; endpoint CPU = the fake's CPU per request during the target's
  runs; machine busy = all cores' busy time (/proc/stat) per second. Every answer was 2xx (a
  non-2xx fails the bench).

{table}

{chr(10).join('- ' + n for n in notes)}

Python peer vs NeMo Gym's own stack:
{chr(10).join('- ' + n for n in pyd)}

Every run, in the order they ran:

{round_table}
<!-- model_proxy_load.sh:end -->
"""
with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section model_proxy_load.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
