#!/usr/bin/env bash
# HTTP load benchmark: POST a real rollout row (~2.9 KB JSON) to a JSON route that parses it
# and answers a small JSON object, on our Beast server (bench/json_route_server.cpp) and on two
# FastAPI routes of one uvicorn process (bench/fastapi_app.py): /verify reads the body with
# `await request.json()` (bare), /verify_typed declares it as pydantic models shaped like a NeMo
# Gym resources server's /verify request (create params + Response), so FastAPI validates the
# whole row on every request, as NeMo Gym does. A fixed-body nginx route is the ceiling. All four
# at 64 and 4000 connections, in one run. Prints a side-by-side table with the ratios (the 8x
# goal is against the NeMo Gym-shaped route, the bare ratio is printed too) and records it in
# bench/RESULTS.md.
#
# Usage: [GYM_BUILD_DIR=build] [DURATION=10] bash bench/http_load.sh [--data-root PATH] [--no-record]
#
# Environment:
#   GYM_BUILD_DIR  build dir holding bench/json_route_server (default: build; relative to repo root)
#   GYM_DATA_ROOT  conformance data root (default: ../shared/data/conformance relative to repo root;
#                  --data-root wins)
#   DURATION       seconds per measured wrk run (default 10)
#   WARMUP         seconds of warm-up at 64 connections before each measured run (default 2)
#   WRK_THREADS    wrk threads (default 2)
#   WRK_TIMEOUT    wrk request timeout; slower answers count as timeout errors (default 2s)
#   KEEP_TMP=1     keep the temp dir (server logs, raw wrk output) for inspection
#   PYDANTIC2_PYTHON  an interpreter with pydantic 2 to time the /verify_typed models with, beside
#                  the peer's own pydantic (default: the first python3 on PATH that has it; the
#                  load runs always use /usr/bin/python3, Debian's FastAPI on pydantic 1.10)
#
# Every server gets ONE worker/process (nginx worker_processes 1, uvicorn --workers 1, ours
# --workers 1); wrk runs on the same machine and shares its cores.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench
ORIG_ARGS=("$@")
PROG=http_load.sh
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

DATA_ROOT=${GYM_DATA_ROOT:-$REPO_ROOT/../shared/data/conformance}
RECORD=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --data-root)
      [[ $# -ge 2 ]] || die "--data-root needs a path"
      DATA_ROOT=$2
      shift 2
      ;;
    --data-root=*)
      DATA_ROOT=${1#*=}
      shift
      ;;
    --no-record)
      RECORD=0
      shift
      ;;
    -h | --help)
      sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
WRK_THREADS=${WRK_THREADS:-2}
WRK_TIMEOUT=${WRK_TIMEOUT:-2s}
CONNS=(64 4000)
SERVERS=(ours fastapi fastapi_typed nginx)
PYTHON=/usr/bin/python3
BUILD_DIR=${GYM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO_ROOT/$BUILD_DIR
SERVER_BIN=$BUILD_DIR/bench/json_route_server
DATA_FILE_REL=example_single_tool_call/example_rollouts.jsonl
ROW=3
for v in DURATION WARMUP WRK_THREADS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done

# --- tools -------------------------------------------------------------------------------
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
NGINX=$(command -v nginx || true)
[[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
[[ -n $NGINX ]] || die "nginx not found (apt-get install nginx-light)"
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[[ -x $PYTHON ]] || die "$PYTHON not found"
$PYTHON -c 'import fastapi, uvicorn, uvloop, httptools' 2>/dev/null ||
  die "$PYTHON lacks fastapi/uvicorn/uvloop/httptools (apt-get install python3-fastapi python3-uvicorn python3-uvloop python3-httptools)"
[[ -x $SERVER_BIN ]] || die "server binary not found: $SERVER_BIN
  build it: cmake -S . -B ${GYM_BUILD_DIR:-build} -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build ${GYM_BUILD_DIR:-build} --target json_route_server
  or point GYM_BUILD_DIR at the build dir that has bench/json_route_server"

# --- data --------------------------------------------------------------------------------
[[ -d $DATA_ROOT ]] || die "data root not found: $DATA_ROOT
  set GYM_DATA_ROOT or pass --data-root PATH (the conformance data dir holding $DATA_FILE_REL)"
DATA_FILE=$DATA_ROOT/$DATA_FILE_REL
[[ -f $DATA_FILE ]] || die "data file not found: $DATA_FILE (is $DATA_ROOT the conformance data root?)"

# --- temp dir and cleanup ----------------------------------------------------------------
STOP_WAIT=50
bench_tmpdir gym-http-load
chmod 755 "$TMP" # nginx workers may run as another user when started by root

BODY=$TMP/body.json
sed -n "${ROW}p" "$DATA_FILE" >"$BODY"
[[ -s $BODY ]] || die "$DATA_FILE has no line $ROW"
$PYTHON -c 'import json,sys; json.load(open(sys.argv[1]))' "$BODY" ||
  die "line $ROW of $DATA_FILE is not valid JSON"
BODY_BYTES=$(($(wc -c <"$BODY") - 1)) # without the trailing newline
truncate -s "$BODY_BYTES" "$BODY"

# The NeMo Gym-shaped route must take the row as it is: validate it with the route's models first,
# then time one validation with the peer's pydantic and, where one is on this machine, pydantic 2
# (what NeMo Gym runs on). Done now, while no server is running.
$PYTHON "$BENCH_DIR/fastapi_app.py" check "$BODY" >"$TMP/check.txt" 2>&1 ||
  { cat "$TMP/check.txt" >&2; die "line $ROW does not validate against the /verify_typed models"; }
VALIDATION_PEER=$($PYTHON "$BENCH_DIR/fastapi_app.py" time "$BODY" 1000)
VALIDATION_V2=
PY2=$(pydantic2_python)
if [[ -n $PY2 ]]; then
  VALIDATION_V2=$("$PY2" "$BENCH_DIR/fastapi_app.py" time "$BODY" 1000 2>"$TMP/validation_v2.err") ||
    { echo "warning: timing the models with $PY2 failed: $(tail -n 1 "$TMP/validation_v2.err")" >&2; VALIDATION_V2=; }
fi

# --- file descriptors: 4000 client + 4000 server sockets ---------------------------------
raise_fd_limit $((CONNS[-1] + 1000))
SOMAXCONN=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo '?')

# --- servers -----------------------------------------------------------------------------
read -r PORT_FASTAPI PORT_NGINX < <(free_ports 2)

"$SERVER_BIN" --port 0 --workers 1 >"$TMP/ours.out" 2>"$TMP/ours.err" &
PID_OURS=$!
PIDS+=("$PID_OURS")

$PYTHON -m uvicorn fastapi_app:app --app-dir "$BENCH_DIR" --host 127.0.0.1 --port "$PORT_FASTAPI" \
  --loop uvloop --http httptools --workers 1 --log-level warning --no-access-log \
  --backlog 8192 >"$TMP/fastapi.out" 2>"$TMP/fastapi.err" &
PID_FASTAPI=$!
PIDS+=("$PID_FASTAPI")

# The ceiling: the same small answer as a fixed body. `return` answers POST too (nginx
# discards the request body). keepalive_requests is raised so that, like the other two
# servers, nginx never closes a busy keep-alive connection (its default is 1000 requests).
FIXED_BODY='{"reward":1.0,"items":3}'
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile $FD_LIMIT;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events {
  worker_connections 8192;
}
http {
  access_log off;
  client_body_temp_path $TMP/nginx/client_body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$PORT_NGINX backlog=8192;
    location = /verify {
      default_type application/json;
      return 200 '$FIXED_BODY';
    }
  }
}
EOF
"$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" -g 'daemon off;' \
  >"$TMP/nginx.out" 2>"$TMP/nginx.err" &
PID_NGINX=$!
PIDS+=("$PID_NGINX")

show_logs() {
  local name=${1%_typed} # both FastAPI routes are served by one process
  for f in "$TMP/$name.out" "$TMP/$name.err"; do
    [[ -s $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
  done
  [[ $name == nginx && -s $TMP/nginx/error.log ]] && { echo "--- nginx error.log" >&2; tail -n 20 "$TMP/nginx/error.log" >&2; }
  return 0
}

PORT_OURS=
for _ in $(seq 100); do
  PORT_OURS=$(sed -n 's/^LISTENING \([0-9]*\)$/\1/p' "$TMP/ours.out")
  [[ -n $PORT_OURS ]] && break
  kill -0 "$PID_OURS" 2>/dev/null || { show_logs ours; die "our server exited before listening"; }
  sleep 0.1
done
[[ -n $PORT_OURS ]] || { show_logs ours; die "our server did not print LISTENING within 10 s"; }

declare -A URL PID
URL[ours]=http://127.0.0.1:$PORT_OURS/verify
URL[fastapi]=http://127.0.0.1:$PORT_FASTAPI/verify
URL[fastapi_typed]=http://127.0.0.1:$PORT_FASTAPI/verify_typed
URL[nginx]=http://127.0.0.1:$PORT_NGINX/verify
PID[ours]=$PID_OURS
PID[fastapi]=$PID_FASTAPI
PID[fastapi_typed]=$PID_FASTAPI
PID[nginx]=$PID_NGINX

# Wait until each server answers the real POST with 200; show the answers side by side.
for s in "${SERVERS[@]}"; do
  ok=0
  for _ in $(seq 150); do
    kill -0 "${PID[$s]}" 2>/dev/null || { show_logs "$s"; die "$s server exited during start-up"; }
    code=$(curl -s -o "$TMP/$s.answer" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      --data-binary "@$BODY" "${URL[$s]}" || true)
    if [[ $code == 200 ]]; then ok=1; break; fi
    sleep 0.1
  done
  [[ $ok == 1 ]] || { show_logs "$s"; die "$s server did not answer 200 on ${URL[$s]} within 15 s (last status: ${code:-none})"; }
  printf '%-13s %s -> %s\n' "$s" "${URL[$s]}" "$(cat "$TMP/$s.answer")"
done
ANSWERS_SAME=1
for s in "${SERVERS[@]}"; do
  if [[ $(cat "$TMP/$s.answer") != "$FIXED_BODY" ]]; then
    echo "warning: $s answers differently from the others; the comparison is less like-for-like" >&2
    ANSWERS_SAME=0
  fi
done

echo
echo "Note: each server runs ONE worker/process (ours --workers 1, uvicorn --workers 1, nginx"
echo "worker_processes 1); wrk (-t$WRK_THREADS) runs on the same $(nproc) cores. Body: line $ROW of"
echo "$DATA_FILE_REL ($BODY_BYTES bytes). somaxconn=$SOMAXCONN, open files=$FD_LIMIT."
echo "/verify_typed models: $(head -n 1 "$TMP/check.txt")"
echo "one validation of the row: $VALIDATION_PEER (the peer)"
[[ -n $VALIDATION_V2 ]] && echo "one validation of the row: $VALIDATION_V2 ($PY2; not served)"
echo

# How busy the machine is with other work just before the runs (the servers are idle now).
BUSY_BEFORE=$(cpu_busy_pct 3)
echo "CPU busy with other work in the 3 s before the runs: ${BUSY_BEFORE}%"
[[ $BUSY_BEFORE -lt 20 ]] || echo "warning: the machine is busy; figures will be noisy (ratios still compare)" >&2

WRK_BASE=(wrk "-t$WRK_THREADS" --timeout "$WRK_TIMEOUT" --latency -s "$BENCH_DIR/wrk_post.lua")
for c in "${CONNS[@]}"; do
  for s in "${SERVERS[@]}"; do
    out=$TMP/wrk_${s}_$c.txt
    "${WRK_BASE[@]}" -c64 "-d${WARMUP}s" "${URL[$s]}" -- "$BODY" >"$TMP/warmup_${s}_$c.txt" 2>&1 || true
    sleep 1
    before=$(listen_overflows)
    echo "running: ${WRK_BASE[*]} -c$c -d${DURATION}s ${URL[$s]} -- body.json" >&2
    "${WRK_BASE[@]}" "-c$c" "-d${DURATION}s" "${URL[$s]}" -- "$BODY" >"$out" 2>&1 &
    wrk_pid=$!
    PIDS+=("$wrk_pid")
    # wrk counts a timeout only when a late response finally arrives, so a connection that is
    # never accepted is invisible to it. Sample the listener's accept queue (ss Recv-Q) instead.
    port=${URL[$s]#http://127.0.0.1:}
    port=${port%%/*}
    : >"$TMP/queue_${s}_$c"
    while kill -0 "$wrk_pid" 2>/dev/null; do
      ss -ltnH "( sport = :$port )" | awk '{ print $2 }' >>"$TMP/queue_${s}_$c"
      sleep 0.5
    done
    wait "$wrk_pid" || true
    after=$(listen_overflows)
    grep -q '^WRK_RESULT ' "$out" || { cat "$out" >&2; die "wrk failed against $s at $c connections"; }
    sed -n 's/^WRK_RESULT //p' "$out" | tr -d '\n' >"$TMP/result_${s}_$c"
    # Drop the last sample: it may have been taken after wrk closed its connections.
    read -r qmax qend < <(head -n -1 "$TMP/queue_${s}_$c" |
      awk 'BEGIN { m = 0; e = 0 } { if ($1 > m) m = $1; e = $1 } END { print m, e }')
    echo " overflows=$(( ${after:-0} - ${before:-0} )) queue_max=$qmax queue_end=$qend" >>"$TMP/result_${s}_$c"
    kill -0 "${PID[$s]}" 2>/dev/null || { show_logs "$s"; die "$s server died during the $c-connection run"; }
    sleep 1
  done
done

# Peak resident memory of each serving process (nginx: its single worker).
NGINX_WORKER=$(pgrep -P "$PID_NGINX" | head -n 1 || true)
RSS_OURS=$(hwm_kb "$PID_OURS")
RSS_FASTAPI=$(hwm_kb "$PID_FASTAPI")
RSS_NGINX=
if [[ -n $NGINX_WORKER ]]; then RSS_NGINX=$(hwm_kb "$NGINX_WORKER"); fi
ACCEPT_WARNINGS=$(grep -c 'accept failed' "$TMP/ours.err" || true)

# The exact command, as it was typed (the variables that were set, then the script).
CMD=
for v in GYM_BUILD_DIR GYM_DATA_ROOT DURATION WARMUP WRK_THREADS WRK_TIMEOUT; do
  [[ -n ${!v+x} ]] && [[ -n $(printenv "$v" || true) ]] && CMD+="$v=$(printenv "$v") "
done
CMD+="bash bench/http_load.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"

# What the server binary was built from: the build dir's source tree, its commit, and whether its
# C++ sources differ from that commit.
HEAD_HERE=$(git -C "$REPO_ROOT" log -1 --format='%h' 2>/dev/null || echo unknown)
BIN_TIME=$(date -u -r "$SERVER_BIN" '+%Y-%m-%d %H:%M UTC')
SRC_DIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
BUILT_FROM="\`${SERVER_BIN#"$REPO_ROOT"/}\`, built $BIN_TIME from ${SRC_DIR:-an unknown source tree}"
[[ $SRC_DIR == "$REPO_ROOT" ]] && BUILT_FROM+=" (this work tree)"
if [[ -n $SRC_DIR ]] && git -C "$SRC_DIR" rev-parse --git-dir >/dev/null 2>&1; then
  changed=$(git -C "$SRC_DIR" status --porcelain -- src include bench/json_route_server.cpp \
    bench/CMakeLists.txt CMakeLists.txt cmake | wc -l)
  BUILT_FROM+=" at commit \`$(git -C "$SRC_DIR" log -1 --format='%h %s')\`"
  if [[ $changed -eq 0 ]]; then
    BUILT_FROM+=", its C++ sources unchanged from that commit"
  else
    BUILT_FROM+=", with $changed C++ source files changed or new since that commit"
  fi
fi
BUILT_FROM+="; this repo's HEAD is \`$HEAD_HERE\`"
FASTAPI_VERSIONS=$($PYTHON -c 'import fastapi, pydantic, uvicorn, sys
print(f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, pydantic {pydantic.VERSION}, uvicorn {uvicorn.__version__}")')

export TMP RECORD CMD BODY_BYTES ROW DATA_FILE_REL DURATION WARMUP WRK_THREADS WRK_TIMEOUT SOMAXCONN \
  BUSY_BEFORE RSS_OURS RSS_FASTAPI RSS_NGINX ACCEPT_WARNINGS BUILT_FROM FASTAPI_VERSIONS \
  VALIDATION_PEER VALIDATION_V2 PY2 ANSWERS_SAME
CPU_MODEL=$(cpu_model)
export SECTION_FILE=$TMP/section.md CPU_MODEL
export CONNS_LIST="${CONNS[*]}" SERVERS_LIST="${SERVERS[*]}"
$PYTHON - <<'EOF'
import datetime, os, platform, re, subprocess

env = os.environ
tmp = env["TMP"]
conns = [int(c) for c in env["CONNS_LIST"].split()]
servers = env["SERVERS_LIST"].split()
label = {
    "ours": "ours (Beast, gym_http)",
    "fastapi": "FastAPI, request.json()",
    "fastapi_typed": "FastAPI, pydantic models like NeMo Gym's /verify",
    "nginx": "nginx fixed body",
}

res = {}
for s in servers:
    for c in conns:
        with open(f"{tmp}/result_{s}_{c}") as f:
            res[s, c] = {k: float(v) for k, v in (kv.split("=") for kv in f.read().split())}

def errors(r):
    return int(r["connect"] + r["read"] + r["write"] + r["timeout"])

rows = []
for c in conns:
    for s in servers:
        r = res[s, c]
        rows.append([
            label[s], str(c), f"{r['rps']:,.0f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}",
            f"{errors(r)} ({int(r['connect'])}/{int(r['read'])}/{int(r['write'])}/{int(r['timeout'])})",
            str(int(r["non2xx"])), f"{int(r['queue_max'])} / {int(r['queue_end'])}",
            str(int(r["overflows"])),
        ])
head = ["server", "conns", "req/s", "p50 ms", "p99 ms", "socket errors (c/r/w/t)", "non-2xx",
        "accept queue max / end", "listen overflows"]

def ratio(a, b):
    return res[a[0], a[1]]["rps"] / res[b[0], b[1]]["rps"] if res[b[0], b[1]]["rps"] else float("inf")

def x(r, digits=1):
    return f"{r:.{digits}f}x" if r != float("inf") else "inf (the peer answered nothing)"

lo, hi = conns[0], conns[-1]
r_ty = ratio(("ours", lo), ("fastapi_typed", lo))
r_fa = ratio(("ours", lo), ("fastapi", lo))
r_ng = ratio(("ours", lo), ("nginx", lo))
r_ty_hi = ratio(("ours", hi), ("fastapi_typed", hi))
r_fa_hi = ratio(("ours", hi), ("fastapi", hi))
r_ng_hi = ratio(("ours", hi), ("nginx", hi))
ours_hi = res["ours", hi]
ours_hi_bad = errors(ours_hi) + int(ours_hi["non2xx"]) + int(ours_hi["queue_end"])
verdict = lambda ok: "MET" if ok else "MISSED"
targets = [
    f"ours / FastAPI with pydantic models like NeMo Gym's /verify (the server the product replaces) "
    f"at {lo} connections: {x(r_ty)} (goal >= 8x): {verdict(r_ty >= 8)}",
    f"ours / FastAPI with bare request.json() at {lo} connections: {x(r_fa)} "
    f"({'would meet' if r_fa >= 8 else 'would miss'} 8x against this peer)",
    f"ours/nginx at {lo} connections: {x(r_ng, 2)} (goal >= 0.5x): {verdict(r_ng >= 0.5)}",
    f"ours errors at {hi} connections: {errors(ours_hi)} socket errors, {int(ours_hi['non2xx'])} non-2xx, "
    f"{int(ours_hi['queue_end'])} connections still unaccepted at the end (goal: none): "
    f"{verdict(ours_hi_bad == 0)}",
]

def us(text):
    m = re.search(r"([0-9.]+) us per validation", text or "")
    return float(m.group(1)) if m else None

t_peer, t_v2 = us(env["VALIDATION_PEER"]), us(env["VALIDATION_V2"])
typed_rps = res["fastapi_typed", lo]["rps"]
info = [
    f"at {hi} connections: ours / FastAPI NeMo Gym-shaped {x(r_ty_hi)}, ours / FastAPI bare "
    f"{x(r_fa_hi)}, ours/nginx {x(r_ng_hi, 2)}",
    f"FastAPI NeMo Gym-shaped / bare at {lo} connections: "
    f"{x(ratio(('fastapi_typed', lo), ('fastapi', lo)), 2)} (the cost of validating the row into models)",
    f"one validation of the row by the /verify_typed models: {env['VALIDATION_PEER']} (the peer as run)",
]
bare_rps = res["fastapi", lo]["rps"]
if t_peer is not None and t_v2 is not None and typed_rps > 0 and bare_rps > 0:
    # Debian's FastAPI 0.92 cannot run on pydantic 2, so this is an ESTIMATE of the NeMo
    # Gym-shaped peer on pydantic 2, from its measured time per request (1 / req/s, one worker)
    # and two assumptions that bracket it; FastAPI, starlette and uvicorn stay as measured.
    #   a) only the micro-benchmarked validation time changes (t_peer -> t_v2);
    #   b) the whole measured typed-minus-bare time per request is pydantic work and shrinks by
    #      the micro-benchmarked factor t_v2 / t_peer (in-process timings of the two routes put
    #      the typed route's extra time at more than one micro-benchmarked validation).
    per_typed, per_bare = 1.0 / typed_rps, 1.0 / bare_rps
    est_low = 1.0 / max(per_typed - (t_peer - t_v2) * 1e-6, per_bare)
    est_high = 1.0 / (per_bare + max(per_typed - per_bare, 0.0) * t_v2 / t_peer)
    est_low, est_high = sorted((est_low, est_high))
    ours_rps = res["ours", lo]["rps"]
    info.append(
        f"one validation with pydantic 2, what NeMo Gym runs on: {env['VALIDATION_V2']} "
        f"({t_peer / t_v2:.1f}x faster; measured with {env['PY2']}, which has no FastAPI). "
        f"ESTIMATE, not a measurement: on pydantic 2 the NeMo Gym-shaped peer would do about "
        f"{est_low:,.0f} to {est_high:,.0f} req/s at {lo} connections, and ours/it would be about "
        f"{ours_rps / est_high:.1f}x to {ours_rps / est_low:.1f}x (the two ends: only the validation "
        f"time above changes; or the whole typed-minus-bare time per request shrinks by that factor)")
else:
    info.append("no interpreter with pydantic 2 was found or could time the models (set "
                "PYDANTIC2_PYTHON), so the cost of the peer's pydantic 1.10 was not compared with "
                "pydantic 2's, which NeMo Gym runs on")
info += [
    f"peak RSS (VmHWM): ours {env['RSS_OURS'] or '?'} kB, uvicorn (both FastAPI routes) "
    f"{env['RSS_FASTAPI'] or '?'} kB, nginx worker {env['RSS_NGINX'] or '?'} kB",
    f"our server logged {env['ACCEPT_WARNINGS'] or 0} 'accept failed' warnings; listen backlog 4096 "
    f"(ours), 8192 (uvicorn, nginx), capped by net.core.somaxconn={env['SOMAXCONN']}",
]

def table(md):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    fmt = lambda cells: "| " + " | ".join(x.ljust(w) for x, w in zip(cells, widths)) + " |"
    out = [fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join(out + [fmt(r) for r in rows])

print(table(False))
print()
for t in targets:
    print("  " + t)
for t in info:
    print("  " + t)

if env["RECORD"] != "1":
    print("\n(--no-record: bench/RESULTS.md left unchanged)")
    raise SystemExit(0)

nproc = os.cpu_count()
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
d, w, th, to = env["DURATION"], env["WARMUP"], env["WRK_THREADS"], env["WRK_TIMEOUT"]
fixed_body = open(f"{tmp}/nginx.answer").read()
answers = (f"every route answers `{fixed_body}`" if env["ANSWERS_SAME"] == "1" else
           f"the answers DIFFER (see the script's output); nginx answers `{fixed_body}`")
section = f"""<!-- http_load.sh:begin (generated by bench/http_load.sh; edits here are overwritten) -->
## HTTP load: JSON `/verify` route — ours vs FastAPI (bare and NeMo Gym-shaped) vs nginx

- Date: {now}
- Machine: nproc={nproc}, CPU: {env['CPU_MODEL']}, kernel {platform.release()}; CPU busy with
  other work in the 3 s before the runs: {env['BUSY_BEFORE']}%
- Command (repo root): `{env['CMD']}`
- Server binary: {env['BUILT_FROM']}.
- Each measured run: `wrk -t{th} -c<conns> -d{d}s --timeout {to} --latency -s bench/wrk_post.lua <url> -- body.json`
  after a {w} s warm-up at 64 connections; body = line {env['ROW']} of
  `{env['DATA_FILE_REL']}` ({env['BODY_BYTES']} bytes), `Content-Type: application/json`.
  Checked before the runs: {answers}.
- One worker/process per server: ours `--workers 1`; uvicorn `--workers 1 --loop uvloop
  --http httptools --backlog 8192` ({env['FASTAPI_VERSIONS']}), ONE process serving both
  FastAPI routes, loaded one after the other; nginx `worker_processes 1`, `return 200` fixed
  body, `keepalive_requests 1000000`. wrk shares the same cores.
- The two FastAPI routes (`bench/fastapi_app.py`): `/verify` reads `await request.json()` with no
  model. `/verify_typed` declares the body as pydantic models with the structure of a NeMo Gym
  resources server's /verify request (`responses_create_params`: create params, strict, with
  their defaults; `response`: the Response with `output` a union of message / function_call /
  function_call_output / reasoning items told apart by `type`, usage with token details), so
  FastAPI validates the whole row into typed models on every request, as NeMo Gym does. Its
  models are lighter than NeMo Gym's (a 4-member union told apart by `type` where NeMo Gym
  tries about 25 item types; no middleware) and it answers the small object where NeMo Gym's
  /verify response model is the whole request plus the reward; but it runs on Debian's pydantic
  1.10 (pure Python), where NeMo Gym runs on pydantic 2, whose validation is faster (see "Also").
- Socket errors are wrk's connect/read/write/timeout counts; non-2xx are counted by
  `wrk_post.lua`. wrk counts a timeout only when a late answer finally arrives, so a
  connection the server never accepts is not an error to wrk: "accept queue max / end" is the
  listener's accept-queue depth (`ss` Recv-Q, sampled every 0.5 s) at its peak and at the last
  sample of the run; a non-zero end means that many connections got no answer at all.
  Listen overflows are the kernel's `TcpExtListenOverflows` delta during the run.

{table(True)}

Targets:
{chr(10).join('- ' + t for t in targets)}

Also:
{chr(10).join('- ' + t for t in info)}
<!-- http_load.sh:end -->
"""

with open(env["SECTION_FILE"], "w") as f:
    f.write(section)
EOF
if [[ $RECORD == 1 ]]; then record_section http_load.sh "$TMP/section.md" "$BENCH_DIR/RESULTS.md"; fi
