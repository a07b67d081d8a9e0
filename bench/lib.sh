# shellcheck shell=bash
# Shell helpers shared by the bench/ scripts. Source it after `set -euo pipefail` and after setting
# PROG (the script's name, used in messages):
#
#   PROG=e2e_load.sh
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Processes started by the script go into PIDS (bench_cleanup stops them, TERM then KILL); the
# temp dir made by bench_tmpdir is removed on exit unless KEEP_TMP=1. A script's report goes into
# its own section of bench/RESULTS.md through record_section.

PYTHON=${PYTHON:-/usr/bin/python3}
PIDS=()
TMP=

die() {
  echo "${PROG:-bench}: error: $*" >&2
  exit 1
}

# The arguments of a script that records its section in bench/RESULTS.md: --no-record (sets
# RECORD=0; RECORD is 1 otherwise) and -h/--help (prints the script's header comment).
bench_record_args() {
  RECORD=1
  while [[ $# -gt 0 ]]; do
    case $1 in
      --no-record) RECORD=0 ;;
      -h | --help)
        awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
        exit 0
        ;;
      *) die "unknown argument '$1' (try --help)" ;;
    esac
    shift
  done
}

warn() {
  echo "${PROG:-bench}: warning: $*" >&2
}

# stop_pids: stop every process of PIDS (TERM to all, then for each a wait of up to STOP_WAIT
# tenths of a second, default 100, and KILL), then empty PIDS.
stop_pids() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq "${STOP_WAIT:-100}"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

# The exit trap: stop_pids, then remove TMP. Optional hooks (function names):
# BENCH_CLEANUP_HOOK runs first, BENCH_CLEANUP_AFTER_HOOK once the processes are stopped.
bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n ${BENCH_CLEANUP_HOOK:-} ]]; then "$BENCH_CLEANUP_HOOK" || true; fi
  stop_pids
  if [[ -n ${BENCH_CLEANUP_AFTER_HOOK:-} ]]; then "$BENCH_CLEANUP_AFTER_HOOK" || true; fi
  if [[ -n $TMP && -d $TMP ]]; then
    if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "kept temp dir: $TMP" >&2; else rm -rf "$TMP"; fi
  fi
  exit "$rc"
}

# bench_tmpdir NAME: make TMP (mktemp under TMPDIR) and install the cleanup traps.
bench_tmpdir() {
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# free_ports N: print N distinct free TCP ports of 127.0.0.1 (bound together, then released).
free_ports() {
  "$PYTHON" - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
}

# raise_fd_limit NEED: raise the soft open-file limit to min(65536, hard limit); die when that is
# below NEED. Sets FD_LIMIT.
raise_fd_limit() {
  local hard want=65536
  hard=$(ulimit -Hn)
  [[ $hard != unlimited && $hard -lt $want ]] && want=$hard
  ulimit -n "$want" || die "cannot raise the open-file limit to $want"
  [[ $want -ge $1 ]] || die "open-file limit $want is below the $1 this run needs (raise the hard limit: ulimit -Hn)"
  FD_LIMIT=$want
  export FD_LIMIT
}

# wait_http URL PID SECONDS [NAME]: wait until GET URL answers 2xx; die when PID exits first or
# the time is up.
wait_http() {
  local url=$1 pid=$2 secs=$3 name=${4:-$1}
  for _ in $(seq $((secs * 10))); do
    curl -sf -o /dev/null --max-time 2 "$url" && return 0
    kill -0 "$pid" 2>/dev/null || die "$name exited before answering $url"
    sleep 0.1
  done
  die "$name did not answer $url within $secs s"
}

# wait_log FILE PATTERN PID SECONDS [NAME]: wait until FILE has a line matching PATTERN (grep -E).
wait_log() {
  local file=$1 pattern=$2 pid=$3 secs=$4 name=${5:-process}
  for _ in $(seq $((secs * 10))); do
    grep -qE "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$file" >&2; die "$name exited before printing '$pattern'"; }
    sleep 0.1
  done
  tail -n 40 "$file" >&2
  die "$name did not print '$pattern' within $secs s"
}

# cpu_busy_pct SECONDS: % of all CPU time spent busy (any process) during SECONDS.
cpu_busy_pct() {
  local a b
  read -r -a a </proc/stat
  sleep "$1"
  read -r -a b </proc/stat
  local busy=$((b[1] + b[2] + b[3] + b[6] + b[7] - a[1] - a[2] - a[3] - a[6] - a[7]))
  local idle=$((b[4] + b[5] - a[4] - a[5]))
  echo $((100 * busy / (busy + idle > 0 ? busy + idle : 1)))
}

# listen_overflows: the kernel's TcpExtListenOverflows counter.
listen_overflows() {
  awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) n[i] = $i; h = 1 } else { for (i = 1; i <= NF; i++) if (n[i] == "ListenOverflows") print $i } }' /proc/net/netstat
}

# threads PID: the number of threads of PID.
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }

# proc_tree PID: PID and all its descendants, one per line.
proc_tree() {
  local p kids
  echo "$1"
  kids=$(cat "/proc/$1/task/"*/children 2>/dev/null || true)
  for p in $kids; do proc_tree "$p"; done
}

# hwm_kb PID: peak resident set size (VmHWM) in kB; empty when the process is gone.
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }

# tree_hwm_kb PID: the VmHWM of PID and its descendants, summed.
tree_hwm_kb() {
  local p sum=0 v
  for p in $(proc_tree "$1"); do
    v=$(hwm_kb "$p")
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}

# reset_hwm PID...: reset the peak RSS (VmHWM) of each process to its current RSS (writes 5 to
# /proc/PID/clear_refs; needs to own the process). Returns 1 when any reset failed.
reset_hwm() {
  local p ok=0
  for p in "$@"; do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || ok=1; done
  return $ok
}

# cpu_ticks PID: user + system time in clock ticks (fields 14, 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# tree_cpu_ticks PID: cpu_ticks summed over PID and its descendants.
tree_cpu_ticks() {
  local p sum=0
  for p in $(proc_tree "$1"); do sum=$((sum + $(cpu_ticks "$p"))); done
  echo "$sum"
}

# build_info GYM BUILD_DIR REPO_ROOT: one sentence on what the gym binary was built from.
build_info() {
  local gym=$1 build_dir=$2 repo_root=$3 src type changed out
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
  out="\`${gym#"$repo_root"/}\` (${type:-unknown build type}), built $(date -u -r "$gym" '+%Y-%m-%d %H:%M UTC') from ${src:-an unknown source tree}"
  if [[ -n $src ]] && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    local paths=(src environments CMakeLists.txt cmake) last subject
    changed=$(git -C "$src" status --porcelain --untracked-files=no -- "${paths[@]}" | wc -l)
    # The last commit that touched the C++ sources (later commits may have changed bench/ only).
    last=$(git -C "$src" log -1 --format='%h' -- "${paths[@]}")
    subject=$(git -C "$src" log -1 --format='%s' "$last")
    ((${#subject} <= 72)) || subject="${subject:0:72}..."
    out+=", whose C++ sources are those of commit \`$last $subject\`"
    if [[ $changed -eq 0 ]]; then out+=" (unchanged since)"
    else out+=" with $changed files changed since"; fi
  fi
  echo "$out"
}

# pydantic2_python: an interpreter with pydantic 2 (what NeMo Gym runs on), to time a peer's models
# with beside PYTHON's own pydantic: PYDANTIC2_PYTHON when set, else the first python3 on PATH
# other than PYTHON that has it; prints nothing when there is none.
pydantic2_python() {
  local cand
  if [[ -n ${PYDANTIC2_PYTHON:-} ]]; then
    echo "$PYDANTIC2_PYTHON"
    return
  fi
  while read -r cand; do
    [[ $(readlink -f "$cand") == "$(readlink -f "$PYTHON")" ]] && continue
    if "$cand" -c 'import sys, pydantic; sys.exit(int(pydantic.VERSION.split(".")[0]) < 2)' 2>/dev/null; then
      echo "$cand"
      return
    fi
  done < <(type -ap python3 || true)
}

# --- the report in bench/RESULTS.md ---------------------------------------------------------------

# cpu_model: the CPU's model name, for the machine line of a report.
cpu_model() {
  "$PYTHON" - <<'EOF'
import platform

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"

print(cpu_model())
EOF
}

# record_section NAME SECTION_FILE RESULTS_FILE: put the section in SECTION_FILE (generated text
# from "<!-- NAME:begin" to "<!-- NAME:end -->" and its newline) into RESULTS_FILE: in place of
# the first section of NAME there (its end line's newline included), else appended after one
# blank line. A missing RESULTS_FILE starts as "# Benchmark results". Prints where it went.
record_section() {
  "$PYTHON" - "$@" <<'EOF'
import os, re, sys

name, section_path, path = sys.argv[1:]
with open(section_path) as f:
    section = f.read()
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pat = re.compile(r"<!-- " + re.escape(name) + r":begin.*?<!-- " + re.escape(name) + r":end -->\n?", re.S)
if pat.search(text):
    text = pat.sub(lambda _: section, text, count=1)
else:
    text = text.rstrip("\n") + "\n\n" + section
with open(path, "w") as f:
    f.write(text)
print(f"\nrecorded in {path}")
EOF
}

# --- end-to-end rollout runs (bench/e2e_load.sh, bench/telemetry_overhead.sh) -------------------

# now_ns: the wall clock in nanoseconds.
now_ns() { date +%s%N; }

# busy_ticks: CPU time spent busy by the whole machine (all cores), in clock ticks.
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# rollouts_for SPEC LEVEL: the N of "LEVEL:N" in SPEC ("C:N C:N ...").
rollouts_for() {
  local kv
  for kv in $1; do [[ ${kv%%:*} == "$2" ]] && { echo "${kv#*:}"; return; }; done
  die "no rollout count for concurrency $2 in '$1'"
}

# split_count N: "limit repeats" with N = limit * repeats, limit <= TASKS (the caller's number of
# distinct tasks), the fewest repeats.
split_count() {
  local n=$1 r=$(((${1} + TASKS - 1) / TASKS))
  while ((n % r != 0)); do r=$((r + 1)); done
  echo "$((n / r)) $r"
}

# server_instances HEAD_PORT FILE: GET /server_instances of a `gym env start` head server into
# FILE, then print one "kind<TAB>pid<TAB>url" line per server (kind: resources, agent, model).
server_instances() {
  curl -sf "http://127.0.0.1:$1/server_instances" >"$2" ||
    die "GET http://127.0.0.1:$1/server_instances failed"
  "$PYTHON" - "$2" <<'EOF'
import json, sys
kind = {"resources_servers": "resources", "responses_api_agents": "agent", "responses_api_models": "model"}
for i in json.load(open(sys.argv[1])):
    print(kind[i["server_type"]], i["pid"], i["url"], sep="\t")
EOF
}

# check_run NAME URL ROW: POST the input row in file ROW to URL/run once (answer in
# TMP/NAME.run.json); die unless it is a 200 replaying the recorded trajectory with reward 1.0.
check_run() {
  local code
  code=$(curl -s -o "$TMP/$1.run.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "@$3" "$2/run" || true)
  [[ $code == 200 ]] || die "$1: POST $2/run answered ${code:-nothing}: $(head -c 500 "$TMP/$1.run.json" 2>/dev/null)"
  "$PYTHON" -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(r.get("reward") != 1.0 or [o["type"] for o in r["response"]["output"]] != ["function_call", "function_call_output", "message"])' \
    "$TMP/$1.run.json" || die "$1: /run did not replay the recorded rollout with reward 1.0: $(head -c 500 "$TMP/$1.run.json")"
}

# measure_run DIR NAME SPECS CMD...: run the collector command CMD under /usr/bin/time (its
# output in DIR/collector.log, its peak RSS and CPU in DIR/time.txt) and measure the processes of
# SPECS over the run. SPECS: "label:pid:tree" (a server: the pid and its descendants, summed) or
# "label:pid:self" (that process alone) words. Before the run each process's peak RSS (VmHWM) is
# reset; after it, read with the CPU time used meanwhile. Sets MEASURED to the tab-separated
# "rc wall_s collector_rss_kb collector_cpu_s machine_busy_s" followed by "label:hwm_kb:cpu_s" per
# word of SPECS. Dies when a process of SPECS is not running (NAME names them in the message).
measure_run() {
  local dir=$1 name=$2 specs=$3
  shift 3
  local -a labels=() pids=() modes=() cpu0=() cpu1=() hwm=()
  local spec label pid mode i tk rc=0 t0 t1 busy0 busy1
  tk=$(getconf CLK_TCK)
  for spec in $specs; do
    IFS=: read -r label pid mode <<<"$spec"
    labels+=("$label")
    pids+=("$pid")
    modes+=("$mode")
  done
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null || die "$name ${labels[$i]} (pid ${pids[$i]}) is not running"
    if [[ ${modes[$i]} == self ]]; then
      reset_hwm "${pids[$i]}" || warn "cannot reset the peak RSS of $name ${labels[$i]}; its figure is the peak since start"
      cpu0+=("$(cpu_ticks "${pids[$i]}")")
    else
      # shellcheck disable=SC2046 # one pid per word
      reset_hwm $(proc_tree "${pids[$i]}") || warn "cannot reset the peak RSS of $name ${labels[$i]}; its figure is the peak since start"
      cpu0+=("$(tree_cpu_ticks "${pids[$i]}")")
    fi
  done
  busy0=$(busy_ticks)
  t0=$(now_ns)
  /usr/bin/time -f '%M %U %S' -o "$dir/time.txt" "$@" >"$dir/collector.log" 2>&1 || rc=$?
  t1=$(now_ns)
  busy1=$(busy_ticks)
  for i in "${!pids[@]}"; do
    if [[ ${modes[$i]} == self ]]; then
      hwm+=("$(hwm_kb "${pids[$i]}")")
      cpu1+=("$(cpu_ticks "${pids[$i]}")")
    else
      hwm+=("$(tree_hwm_kb "${pids[$i]}")")
      cpu1+=("$(tree_cpu_ticks "${pids[$i]}")")
    fi
  done
  local col_rss col_user col_sys
  read -r col_rss col_user col_sys < <(tail -n 1 "$dir/time.txt")
  MEASURED="$rc	$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')	${col_rss:-0}	$(awk -v u="${col_user:-0}" -v s="${col_sys:-0}" 'BEGIN { printf "%.2f", u + s }')	$(awk -v a="$busy0" -v b="$busy1" -v t="$tk" 'BEGIN { printf "%.2f", (b - a) / t }')"
  for i in "${!pids[@]}"; do
    MEASURED+="	${labels[$i]}:${hwm[$i]:-0}:$(awk -v a="${cpu0[$i]}" -v b="${cpu1[$i]}" -v t="$tk" 'BEGIN { printf "%.2f", (b - a) / t }')"
  done
}

# check_rollouts OUT N RECORDED RC: check the output OUT of a collector run that exited with RC
# against bench/e2e_data.py's recorded rollouts RECORDED: exit code 0, N rows, each (task, rollout)
# once, reward 1.0, the recorded trajectory and usage, no rows in OUT's _failures.jsonl. Prints one
# line saying so or listing the problems; returns 1 on any problem.
check_rollouts() {
  "$PYTHON" - "$@" <<'EOF'
import json, os, sys
out, n, recorded_path, rc = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
stem = out[: -len(".jsonl")]
problems = []
if rc != 0:
    problems.append(f"collector exit code {rc}")
failures = f"{stem}_failures.jsonl"
nf = sum(1 for line in open(failures) if line.strip()) if os.path.exists(failures) else 0
if nf:
    problems.append(f"{nf} failure rows in {failures}")
recorded = {}
for line in open(recorded_path, encoding="utf-8"):
    r = json.loads(line)
    recorded[r["responses_create_params"]["input"][1]["content"]] = r["response"]
seen = set()
rows = 0
for line in open(out, encoding="utf-8") if os.path.exists(out) else []:
    rows += 1
    r = json.loads(line)
    key = (r.get("_ng_task_index"), r.get("_ng_rollout_index"))
    if key in seen:
        problems.append(f"(task, rollout) {key} twice")
    seen.add(key)
    if r.get("reward") != 1.0:
        problems.append(f"{key}: reward {r.get('reward')}")
    rec = recorded.get(r["responses_create_params"]["input"][1]["content"])
    got = r["response"]["output"]
    if rec is None:
        problems.append(f"{key}: not a task of the data")
    elif ([o["type"] for o in got] != [o["type"] for o in rec["output"]]
          or got[0]["arguments"] != rec["output"][0]["arguments"]
          or json.loads(got[1]["output"]) != json.loads(rec["output"][1]["output"])
          or got[2]["content"][0]["text"] != rec["output"][2]["content"][0]["text"]
          or r["response"].get("usage") != rec["usage"]):
        problems.append(f"{key}: the trajectory or usage differs from the recorded one")
    if len(problems) > 20:
        break
if rows != n:
    problems.append(f"{rows} rows, expected {n}")
print("; ".join(problems[:20]) if problems else f"ok: {rows} rows, all reward 1.0, recorded trajectories and usage, no failures")
sys.exit(1 if problems else 0)
EOF
}
