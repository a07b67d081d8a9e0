#!/usr/bin/env bash
# Instructions per request on the HTTP hot paths, counted with callgrind (bench/RESULTS.md, "HTTP
# hot paths, counted"):
# - server: one `gym serve` of example_single_tool_call's resources server under
#   `valgrind --tool=callgrind`; WARM x CONNS warm-up POSTs to /seed_session from
#   bench/http_client_bench, counters zeroed (`callgrind_control -z`), REQS x CONNS POSTs, a dump
#   (`callgrind_control -d`); the dump's instructions divided by REQS x CONNS;
# - client: bench/http_client_bench itself under callgrind against the same server run natively,
#   once with WARM and once with WARM + REQS requests per connection; the difference of the two
#   totals divided by REQS x CONNS (start-up and warm-up cancel out).
# Telemetry is off (its default) unless TELEMETRY=console (console exporter to a file).
#
# Usage: GYM_BUILD_DIR=build [CONNS=8] [WARM=100] [REQS=500] [TELEMETRY=off|console]
#        bash bench/http_callgrind.sh
set -euo pipefail
PROG=http_callgrind.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD=${GYM_BUILD_DIR:-build}
GYM=$BUILD/src/cli/gym
BENCH=$BUILD/bench/http_client_bench
CONNS=${CONNS:-8}
WARM=${WARM:-100}
REQS=${REQS:-500}
TELEMETRY=${TELEMETRY:-off}
[[ -x $GYM && -x $BENCH ]] || die "build gym and http_client_bench in $BUILD first"
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
  die "valgrind (callgrind) is not installed"
bench_tmpdir http_callgrind

for v in $(compgen -e); do
  case $v in NEMO_GYM_OTEL_* | NEMO_LENS_* | OTEL_*) unset "$v" ;; esac
done
if [[ $TELEMETRY == console ]]; then
  export NEMO_GYM_OTEL_ENABLED=1 NEMO_GYM_OTEL_EXPORTER=console
  export NEMO_GYM_OTEL_CONSOLE_PATH=$TMP/telemetry.jsonl
fi

read -r PORT < <(free_ports 1)
"$GYM" config show --resources-server example_single_tool_call --model-type replay_model \
  "++example_single_tool_call.resources_servers.example_single_tool_call.port=$PORT" \
  >"$TMP/config.yaml" 2>"$TMP/config.err" || { cat "$TMP/config.err" >&2; die "'gym config show' failed"; }
URL=http://127.0.0.1:$PORT/seed_session

SERVER=
# start_server [PREFIX...]: `gym serve` (under PREFIX, e.g. valgrind) until its port answers.
start_server() {
  NEMO_GYM_CONFIG_DICT=$(cat "$TMP/config.yaml") NEMO_GYM_CONFIG_PATH=example_single_tool_call \
    "$@" "$GYM" serve >"$TMP/server.out" 2>"$TMP/server.err" &
  SERVER=$!
  PIDS+=("$SERVER")
  for _ in $(seq 600); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
    kill -0 "$SERVER" 2>/dev/null || { cat "$TMP/server.err" >&2; die "gym serve exited"; }
    sleep 0.1
  done
  die "gym serve did not listen on $PORT within 60 s"
}

stop_server() {
  kill -TERM "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  PIDS=()
}

# The total instructions (Ir) of a callgrind output file.
total_ir() {
  awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# Server side.
start_server valgrind --tool=callgrind "--callgrind-out-file=$TMP/server.%p"
"$BENCH" "$URL" "$CONNS" "$WARM" >/dev/null
callgrind_control -z "$SERVER" >/dev/null 2>&1
"$BENCH" "$URL" "$CONNS" "$REQS" >"$TMP/measured.out"
callgrind_control -d "$SERVER" >/dev/null 2>&1
for _ in $(seq 100); do [[ -s $TMP/server.$SERVER.1 ]] && break; sleep 0.1; done
SERVER_IR=$(total_ir "$TMP/server.$SERVER.1")
stop_server

# Client side, against the same server without valgrind.
start_server
valgrind --tool=callgrind "--callgrind-out-file=$TMP/client.short" \
  "$BENCH" "$URL" "$CONNS" "$WARM" >/dev/null 2>"$TMP/client.short.err"
valgrind --tool=callgrind "--callgrind-out-file=$TMP/client.long" \
  "$BENCH" "$URL" "$CONNS" "$((WARM + REQS))" >/dev/null 2>"$TMP/client.long.err"
stop_server
SHORT_IR=$(total_ir "$TMP/client.short")
LONG_IR=$(total_ir "$TMP/client.long")

N=$((CONNS * REQS))
echo "telemetry=$TELEMETRY connections=$CONNS warm-up=$((CONNS * WARM)) measured=$N"
echo "server: $SERVER_IR instructions, $((SERVER_IR / N)) per request"
echo "client: $SHORT_IR / $LONG_IR instructions ($((CONNS * WARM)) / $((CONNS * (WARM + REQS))) requests), $(((LONG_IR - SHORT_IR) / N)) per request"
