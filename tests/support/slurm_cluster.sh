#!/usr/bin/env bash
# A throw-away multi-node Slurm cluster on this machine, for the tests of `gym eval submit`
# (C++ side: tests/support/slurm_cluster.h). Needs root, network namespaces and the Debian
# packages slurmctld, slurmd, slurm-client, munge and iproute2 (scripts/setup.sh test).
#
#   slurm_cluster.sh up NODES   starts a cluster of NODES nodes; prints its directory DIR
#   slurm_cluster.sh down DIR   kills every process of the cluster and removes DIR and its network
#
# Talk to a cluster with SLURM_CONF=DIR/etc/slurm.conf (sbatch, srun, squeue, scontrol from here).
# DIR/nodes lists "NAME ADDRESS" a line (n1, n2, ...); DIR/controller "NAME ADDRESS" of this
# machine on the cluster's bridge (slurmctld's address, and where jobs reach servers running
# here; 127.0.0.1 in a job is the node's own loopback); DIR/network the bridge, veths and network
# namespaces made for the cluster; DIR/init.pid the host PID of its PID namespace's first process.
#
# Layout. Node nI is a network namespace with its own address on a private bridge, its own host
# name (UTS namespace) and its own /etc/hosts (a bind mount naming n1..nN and the controller);
# the files, /tmp included, are shared by all nodes. slurmctld runs on the host side of the
# bridge, one slurmd per node. Every daemon, and so every slurmstepd and job task, lives in one
# private PID namespace: `down` kills its first process and the kernel kills all the others.
#
# Several clusters at once. A cluster owns slot K (0-63) for its whole life by an flock on
# /tmp/gym-slurm-net-K.lock that the processes of its PID namespace inherit: subnet
# 10.213.K.0/24 (controller .1, node nI .(I+1)), slurmctld port 20000+10K, slurmd port
# 20001+10K, bridge gymsbrK, veths gymsK-I, namespaces gym-slurm-K-nI. Whoever holds the lock
# may remove any of those names left behind by a crash.
#
# Crashed owners. With GYM_SLURM_OWNER_LOCK=FILE (a file the caller holds an flock on), a
# watchdog outside the cluster runs `down DIR` as soon as that lock is free, i.e. when the caller
# died without calling `down`, and removes FILE. The caller opens FILE close-on-exec, or its
# children would hold the lock too.
#
# Pitfalls this layout avoids: `ip netns exec` remounts /sys and hides /sys/fs/cgroup, which
# slurmd needs, so nodes enter their namespace with nsenter; the PID namespace's first process is
# a bash loop, which reaps the slurmstepd's that slurmd leaves to it.
set -euo pipefail

readonly PROG=slurm_cluster.sh
SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF
readonly SLOTS=64
readonly SUBNET_PREFIX=10.213

fail() {
  echo "$PROG: $*" >&2
  exit 1
}

# Whether PID is a running process; a zombie counts as gone (nobody may reap it soon).
running() {
  [[ -n $1 && -r /proc/$1/stat ]] || return 1
  local stat
  stat=$(</proc/"$1"/stat) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Waits until `running PID` is false, up to SECONDS; status 1 when it is still running.
wait_gone() {
  local pid=$1 tenths=$(($2 * 10))
  while running "$pid"; do
    ((tenths-- > 0)) || return 1
    sleep 0.1
  done
}

ctld_port() { echo $((20000 + 10 * $1)); }
bridge_name() { echo "gymsbr$1"; }
veth_name() { echo "gyms$1-$2"; }
netns_name() { echo "gym-slurm-$1-n$2"; }
slot_lock() { echo "/tmp/gym-slurm-net-$1.lock"; }

# Removes every link and namespace named after slot K (the caller holds the slot's lock).
remove_network() {
  local k=$1 ns link
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^gym-slurm-$k-n" || true); do
    ip netns delete "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
    grep -E "^(gyms$k-[0-9]+|$(bridge_name "$k"))\$" || true); do
    ip link delete "$link" 2>/dev/null || true
  done
}

# Claims a free slot: sets SLOT and leaves its lock held on fd SLOT_FD.
claim_slot() {
  local k port
  for ((k = 0; k < SLOTS; k++)); do
    exec {SLOT_FD}>"$(slot_lock "$k")"
    if flock -n "$SLOT_FD"; then
      port=$(ctld_port "$k")
      # a port some other program listens on (or a subnet in use) makes the slot unusable
      if ! ss -Htln "( sport = :$port or sport = :$((port + 1)) )" | grep -q . &&
        ! ip -o -4 addr show | grep -q " $SUBNET_PREFIX\.$k\."; then
        SLOT=$k
        remove_network "$k"
        return 0
      fi
    fi
    exec {SLOT_FD}>&-
  done
  fail "no free slot among $SLOTS (/tmp/gym-slurm-net-*.lock all held)"
}

write_config() {
  local dir=$1 nodes=$2 k=$3 host i
  host=$(hostname -s)
  local port
  port=$(ctld_port "$k")
  # MinJobAge: a finished job stays in `scontrol show job` (state, ExitCode) for 10 minutes.
  # config_overrides: slurmd takes CPUs and RealMemory from here, not from the machine.
  cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=gymtest$k
SlurmctldHost=$host($SUBNET_PREFIX.$k.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
KillWait=5
EOF
  {
    echo "127.0.0.1 localhost"
    echo "$SUBNET_PREFIX.$k.1 $host"
  } >"$dir/etc/hosts"
  echo "$host $SUBNET_PREFIX.$k.1" >"$dir/controller"
  : >"$dir/nodes"
  for ((i = 1; i <= nodes; i++)); do
    echo "NodeName=n$i NodeAddr=$SUBNET_PREFIX.$k.$((i + 1)) CPUs=2 RealMemory=1000 State=UNKNOWN" \
      >>"$dir/etc/slurm.conf"
    echo "$SUBNET_PREFIX.$k.$((i + 1)) n$i" >>"$dir/etc/hosts"
    echo "n$i $SUBNET_PREFIX.$k.$((i + 1))" >>"$dir/nodes"
  done
  echo "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/etc/slurm.conf"
}

# The bridge, and per node a namespace and a veth pair; their names go to DIR/network.
make_network() {
  local dir=$1 k=$2 nodes=$3 i ns veth br
  br=$(bridge_name "$k")
  echo "bridge $br" >"$dir/network"
  ip link add "$br" type bridge
  ip addr add "$SUBNET_PREFIX.$k.1/24" dev "$br"
  ip link set "$br" up
  for ((i = 1; i <= nodes; i++)); do
    ns=$(netns_name "$k" "$i")
    veth=$(veth_name "$k" "$i")
    printf 'netns %s\nveth %s\n' "$ns" "$veth" >>"$dir/network"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$br" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET_PREFIX.$k.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

# `up NODES`
up() {
  local nodes=${1:-}
  if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 50)); then
    fail "usage: $PROG up NODES (1-50)"
  fi
  [[ $(id -u) == 0 ]] || fail "needs root (network namespaces, bridges, Slurm daemons as root)"
  local tool i
  for tool in slurmctld slurmd munged mungekey sinfo ip ss unshare nsenter flock; do
    command -v "$tool" >/dev/null || fail "$tool not found (scripts/setup.sh test installs it)"
  done

  claim_slot
  local dir
  dir=$(mktemp -d /tmp/gym-slurm.XXXXXX)
  # From here on, a failure removes what was made (the slot's lock is still ours).
  set -o errtrace
  trap 'abort_up "$dir" "$SLOT"' ERR
  chmod 755 "$dir" # munged wants the socket's directories searchable by all
  mkdir -p "$dir"/{etc,munge,state,spool,log,run}
  chmod 755 "$dir/munge"
  echo "$nodes" >"$dir/node_count"
  echo "$SLOT" >"$dir/slot"

  write_config "$dir" "$nodes" "$SLOT"
  mungekey --create --keyfile="$dir/munge/munge.key" >&2
  make_network "$dir" "$SLOT" "$nodes"

  # The PID namespace: its first process (_init) inherits the slot lock on SLOT_FD.
  setsid unshare --pid --fork --kill-child --mount-proc bash "$SELF" _init "$dir" \
    </dev/null >"$dir/log/init.log" 2>&1 &
  local supervisor=$! init=""
  echo "$supervisor" >"$dir/supervisor.pid"
  for ((i = 0; i < 100; i++)); do
    init=$(cat "/proc/$supervisor/task/$supervisor/children" 2>/dev/null || true)
    [[ -n $init ]] && break
    sleep 0.02
  done
  echo "${init%% *}" >"$dir/init.pid" # host PID of the namespace's first process

  # Ready when every node is idle.
  export SLURM_CONF=$dir/etc/slurm.conf
  local deadline=$((SECONDS + 60)) idle=0
  for (( ; ; )); do
    if running "$supervisor"; then
      idle=$(sinfo -h -N -o '%t' 2>/dev/null | grep -cx idle || true)
      ((idle == nodes)) && break
    fi
    if ((SECONDS >= deadline)) || ! running "$supervisor"; then
      {
        echo "$PROG: the cluster in $dir did not come up ($idle of $nodes nodes idle)"
        sinfo -N 2>&1 || true
        tail -n 20 "$dir"/log/*.log 2>/dev/null || true
      } >&2
      abort_up "$dir" "$SLOT"
    fi
    sleep 0.1
  done

  # Started last, so that it never tears down a cluster still coming up: should the owner be
  # gone already, its `down` waits for the slot lock this process holds until it exits.
  if [[ -n ${GYM_SLURM_OWNER_LOCK:-} ]]; then
    setsid bash "$SELF" _watch "$dir" "$GYM_SLURM_OWNER_LOCK" \
      </dev/null >/dev/null 2>&1 {SLOT_FD}>&- &
    echo $! >"$dir/watchdog.pid"
  fi
  echo "$dir"
}

abort_up() {
  trap - ERR
  stop_processes "$1"
  remove_network "$2"
  rm -rf "$1"
  exit 1
}

# Kills the watchdog (unless it is this process) and the PID namespace, and waits until every
# process of the namespace is gone.
stop_processes() {
  local dir=$1 watchdog supervisor init
  watchdog=$(cat "$dir/watchdog.pid" 2>/dev/null || true)
  if [[ -n $watchdog && $watchdog != "$$" ]] && running "$watchdog" &&
    tr '\0' ' ' <"/proc/$watchdog/cmdline" | grep -qF "_watch $dir "; then
    kill -KILL -- "-$watchdog" 2>/dev/null || true
  fi
  supervisor=$(cat "$dir/supervisor.pid" 2>/dev/null || true)
  running "$supervisor" || return 0
  # The namespace's first process is unshare's only child. SIGKILL to it makes the kernel
  # SIGKILL every other process of the namespace; unshare's wait for it returns (and unshare
  # exits) only once they are all gone.
  init=$(cat "/proc/$supervisor/task/$supervisor/children" 2>/dev/null || true)
  init=${init%% *}
  if [[ -n $init ]]; then
    kill -KILL "$init" 2>/dev/null || true
  else
    kill -KILL "$supervisor" 2>/dev/null || true # --kill-child passes it on
  fi
  wait_gone "$supervisor" 20 || fail "the cluster's PID namespace in $dir did not die"
}

# `down DIR`
down() {
  local dir=${1:-}
  [[ $dir == /tmp/gym-slurm.* && -f $dir/slot ]] || fail "usage: $PROG down DIR (a cluster dir)"
  local slot fd
  slot=$(cat "$dir/slot")
  stop_processes "$dir"
  # The slot's lock comes free once nothing of the namespace holds it; then the names are ours.
  exec {fd}>"$(slot_lock "$slot")"
  flock -w 20 "$fd" || fail "slot $slot of $dir is still locked after the cluster stopped"
  remove_network "$slot"
  rm -rf "$dir"
  exec {fd}>&-
}

# PID 1 of the cluster's PID namespace: munged, slurmctld, one slurmd per node; then it stays to
# reap whatever is left to it (slurmstepd's) until it is killed.
init() {
  local dir=$1 conf=$1/etc/slurm.conf slot nodes i
  slot=$(cat "$dir/slot")
  nodes=$(cat "$dir/node_count")
  munged --foreground --force --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log" &
  for ((i = 0; i < 100; i++)); do
    [[ -S $dir/munge/munge.socket ]] && break
    sleep 0.05
  done
  slurmctld -D -f "$conf" &
  for ((i = 1; i <= nodes; i++)); do
    nsenter --net="/run/netns/$(netns_name "$slot" "$i")" \
      unshare --uts --mount --propagation private bash "$SELF" _node "$dir" "$i" &
  done
  for (( ; ; )); do
    wait || true
    sleep 1
  done
}

# A node's slurmd, already in the node's network, UTS and mount namespaces.
node() {
  local dir=$1 i=$2
  mount --bind "$dir/etc/hosts" /etc/hosts
  hostname "n$i"
  exec slurmd -D -f "$dir/etc/slurm.conf" -N "n$i"
}

# Waits for the owner's lock to come free, then tears the cluster down.
watch() {
  local dir=$1 owner=$2
  flock "$owner" true
  rm -f "$owner"
  exec bash "$SELF" down "$dir"
}

case ${1:-} in
  up) up "${@:2}" ;;
  down) down "${@:2}" ;;
  _init) init "$2" ;;
  _node) node "$2" "$3" ;;
  _watch) watch "$2" "$3" ;;
  *) fail "usage: $PROG up NODES | down DIR" ;;
esac
