# shellcheck shell=bash
# Shell helpers shared by the bench/ scripts. Source it after `set -euo pipefail` and after setting
# PROG (the script's name, used in messages):
#
#   PROG=e2e_load.sh
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Processes started by the script go into PIDS (bench_cleanup stops them, TERM then KILL); the
# temp dir made by bench_tmpdir is removed on exit unless KEEP_TMP=1.

PYTHON=${PYTHON:-/usr/bin/python3}
PIDS=()
TMP=

die() {
  echo "${PROG:-bench}: error: $*" >&2
  exit 1
}

warn() {
  echo "${PROG:-bench}: warning: $*" >&2
}

# Stop every process of PIDS: TERM, wait up to STOP_WAIT tenths of a second each (default 100),
# then KILL. Optional hook BENCH_CLEANUP_HOOK (a function name) runs first.
bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n ${BENCH_CLEANUP_HOOK:-} ]]; then "$BENCH_CLEANUP_HOOK" || true; fi
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq "${STOP_WAIT:-100}"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
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
