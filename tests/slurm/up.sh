#!/usr/bin/env bash
# Bring up a one-node Slurm cluster on this machine (Debian, as root) for the tests:
# installs slurm-wlm and munge if missing, writes a one-node slurm.conf (this host's short name, its real CPUs
# and memory, one partition), starts munged, slurmctld and slurmd, and waits until the node is idle.
# tests/slurm/down.sh stops exactly the processes this script started (by the PIDs it records).
#   REPROBENCH_SLURM_PARTITIONS  partition names, space-separated, all on this node; the first is the default
#                                (default: "cpu gpu", so that a test can see which partition a job went to)
#   REPROBENCH_SLURM_STATE       folder for state, spool, logs and PIDs (default: /tmp/reprobench-slurm)
#   REPROBENCH_SLURM_GPUS        GPUs the node advertises (default 1): a counted 'gpu' gres without a device, so
#                                that jobs asking for --gpus=1, as the profile does, can run on a CPU machine
set -euo pipefail
PARTITIONS=${REPROBENCH_SLURM_PARTITIONS:-cpu gpu}
GPUS=${REPROBENCH_SLURM_GPUS:-1}
STATE=${REPROBENCH_SLURM_STATE:-/tmp/reprobench-slurm}
[ "$(id -u)" = 0 ] || { echo "up.sh: must run as root" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
if [ -s "$STATE/pids" ] && sinfo -h -o %t 2>/dev/null | grep -q idle; then
  echo "up.sh: already running ($STATE/pids)"; exit 0
fi
HOST=$(hostname -s)
# slurmctld and slurmd find each other by this name
getent hosts "$HOST" >/dev/null || echo "127.0.0.1 $HOST" >> /etc/hosts
mkdir -p "$STATE"/{state,spool,log} /etc/slurm /etc/munge /run/munge /var/log/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
# The node's real hardware as slurmd sees it; memory a little below the total so that the node registers.
HARDWARE=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //' -e 's/ UpTime=.*//')
MEMORY=$(( $(echo "$HARDWARE" | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p') * 9 / 10 ))
HARDWARE=$(echo "$HARDWARE" | sed "s/RealMemory=[0-9]*/RealMemory=$MEMORY/")
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=reprobench
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
GresTypes=gpu
NodeName=$HOST $HARDWARE Gres=gpu:$GPUS State=UNKNOWN
CONF
default=YES
for p in $PARTITIONS; do
  echo "PartitionName=$p Nodes=$HOST Default=$default MaxTime=INFINITE State=UP" >> /etc/slurm/slurm.conf
  default=NO
done
# One gres line per advertised GPU. Slurm wants a distinct device file for each; empty placeholder files stand in
# (this node enforces nothing through cgroups, so a job only gets its count and CUDA_VISIBLE_DEVICES).
: > /etc/slurm/gres.conf
mkdir -p "$STATE/dev"
for i in $(seq 0 $((GPUS - 1))); do
  : > "$STATE/dev/gpu$i"
  echo "NodeName=$HOST Name=gpu File=$STATE/dev/gpu$i" >> /etc/slurm/gres.conf
done
: > "$STATE/pids"
fail() { echo "up.sh: $1; last lines of $2:" >&2; tail -n 20 "$2" >&2 || true; exit 1; }
# Start one daemon and record its PID at once, so that down.sh can stop whatever did start.
start() {  # start NAME PIDFILE LOGFILE COMMAND...
  local name=$1 pidfile=$2 logfile=$3; shift 3
  "$@" || fail "$name did not start" "$logfile"
  for _ in $(seq 30); do [ -s "$pidfile" ] && break; sleep 0.2; done
  [ -s "$pidfile" ] || fail "$name wrote no PID file" "$logfile"
  cat "$pidfile" >> "$STATE/pids"
  sleep 0.5
  kill -0 "$(cat "$pidfile")" 2>/dev/null || fail "$name exited" "$logfile"
}
start munged "$STATE/munged.pid" "$STATE/log/munged.log" munged --force --pid-file="$STATE/munged.pid" \
  --log-file="$STATE/log/munged.log"
start slurmctld "$STATE/slurmctld.pid" "$STATE/log/slurmctld.log" slurmctld -i
start slurmd "$STATE/slurmd.pid" "$STATE/log/slurmd.log" slurmd
for _ in $(seq 60); do
  if sinfo -h -o %t 2>/dev/null | grep -q idle; then
    echo "up.sh: node $HOST idle in partitions $PARTITIONS (PIDs: $(tr '\n' ' ' < "$STATE/pids"))"; exit 0
  fi
  scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "up.sh: the node did not become idle; see $STATE/log" >&2
sinfo >&2 || true
exit 1
