#!/bin/bash
# start.sh - bring up the sluice testbed: MooseFS on this machine, mounted.
# One metadata master (the Lustre MDS's part), N chunkservers (the OSTs') and
# the mfsmount FUSE client, from Debian packages.  Idempotent: what already
# runs under our PID files is left alone; only the delay is brought to the
# value asked for.
#
# usage: start.sh MOUNTPOINT
# env:   see common.sh (SLUICE_TESTBED_*)
#
# Why a network namespace: MooseFS chunkservers refuse a master on
# 127.0.0.0/8, so every daemon runs in a namespace of its own whose loopback
# carries a second, private address.  Nothing in it can reach, or be reached
# from, any other host.  The daemons are started with nsenter --net, not
# 'ip netns exec' (which would give the FUSE mount a private mount namespace),
# so the mount is visible to every process on the machine.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

[ $# = 1 ] || die "usage: start.sh MOUNTPOINT"
MNT=$(realpath -m -- "$1")
case $MNT in *[[:space:]]*) die "the mount point must not contain white space" ;; esac
case $NCS in [1-9]) ;; *) die "SLUICE_TESTBED_CHUNKSERVERS must be 1..9" ;; esac
case $GOAL in [1-9]) ;; *) die "SLUICE_TESTBED_GOAL must be 1..9" ;; esac
case $DELAY_US in '' | *[!0-9]*) die "the delay must be a whole number of microseconds" ;; esac
case $RTPRIO in '' | *[!0-9]*) die "SLUICE_TESTBED_DELAY_RTPRIO must be 0..99" ;; esac
case $CLIENTS in '' | [0-8]) ;; *) die "the number of node clients must be 0..8" ;; esac
case $COPTS in *[[:space:]]*) die "SLUICE_TESTBED_CLIENT_OPTS must not contain white space" ;; esac

# ---------------------------------------------------------------- packages
need=()
for p in mfsmaster:moosefs-master mfschunkserver:moosefs-chunkserver \
         mfsmount:moosefs-client mfscli:moosefs-cli nsenter:util-linux ip:iproute2 \
         ss:iproute2; do
    command -v "${p%%:*}" > /dev/null 2>&1 || need+=("${p#*:}")
done
mapfile -t -O "${#need[@]}" need < <(delay_packages)
install_missing "${need[@]}"
[ -e /dev/fuse ] || die "/dev/fuse is missing (no FUSE in this kernel?)"

# ---------------------------------------------------------------- helpers
mkdir -p "$STATE"/{etc,master,run,log}
[ -e "$MARK" ] || echo "state folder of a sluice testbed (namespace $NS)" > "$MARK"

listening() { "${EXEC[@]}" ss -Hltn "src $ADDR:$1" | grep -q .; }
ready_chunkservers() {   # chunkservers connected to the master that report their space
    "${EXEC[@]}" mfscli -H "$ADDR" -SCS 2> /dev/null |
        awk -F'\t' '$1 == "chunk servers:" && $11 > 0 { n++ } END { print n + 0 }'
}
all_ready() { [ "$(ready_chunkservers)" -ge "$NCS" ]; }
# ---------------------------------------------------------------- the mount point in use
if [ -s "$RUN/mountpoint" ] && client_alive "$(< "$RUN/mountpoint")"; then
    old=$(< "$RUN/mountpoint")
    [ "$old" = "$MNT" ] || die "the testbed is already mounted at $old; take it down first (sluice testbed down)"
fi

# ---------------------------------------------------------------- namespace
netns_up

# ---------------------------------------------------------------- configs (rewritten each time)
cat > "$STATE/etc/mfsmaster.cfg" << EOF
WORKING_USER = root
WORKING_GROUP = root
SYSLOG_IDENT = sluice-mfsmaster
NICE_LEVEL = 0
DATA_PATH = $STATE/master
EXPORTS_FILENAME = $STATE/etc/mfsexports.cfg
TOPOLOGY_FILENAME = $STATE/etc/mfstopology.cfg
MATOML_LISTEN_HOST = $ADDR
MATOCS_LISTEN_HOST = $ADDR
MATOCL_LISTEN_HOST = $ADDR
# A client killed by \`testbed down\` (or a crash) holds its open files for
# this long, removed ones included, whose chunks stay on disk until then
# (the default is a day); and the chunks of removed files are freed within
# seconds, not the default 300 s loop at 10 a chunkserver: benchmarks that
# write and remove gigabytes a minute would otherwise fill the disk.
SESSION_SUSTAIN_TIME = 60
CHUNKS_LOOP_MIN_TIME = 10
CHUNKS_SOFT_DEL_LIMIT = 100
CHUNKS_HARD_DEL_LIMIT = 200
EOF
printf '*\t/\trw,alldirs,admin,maproot=0:0\n*\t.\trw\n' > "$STATE/etc/mfsexports.cfg"
: > "$STATE/etc/mfstopology.cfg"
for i in $(seq 1 "$NCS"); do
    mkdir -p "$STATE/cs$i/data" "$STATE/cs$i/hdd"
    cat > "$STATE/etc/mfschunkserver$i.cfg" << EOF
WORKING_USER = root
WORKING_GROUP = root
SYSLOG_IDENT = sluice-mfscs$i
NICE_LEVEL = 0
DATA_PATH = $STATE/cs$i/data
HDD_CONF_FILENAME = $STATE/etc/mfshdd$i.cfg
HDD_LEAVE_SPACE_DEFAULT = 1GiB
BIND_HOST = $ADDR
MASTER_HOST = $ADDR
CSSERV_LISTEN_HOST = $ADDR
CSSERV_LISTEN_PORT = $((9421 + i))
EOF
    echo "$STATE/cs$i/hdd" > "$STATE/etc/mfshdd$i.cfg"
done
echo "$NCS" > "$RUN/chunkservers"

# ---------------------------------------------------------------- delay (optional)
delay_apply

# ---------------------------------------------------------------- master
if alive "$RUN/mfsmaster.pid" "$(master_pat)"; then
    log "master already running (pid $(< "$RUN/mfsmaster.pid"))"
else
    if ! compgen -G "$STATE/master/metadata.mfs*" > /dev/null; then
        cp /var/lib/mfs/metadata.mfs.empty "$STATE/master/metadata.mfs"
        log "initialised empty metadata"
    fi
    spawn "$RUN/mfsmaster.pid" "$STATE/log/mfsmaster.log" mfsmaster -f -a -c "$STATE/etc/mfsmaster.cfg"
    log "started the master (pid $(< "$RUN/mfsmaster.pid"))"
fi
wait_for 60 "the master on $ADDR:9421" listening 9421

# ---------------------------------------------------------------- chunkservers
for i in $(seq 1 "$NCS"); do
    alive "$RUN/mfschunkserver$i.pid" "$(cs_pat "$i")" && continue
    spawn "$RUN/mfschunkserver$i.pid" "$STATE/log/mfschunkserver$i.log" \
        mfschunkserver -f -c "$STATE/etc/mfschunkserver$i.cfg"
    log "started chunkserver $i (pid $(< "$RUN/mfschunkserver$i.pid"), port $((9421 + i)))"
done
wait_for 60 "$NCS chunkservers to register" all_ready

# ---------------------------------------------------------------- mount
recorded=$(cat "$RUN/mountpoint" 2> /dev/null || true)
if is_mounted "$MNT" && ! client_alive "$MNT" &&
    { [ "$recorded" = "$MNT" ] || ! stat -f "$MNT" > /dev/null 2>&1; }; then
    # ours by the record, or a dead mount of our type whose record went with
    # a reboot of $RUN ("Transport endpoint is not connected"): nobody's.
    # statfs, not stat: stat may answer from FUSE's attribute cache
    log "stale FUSE mount at $MNT (its client is gone): detaching it"
    umount -l "$MNT" 2> /dev/null || true
fi
mkdir -p "$MNT"
if client_alive "$MNT" && is_mounted "$MNT"; then
    log "already mounted at $MNT"
elif mountpoint -q "$MNT"; then
    die "$MNT is a mount point already, and not ours"
else
    mapfile -t pats < <(mount_pats "$MNT")
    stop_pidfile client 10 "$RUN/mfsmount.pid" "${pats[@]}"
    spawn "$RUN/mfsmount.pid" "$STATE/log/mfsmount.log" \
        mfsmount -f "$MNT" -o "mfsmaster=$ADDR,mfsport=9421,subtype=mfs${MOPTS:+,$MOPTS}"
    echo "$MNT" > "$RUN/mountpoint"
    mount_settled() { is_mounted "$MNT" || exited "$RUN/mfsmount.pid"; }
    wait_for 30 "the mount at $MNT" mount_settled
    is_mounted "$MNT" || die "mfsmount exited, see $STATE/log/mfsmount.log"
    log "mounted at $MNT (client pid $(< "$RUN/mfsmount.pid"))"
    # Lustre-like: no replication, no trash (an unlinked file frees its space at once)
    "${EXEC[@]}" mfssetgoal "$GOAL" "$MNT" > /dev/null
    "${EXEC[@]}" mfssettrashtime 0 "$MNT" > /dev/null
fi
wait_for 30 "the space of $MNT" has_space "$MNT"
echo "$MNT" > "$RUN/mountpoint"

# ---------------------------------------------------------------- node clients (optional)
# One more client per simulated node, each in a network namespace of its
# own, reaching the servers over a veth link (the delay applies to it too).
# A node client whose options changed is mounted again; nodes beyond
# $CLIENTS are taken down; with $CLIENTS unset nothing changes.
node_up() {   # node_up K
    local k=$1 mnt=$MNT-node$k opts
    opts="mfsmaster=$ADDR,mfsport=9421,subtype=mfs${COPTS:+,$COPTS}"
    if [ -s "$RUN/node$k.mountpoint" ] && node_client_alive "$k" "$(< "$RUN/node$k.mountpoint")"; then
        if [ "$(< "$RUN/node$k.mountpoint")" = "$mnt" ] && [ "$(cat "$RUN/node$k.opts" 2> /dev/null)" = "$opts" ] &&
            is_mounted "$mnt"; then
            log "node $k already mounted at $mnt"
            return 0
        fi
        log "node $k: mounted with other options or elsewhere: mounting it again"
    fi
    node_down "$k"
    node_net_up "$k"
    node_mountpoint "$mnt"
    echo "$mnt" > "$RUN/node$k.mountpoint"
    echo "$opts" > "$RUN/node$k.opts"
    node_client_start "$k" 30 "$STATE/log/mfsmount-node$k.log" mfsmount -f "$mnt" -o "$opts"
}
nodes_apply "$CLIENTS"
log "up: master $ADDR:9421 in namespace $NS, $NCS chunkservers, mounted at $MNT"
