#!/usr/bin/env bash
# /verify of the real `mcqa` resources server under wrk, against an equivalent FastAPI app, in one
# run: ours is `gym serve` on the merged config of `gym config show --resources-server mcqa
# --model-type replay_model` (NEMO_GYM_CONFIG_DICT / NEMO_GYM_CONFIG_PATH=mcqa, as the
# orchestrator starts it); the peer is bench/mcqa_fastapi.py under uvicorn (pydantic models like
# NeMo Gym's MCQAVerifyRequest, the same extraction and grading). Both are one process. The body
# is a recorded mcqa rollout: the matching example.jsonl row (options, expected_answer,
# grading_mode, uuid, responses_create_params expanded to all create-params fields with their
# defaults, as simple_agent posts it to /verify) with the recorded `response`; both servers must
# answer it with 200 and the recorded reward before any load. 64 and 1000 connections. Prints a
# side-by-side table with the ratios and records it in bench/RESULTS.md; then runs
# bench/server_footprint.sh (idle RSS/PSS of every server kind), which records its own section.
#
# Usage: [GYM_BUILD_DIR=build] [DURATION=10] bash bench/verify_load.sh [--no-record] [--no-footprint]
#
# Environment:
#   GYM_BUILD_DIR        build dir holding src/cli/gym (default: build; relative to the repo root)
#   GYM_CONFORMANCE_DIR  conformance data root (default: ../shared/data/conformance, relative to
#                        the repo root); must hold mcqa/example.jsonl and mcqa/example_rollouts.jsonl
#   ROW                  line of mcqa/example_rollouts.jsonl to post (default 2: task 3, reward 1.0)
#   DURATION             seconds per measured wrk run (default 10)
#   WARMUP               seconds of warm-up at 64 connections before each measured run (default 2)
#   WRK_THREADS          wrk threads (default 2)
#   WRK_TIMEOUT          wrk request timeout (default 10s): an answer slower than this counts as a
#                        timeout error and wrk records no latency for it (so at 1000 connections the
#                        timeout must exceed the queueing delay of the slower server: 1000 / its req/s)
#   PYDANTIC2_PYTHON     an interpreter with pydantic 2 to time the peer's models with, beside the
#                        peer's own pydantic 1 (default: the first python3 on PATH that has it)
#   KEEP_TMP=1           keep the temp dir (configs, server logs, raw wrk output)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=verify_load.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

RECORD=1
FOOTPRINT=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --no-record) RECORD=0 ;;
    --no-footprint) FOOTPRINT=0 ;;
    -h | --help)
      sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
WRK_THREADS=${WRK_THREADS:-2}
WRK_TIMEOUT=${WRK_TIMEOUT:-10s}
ROW=${ROW:-2}
for v in DURATION WARMUP WRK_THREADS ROW; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
CONNS=(64 1000)
SERVERS=(ours fastapi)
PYTHON=/usr/bin/python3
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
GYM=$BUILD_DIR/src/cli/gym
DATA_ROOT=${GYM_CONFORMANCE_DIR:-$REPO_ROOT/../shared/data/conformance}
[[ $DATA_ROOT == /* ]] || DATA_ROOT=$REPO_ROOT/$DATA_ROOT

# --- tools and inputs --------------------------------------------------------------------
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
$PYTHON -c 'import fastapi, uvicorn, uvloop, httptools' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/uvloop/httptools (apt-get install python3-fastapi python3-uvicorn python3-uvloop python3-httptools)"
[[ -x $GYM ]] || die "gym binary not found: $GYM
  build it: cmake -S . -B ${GYM_BUILD_DIR:-build} -G Ninja -DCMAKE_BUILD_TYPE=Release -DGYM_BUILD_TESTS=OFF && cmake --build ${GYM_BUILD_DIR:-build} --target gym
  or point GYM_BUILD_DIR at the build dir that has src/cli/gym"
[[ -f $BENCH_DIR/wrk_post.lua ]] || die "missing $BENCH_DIR/wrk_post.lua"
[[ -d $DATA_ROOT ]] || die "conformance data root not found: $DATA_ROOT
  set GYM_CONFORMANCE_DIR to the directory that holds mcqa/example.jsonl and mcqa/example_rollouts.jsonl"
EXAMPLES=$DATA_ROOT/mcqa/example.jsonl
ROLLOUTS=$DATA_ROOT/mcqa/example_rollouts.jsonl
for f in "$EXAMPLES" "$ROLLOUTS"; do
  [[ -f $f ]] || die "data file not found: $f (is $DATA_ROOT the conformance data root? set GYM_CONFORMANCE_DIR)"
done

# --- temp dir, processes, cleanup --------------------------------------------------------
bench_tmpdir gym-verify-load

# --- the body: example row + recorded response --------------------------------------------
BODY=$TMP/body.json
$PYTHON - "$EXAMPLES" "$ROLLOUTS" "$ROW" "$BODY" "$TMP/expected.env" <<'EOF' || die "cannot build the /verify body (see above)"
import json, sys

examples_path, rollouts_path, row, body_path, expected_path = sys.argv[1:]
row = int(row)

def user_text(params):
    """The text of the first user message of responses_create_params.input."""
    inp = params.get("input")
    if isinstance(inp, str):
        return inp
    for item in inp or []:
        if item.get("role") == "user":
            c = item.get("content")
            if isinstance(c, str):
                return c
            return "".join(p.get("text", "") for p in c or [])
    return None

lines = open(rollouts_path, encoding="utf-8").read().splitlines()
if not 1 <= row <= len(lines):
    sys.exit(f"ROW={row}, but {rollouts_path} has {len(lines)} lines")
rec = json.loads(lines[row - 1])
for key in ("responses_create_params", "response", "reward"):
    if key not in rec:
        sys.exit(f"line {row} of {rollouts_path} has no '{key}'")
text = user_text(rec["responses_create_params"])
matches = []
for n, line in enumerate(open(examples_path, encoding="utf-8"), 1):
    if line.strip():
        ex = json.loads(line)
        if user_text(ex.get("responses_create_params", {})) == text:
            matches.append((n, ex))
if len(matches) != 1:
    sys.exit(f"line {row} of {rollouts_path}: {len(matches)} rows of {examples_path} have its user "
             "message (need exactly one)")
ex_line, example = matches[0]
for key in ("options", "expected_answer"):
    if key not in example:
        sys.exit(f"line {ex_line} of {examples_path} has no '{key}'")
# What simple_agent posts to /verify (docs/design/wire-compatibility.md#the-agents-loop): the row
# with responses_create_params expanded to every create-params field with its default, plus the
# response.
DEFAULTS = {"background": None, "include": None, "input": None, "instructions": None,
            "max_output_tokens": None, "max_tool_calls": None, "metadata": None, "model": None,
            "parallel_tool_calls": True, "previous_response_id": None, "prompt": None,
            "reasoning": None, "service_tier": None, "store": None, "temperature": None,
            "text": None, "tool_choice": "auto", "tools": [], "top_logprobs": None, "top_p": None,
            "truncation": None, "user": None, "stream": None}
params = example["responses_create_params"]
expanded = {k: params.get(k, v) for k, v in DEFAULTS.items()}
expanded.update((k, v) for k, v in params.items() if k not in DEFAULTS)
body = dict(example)
body["responses_create_params"] = expanded
body.pop("reward", None)
body.pop("extracted_answer", None)
body["response"] = rec["response"]
with open(body_path, "w", encoding="utf-8") as f:
    json.dump(body, f, ensure_ascii=False, separators=(",", ":"))
extracted = rec.get("extracted_answer")
with open(expected_path, "w") as f:
    f.write(f"EXPECTED_REWARD={float(rec['reward'])!r}\n")
    f.write(f"EXPECTED_EXTRACTED={'null' if extracted is None else extracted}\n")
    f.write(f"EXAMPLE_LINE={ex_line}\n")
    f.write(f"BODY_KEYS='{','.join(body)}'\n")
EOF
# shellcheck disable=SC1091
source "$TMP/expected.env"
BODY_BYTES=$(wc -c <"$BODY")

# The pydantic work of one request (validate the body, grade, dump the answer), without HTTP,
# on the peer's pydantic 1 and, where an interpreter has it, on pydantic 2 (NeMo Gym's). Done now,
# while no server runs.
MODEL_TIME_PEER=$($PYTHON "$BENCH_DIR/mcqa_fastapi.py" time "$BODY" 500 2>"$TMP/time_peer.err") ||
  { cat "$TMP/time_peer.err" >&2; die "bench/mcqa_fastapi.py cannot validate or grade the body"; }
MODEL_TIME_V2=
PY2=$(pydantic2_python)
if [[ -n $PY2 ]]; then
  MODEL_TIME_V2=$("$PY2" "$BENCH_DIR/mcqa_fastapi.py" time "$BODY" 500 2>"$TMP/time_v2.err") ||
    { echo "warning: timing the models with $PY2 failed: $(tail -n 1 "$TMP/time_v2.err")" >&2; MODEL_TIME_V2=; }
fi

# --- open files: 1000 client + 1000 server sockets ----------------------------------------
raise_fd_limit $((CONNS[-1] + 1000))

# --- servers -----------------------------------------------------------------------------
read -r PORT_OURS PORT_FASTAPI < <(free_ports 2)

# Telemetry stays at its default (off): drop any telemetry variables of the calling shell.
for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done

CONFIG_CMD=("$GYM" config show --resources-server mcqa --model-type replay_model "++mcqa.resources_servers.mcqa.port=$PORT_OURS")
"${CONFIG_CMD[@]}" >"$TMP/config.yaml" 2>"$TMP/config.err" ||
  { cat "$TMP/config.err" >&2; die "'gym config show' failed"; }
grep -q "port: $PORT_OURS" "$TMP/config.yaml" || die "the merged config does not carry port $PORT_OURS (see $TMP/config.yaml)"

NEMO_GYM_CONFIG_DICT=$(cat "$TMP/config.yaml") NEMO_GYM_CONFIG_PATH=mcqa \
  "$GYM" serve >"$TMP/ours.out" 2>"$TMP/ours.err" &
PID_OURS=$!
PIDS+=("$PID_OURS")

UVICORN_ARGS=(-m uvicorn mcqa_fastapi:app --app-dir "$BENCH_DIR" --host 127.0.0.1 --port "$PORT_FASTAPI"
  --loop uvloop --http httptools --workers 1 --no-access-log --log-level warning)
$PYTHON "${UVICORN_ARGS[@]}" >"$TMP/fastapi.out" 2>"$TMP/fastapi.err" &
PID_FASTAPI=$!
PIDS+=("$PID_FASTAPI")

declare -A URL PID LABEL
URL[ours]=http://127.0.0.1:$PORT_OURS/verify
URL[fastapi]=http://127.0.0.1:$PORT_FASTAPI/verify
PID[ours]=$PID_OURS
PID[fastapi]=$PID_FASTAPI

show_logs() {
  local f
  for f in "$TMP/$1.out" "$TMP/$1.err"; do
    [[ -s $f ]] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  return 0
}

# Each server must answer the body with 200 and the recorded reward (and extracted answer).
for s in "${SERVERS[@]}"; do
  code=
  for _ in $(seq 200); do
    kill -0 "${PID[$s]}" 2>/dev/null || { show_logs "$s"; die "$s server exited during start-up"; }
    code=$(curl -s -o "$TMP/$s.answer" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      --data-binary "@$BODY" "${URL[$s]}" || true)
    [[ $code == 000 || -z $code ]] || break
    sleep 0.1
  done
  [[ $code == 200 ]] || { show_logs "$s"; head -c 2000 "$TMP/$s.answer" >&2 2>/dev/null; echo >&2
    die "$s did not answer the body with 200 on ${URL[$s]} (status: ${code:-none})"; }
  read -r got_reward got_extracted < <($PYTHON -c '
import json, sys
a = json.load(open(sys.argv[1]))
e = a.get("extracted_answer")
print(repr(float(a["reward"])), "null" if e is None else e)' "$TMP/$s.answer") ||
    die "$s answered 200 but not a verify response: $(head -c 300 "$TMP/$s.answer")"
  printf '%-8s %s -> reward %s, extracted_answer %s (%s bytes)\n' "$s" "${URL[$s]}" "$got_reward" \
    "$got_extracted" "$(wc -c <"$TMP/$s.answer")"
  [[ $got_reward == "$EXPECTED_REWARD" ]] ||
    die "$s answered reward $got_reward, the recorded reward of line $ROW is $EXPECTED_REWARD (docs/design/conformance.md#where-the-recorded-data-disagrees: line 3 is the one recorded reward the current rule does not reproduce; pick another ROW)"
  [[ $got_extracted == "$EXPECTED_EXTRACTED" ]] ||
    die "$s extracted $got_extracted, the recorded extracted_answer of line $ROW is $EXPECTED_EXTRACTED"
done
# The two answers side by side: same top-level fields, same values?
ANSWER_CMP=$($PYTHON - "$TMP/ours.answer" "$TMP/fastapi.answer" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
if a == b and list(a) == list(b):
    print("the two answers are equal JSON values, with the same field order")
    raise SystemExit
parts = []
for k in list(a) + [k for k in b if k not in a]:
    x, y = a.get(k, "<absent>"), b.get(k, "<absent>")
    if x == y:
        continue
    if isinstance(x, dict) and isinstance(y, dict):
        only_a = [f for f in x if f not in y]
        only_b = [f for f in y if f not in x]
        diff = []
        for f in (f for f in x if f in y and x[f] != y[f]):
            xf, yf = x[f], y[f]
            # NeMo Gym's input-message model (and the peer's) adds "type": "message" when absent.
            if (f == "input" and isinstance(xf, list) and isinstance(yf, list) and len(xf) == len(yf)
                    and all(isinstance(i, dict) and isinstance(j, dict) and "type" not in i
                            and {**i, "type": j.get("type")} == j for i, j in zip(xf, yf))):
                diff.append('input: FastAPI adds `"type": "message"` to the input messages that lack '
                            "it, as NeMo Gym's models do; ours echoes them as received")
            else:
                diff.append(f)
        d = []
        if only_a: d.append("only ours has " + ", ".join(only_a))
        if only_b: d.append("only FastAPI has " + ", ".join(only_b))
        if diff: d.append("values differ in " + "; ".join(diff))
        parts.append(f"`{k}` ({'; '.join(d)})")
    else:
        parts.append(f"`{k}` (ours {json.dumps(x)[:60]}, FastAPI {json.dumps(y)[:60]})")
print("the two answers agree on reward, expected_answer and extracted_answer and differ in "
      + "; ".join(parts) if parts else "the two answers differ only in field order")
EOF
)
echo "$ANSWER_CMP"

# --- measurements ------------------------------------------------------------------------
mem_kb() { # pid -> "rss pss" from smaps_rollup
  awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } END { print r, p }' "/proc/$1/smaps_rollup" 2>/dev/null || echo "? ?"
}
CLK_TCK=$(getconf CLK_TCK)

read -r RSS_OURS_IDLE PSS_OURS_IDLE < <(mem_kb "$PID_OURS")
read -r RSS_FASTAPI_IDLE PSS_FASTAPI_IDLE < <(mem_kb "$PID_FASTAPI")
THREADS_OURS=$(threads "$PID_OURS")
THREADS_FASTAPI=$(threads "$PID_FASTAPI")

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(cpu_busy_pct 3)
echo
echo "Body: line $ROW of mcqa/example_rollouts.jsonl (response) + line $EXAMPLE_LINE of mcqa/example.jsonl,"
echo "$BODY_BYTES bytes. Each server is one process (threads: ours $THREADS_OURS, uvicorn $THREADS_FASTAPI);"
echo "wrk (-t$WRK_THREADS) shares the same $(nproc) cores. Load average before: $LOAD_BEFORE;"
echo "CPU busy with other work in the 3 s before the runs: ${BUSY_BEFORE}%."
[[ $BUSY_BEFORE -lt 20 ]] || echo "warning: the machine is busy; figures will be noisy (ratios still compare)" >&2
echo

WRK_BASE=(wrk "-t$WRK_THREADS" --timeout "$WRK_TIMEOUT" --latency -s "$BENCH_DIR/wrk_post.lua")
for c in "${CONNS[@]}"; do
  for s in "${SERVERS[@]}"; do
    "${WRK_BASE[@]}" -c64 "-d${WARMUP}s" "${URL[$s]}" -- "$BODY" >"$TMP/warmup_${s}_$c.txt" 2>&1 || true
    sleep 1
    ov0=$(listen_overflows)
    t0=$(cpu_ticks "${PID[$s]}")
    echo "running: ${WRK_BASE[*]} -c$c -d${DURATION}s ${URL[$s]} -- body.json" >&2
    out=$TMP/wrk_${s}_$c.txt
    "${WRK_BASE[@]}" "-c$c" "-d${DURATION}s" "${URL[$s]}" -- "$BODY" >"$out" 2>&1 || true
    t1=$(cpu_ticks "${PID[$s]}")
    ov1=$(listen_overflows)
    grep -q '^WRK_RESULT ' "$out" || { cat "$out" >&2; die "wrk failed against $s at $c connections"; }
    kill -0 "${PID[$s]}" 2>/dev/null || { show_logs "$s"; die "$s server died during the $c-connection run"; }
    { sed -n 's/^WRK_RESULT //p' "$out" | tr -d '\n'
      echo " cpu_s=$(( t1 - t0 ))/$CLK_TCK overflows=$(( ${ov1:-0} - ${ov0:-0} ))"; } >"$TMP/result_${s}_$c"
    sleep 1
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

read -r RSS_OURS_AFTER PSS_OURS_AFTER < <(mem_kb "$PID_OURS")
read -r RSS_FASTAPI_AFTER PSS_FASTAPI_AFTER < <(mem_kb "$PID_FASTAPI")
HWM_OURS=$(hwm_kb "$PID_OURS")
HWM_FASTAPI=$(hwm_kb "$PID_FASTAPI")

# --- report ------------------------------------------------------------------------------
CMD=
for v in GYM_BUILD_DIR GYM_CONFORMANCE_DIR ROW DURATION WARMUP WRK_THREADS WRK_TIMEOUT; do
  [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/verify_load.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"

SRC_DIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
BUILT_FROM="\`${GYM#"$REPO_ROOT"/}\` (${BUILD_TYPE:-unknown build type}), built $(date -u -r "$GYM" '+%Y-%m-%d %H:%M UTC') from ${SRC_DIR:-an unknown source tree}"
if [[ -n $SRC_DIR ]] && git -C "$SRC_DIR" rev-parse --git-dir >/dev/null 2>&1; then
  changed=$(git -C "$SRC_DIR" status --porcelain --untracked-files=no -- src environments CMakeLists.txt cmake | wc -l)
  BUILT_FROM+=" at commit \`$(git -C "$SRC_DIR" log -1 --format='%h %s')\`"
  if [[ $changed -eq 0 ]]; then BUILT_FROM+=", its sources unchanged from that commit"
  else BUILT_FROM+=", with $changed source files changed since that commit"; fi
fi
BUILT_FROM+="; this repo's HEAD is \`$(git -C "$REPO_ROOT" log -1 --format='%h' 2>/dev/null || echo unknown)\`"
PEER_VERSIONS=$($PYTHON -c 'import fastapi, pydantic, starlette, uvicorn, uvloop, httptools, sys
print(f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, pydantic {pydantic.VERSION}, "
      f"starlette {starlette.__version__}, uvicorn {uvicorn.__version__}, uvloop {uvloop.__version__}, "
      f"httptools {httptools.__version__}")')
ANSWER_BYTES_OURS=$(wc -c <"$TMP/ours.answer")
ANSWER_BYTES_FASTAPI=$(wc -c <"$TMP/fastapi.answer")

export TMP RECORD CMD BODY_BYTES ROW EXAMPLE_LINE EXPECTED_REWARD EXPECTED_EXTRACTED DURATION WARMUP \
  WRK_THREADS WRK_TIMEOUT LOAD_BEFORE LOAD_AFTER BUSY_BEFORE THREADS_OURS THREADS_FASTAPI \
  RSS_OURS_IDLE PSS_OURS_IDLE RSS_FASTAPI_IDLE PSS_FASTAPI_IDLE RSS_OURS_AFTER PSS_OURS_AFTER \
  RSS_FASTAPI_AFTER PSS_FASTAPI_AFTER HWM_OURS HWM_FASTAPI BUILT_FROM PEER_VERSIONS ANSWER_CMP \
  ANSWER_BYTES_OURS ANSWER_BYTES_FASTAPI BODY_KEYS MODEL_TIME_PEER MODEL_TIME_V2 PY2
CPU_MODEL=$(cpu_model)
export SECTION_FILE=$TMP/section.md CPU_MODEL CONNS_LIST="${CONNS[*]}" SERVERS_LIST="${SERVERS[*]}"
$PYTHON - <<'EOF'
import datetime, os, platform, re
from fractions import Fraction

env = os.environ
tmp = env["TMP"]
conns = [int(c) for c in env["CONNS_LIST"].split()]
servers = env["SERVERS_LIST"].split()
label = {"ours": "ours: `gym serve` mcqa", "fastapi": "FastAPI peer (`bench/mcqa_fastapi.py`)"}

res = {}
for s in servers:
    for c in conns:
        r = {}
        for kv in open(f"{tmp}/result_{s}_{c}").read().split():
            k, v = kv.split("=")
            r[k] = float(Fraction(v))
        res[s, c] = r

def errs(r):
    return int(r["connect"] + r["read"] + r["write"] + r["timeout"])

def has_latency(r):
    # wrk records no latency for an answer slower than its timeout (counted as a timeout instead)
    return r["requests"] > r["timeout"] and r["p50_ms"] > 0

head = ["server", "conns", "req/s", "p50 ms", "p99 ms", "socket errors (c/r/w/t)", "non-2xx",
        "server CPU s", "CPU us/req", "listen overflows"]
rows = []
for c in conns:
    for s in servers:
        r = res[s, c]
        per = f"{r['cpu_s'] / r['requests'] * 1e6:,.0f}" if r["requests"] else "-"
        lat = (lambda k: f"{r[k]:.2f}") if has_latency(r) else (lambda k: "n/a")
        rows.append([label[s], str(c), f"{r['rps']:,.0f}", lat("p50_ms"), lat("p99_ms"),
                     f"{errs(r)} ({int(r['connect'])}/{int(r['read'])}/{int(r['write'])}/{int(r['timeout'])})",
                     str(int(r["non2xx"])), f"{r['cpu_s']:.2f}", per, str(int(r["overflows"]))])

def table():
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(x.ljust(n) for x, n in zip(cells, w)) + " |"
    return "\n".join([line(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [line(r) for r in rows])

def ratio(a, b):
    return a / b if b else float("inf")

def x(v):
    return "inf (the peer answered nothing)" if v == float("inf") else f"{v:.1f}x"

ratios = []
for c in conns:
    o, f = res["ours", c], res["fastapi", c]
    ok = lambda r: errs(r) == 0 and r["non2xx"] == 0
    line = f"{c} connections: req/s ours/FastAPI **{x(ratio(o['rps'], f['rps']))}**"
    if has_latency(o) and has_latency(f):
        line += (f"; p50 FastAPI/ours {x(ratio(f['p50_ms'], o['p50_ms']))}, "
                 f"p99 FastAPI/ours {x(ratio(f['p99_ms'], o['p99_ms']))}")
    else:
        line += "; latency not compared (a server's answers were all slower than the wrk timeout)"
    if o["requests"] and f["requests"] and o["cpu_s"] and f["cpu_s"]:
        line += (f"; server CPU per request FastAPI/ours "
                 f"{x((f['cpu_s'] / f['requests']) / (o['cpu_s'] / o['requests']))}")
    line += f"; errors: ours {'none' if ok(o) else 'SOME'}, FastAPI {'none' if ok(f) else 'SOME'}"
    ratios.append(line)

print(table())
print()
for r in ratios:
    print("  " + r.replace("**", ""))

threads = lambda n: f"{n} thread" + ("" if n == "1" else "s")
mem = [
    f"ours (`gym serve`, {threads(env['THREADS_OURS'])}): Rss {env['RSS_OURS_IDLE']} kB / Pss "
    f"{env['PSS_OURS_IDLE']} kB after the check request; {env['RSS_OURS_AFTER']} / "
    f"{env['PSS_OURS_AFTER']} kB after the runs; peak RSS (VmHWM) {env['HWM_OURS']} kB",
    f"FastAPI peer (uvicorn, {threads(env['THREADS_FASTAPI'])}): Rss {env['RSS_FASTAPI_IDLE']} kB / Pss "
    f"{env['PSS_FASTAPI_IDLE']} kB after the check request; {env['RSS_FASTAPI_AFTER']} / "
    f"{env['PSS_FASTAPI_AFTER']} kB after the runs; peak RSS (VmHWM) {env['HWM_FASTAPI']} kB",
]
def us(text):
    m = re.search(r"([0-9.]+) us per request", text or "")
    return float(m.group(1)) if m else None

also = [f"the pydantic work of one request (validate the body, grade, dump the answer; no HTTP), "
        f"bench/mcqa_fastapi.py `time`: {env['MODEL_TIME_PEER']} (the peer as served)"]
t1, t2 = us(env["MODEL_TIME_PEER"]), us(env["MODEL_TIME_V2"])
if t1 is not None and t2 is not None:
    also.append(f"the same with pydantic 2, which NeMo Gym runs on: {env['MODEL_TIME_V2']}, "
                f"{t1 / t2:.1f}x less ({env['PY2']}, which has no FastAPI, so no served peer on it)")
    o, f = res["ours", conns[0]], res["fastapi", conns[0]]
    if o["requests"] and f["requests"] and o["cpu_s"]:
        f_us, o_us = f["cpu_s"] / f["requests"] * 1e6, o["cpu_s"] / o["requests"] * 1e6
        est = max(f_us - (t1 - t2), 1.0)
        also.append(f"ESTIMATE, not a measurement: if only that pydantic work went from pydantic 1's time "
                    f"to pydantic 2's, the peer would spend about {est:,.0f} us of CPU per request at "
                    f"{conns[0]} connections instead of {f_us:,.0f}, about {est / o_us:.1f}x ours ({o_us:,.0f} us); "
                    f"everything else (uvicorn, starlette, FastAPI's own request and response handling "
                    f"on pydantic 1, which also costs more than on pydantic 2) is left as measured, so "
                    f"the CPU-per-request gap to a NeMo Gym server would be smaller than this, by an "
                    f"unmeasured amount")
else:
    also.append("no interpreter with pydantic 2 was found (set PYDANTIC2_PYTHON), so the peer's pydantic 1 "
                "was not compared with pydantic 2, which NeMo Gym runs on")

for m in mem + also:
    print("  " + m.replace("`", ""))

if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
d, w, th, to = env["DURATION"], env["WARMUP"], env["WRK_THREADS"], env["WRK_TIMEOUT"]
section = f"""<!-- verify_load.sh:begin (generated by bench/verify_load.sh; edits here are overwritten) -->
## `/verify` of `mcqa` under load — ours (`gym serve`) vs an equivalent FastAPI app

- Date: {now}
- Machine: nproc={os.cpu_count()}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}. Load average
  (1/5/15 min) before the runs {env['LOAD_BEFORE']}, after {env['LOAD_AFTER']}; CPU busy with other
  work in the 3 s before the runs: {env['BUSY_BEFORE']}%.
- Command (repo root): `{env['CMD']}`
- Ours: {env['BUILT_FROM']}. Started as the orchestrator starts a server:
  `NEMO_GYM_CONFIG_DICT="$(gym config show --resources-server mcqa --model-type replay_model ++mcqa.resources_servers.mcqa.port=<free>)" NEMO_GYM_CONFIG_PATH=mcqa gym serve`
  (one process, `num_workers` unset, telemetry off as by default).
- Peer: `/usr/bin/python3 -m uvicorn mcqa_fastapi:app --app-dir bench --host 127.0.0.1 --port <free> --loop uvloop --http httptools --workers 1 --no-access-log --log-level warning`
  ({env['PEER_VERSIONS']}). `bench/mcqa_fastapi.py` validates the body into pydantic models
  shaped like NeMo Gym's `MCQAVerifyRequest` (strict create params with their defaults; the
  Response with typed output items and usage; `options`, `expected_answer`, `grading_mode`, ...),
  extracts and grades as environments/mcqa/README.md says (upstream's functions restated),
  answers the `MCQAVerifyResponse` model, and sets a signed session cookie on every answer as our
  server does. It is lighter than NeMo Gym's server: one pure-ASGI session middleware instead of
  NeMo Gym's three, unions of 6 item types instead of about 25; and it runs on Debian's
  pydantic 1 where NeMo Gym runs on pydantic 2.
- Body: line {env['ROW']} of `mcqa/example_rollouts.jsonl` (its `response`) merged into line
  {env['EXAMPLE_LINE']} of `mcqa/example.jsonl` (matched by the user message; fields
  `{env['BODY_KEYS']}`), with `responses_create_params` expanded to all create-params fields with
  their defaults, as simple_agent posts it to `/verify`
  (docs/design/wire-compatibility.md#the-agents-loop);
  {env['BODY_BYTES']} bytes. Checked before the runs: both servers answer
  200 with the recorded reward {env['EXPECTED_REWARD']} and extracted_answer
  {env['EXPECTED_EXTRACTED']}; answers of {env['ANSWER_BYTES_OURS']} (ours) and
  {env['ANSWER_BYTES_FASTAPI']} (FastAPI) bytes; {env['ANSWER_CMP']}.
- Each measured run: `wrk -t{th} -c<conns> -d{d}s --timeout {to} --latency -s bench/wrk_post.lua <url> -- body.json`
  after a {w} s warm-up at 64 connections, one server at a time; wrk runs on the same cores.
  Socket errors are wrk's connect/read/write/timeout counts (a timeout is an answer slower than
  {to}; wrk keeps no latency for it, hence "n/a" when every answer was); non-2xx is counted by
  `wrk_post.lua`; server CPU is the server process's user+system time during the run;
  listen overflows are the kernel's `TcpExtListenOverflows` delta.

{table()}

Ratios (same run):
{chr(10).join('- ' + r for r in ratios)}

Memory of the two processes (smaps_rollup):
{chr(10).join('- ' + m for m in mem)}

Also:
{chr(10).join('- ' + a for a in also)}
<!-- verify_load.sh:end -->
"""

with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section verify_load.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi

# --- idle footprint of every server kind (its own section) -------------------------------
if [[ $FOOTPRINT == 1 ]]; then
  # Stop the load servers first so that they do not share pages with the footprint run.
  stop_pids
  echo
  fp_args=()
  [[ $RECORD == 1 ]] || fp_args+=(--no-record)
  bash "$BENCH_DIR/server_footprint.sh" "${fp_args[@]}"
fi
