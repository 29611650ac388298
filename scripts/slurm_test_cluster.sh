#!/usr/bin/env bash
# A single-node SLURM cluster for tests (Debian's slurm-wlm and munge): `start DIR` writes a
# slurm.conf in DIR, starts munged (its own socket), slurmctld and slurmd, waits for the node and
# prints the SLURM_CONF to export; `stop DIR` shuts them down and removes DIR. Needs root (slurmd
# runs jobs as their submitter).
set -euo pipefail
cmd="$1"; dir="$(realpath -m "$2")"
for b in slurmctld slurmd munged sinfo scontrol; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || { echo "slurm_test_cluster: $b not found (scripts/setup.sh installs slurm-wlm and munge)" >&2; exit 1; }
done
export PATH="$PATH:/usr/sbin"
conf="$dir/slurm.conf"
case "$cmd" in
  start)
    [ "$(id -u)" -eq 0 ] || { echo "slurm_test_cluster: needs root" >&2; exit 1; }
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chown munge:munge "$dir/munge"
    runuser -u munge -- munged --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
      --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
    host="$(hostname -s)"
    cpus="$(nproc)"
    mem="$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))"
    port=$(( 20000 + RANDOM % 20000 ))
    cat > "$conf" <<CONF
ClusterName=joule-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=joule Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF="$conf"
    slurmctld -f "$conf"
    slurmd -f "$conf"
    for _ in $(seq 150); do
      if sinfo -h -o "%T" 2>/dev/null | grep -qE "^idle"; then echo "$conf"; exit 0; fi
      sleep 0.2
    done
    echo "slurm_test_cluster: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log" >&2
    tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    exit 1
    ;;
  stop)
    if [ -f "$conf" ]; then
      SLURM_CONF="$conf" scontrol shutdown >/dev/null 2>&1 || true
      for f in slurmctld.pid slurmd.pid; do [ -f "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null || true; done
    fi
    [ -f "$dir/munge/munged.pid" ] && kill "$(cat "$dir/munge/munged.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
