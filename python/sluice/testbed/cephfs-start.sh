#!/bin/bash
# cephfs-start.sh - bring up the CephFS testbed: a file system with per-file
# layouts (stripe unit, stripe count, object size), mounted.  One monitor, one
# manager, N OSDs (BlueStore on sparse files), one MDS and the ceph-fuse
# client, from Debian's packages, configured under the state folder only
# (never /etc/ceph), in a network namespace of their own as the MooseFS
# testbed's daemons (start.sh says why).  Pools keep one copy (one host).
# Idempotent: what already runs under our PID files is left alone; only the
# delay is brought to the value asked for.
#
# usage: cephfs-start.sh MOUNTPOINT
# env:   see cephfs-common.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cephfs-common.sh
. "$HERE/cephfs-common.sh"

[ $# = 1 ] || die "usage: cephfs-start.sh MOUNTPOINT"
MNT=$(realpath -m -- "$1")
case $MNT in *[[:space:]]*) die "the mount point must not contain white space" ;; esac
case $NOSD in [1-9]) ;; *) die "SLUICE_CEPHFS_OSDS must be 1..9" ;; esac
case $OSD_SIZE in [1-9]*[GM] | [1-9]*) ;; *) die "SLUICE_CEPHFS_OSD_SIZE must be a size such as 8G" ;; esac
case $DELAY_US in '' | *[!0-9]*) die "the delay must be a whole number of microseconds" ;; esac

# ---------------------------------------------------------------- packages
need=()
for p in ceph-mon:ceph-mon ceph-mgr:ceph-mgr ceph-osd:ceph-osd ceph-mds:ceph-mds ceph-fuse:ceph-fuse \
         ceph:ceph-common monmaptool:ceph-base uuidgen:uuid-runtime nsenter:util-linux ip:iproute2; do
    command -v "${p%%:*}" > /dev/null 2>&1 || need+=("${p#*:}")
done
mapfile -t -O "${#need[@]}" need < <(delay_packages)
install_missing "${need[@]}"
[ -e /dev/fuse ] || die "/dev/fuse is missing (no FUSE in this kernel?)"

mkdir -p "$STATE"/{etc,run,log,mon,mgr/x,mds/a,osd}
[ -e "$MARK" ] || echo "state folder of a sluice CephFS testbed (namespace $NS)" > "$MARK"

# ---------------------------------------------------------------- the mount point in use
if [ -s "$RUN/mountpoint" ] && fuse_alive; then
    old=$(< "$RUN/mountpoint")
    [ "$old" = "$MNT" ] || die "the CephFS testbed is already mounted at $old; take it down first (sluice testbed down --fs cephfs)"
fi

# ---------------------------------------------------------------- namespace
netns_up

# ---------------------------------------------------------------- config (rewritten each time)
[ -s "$STATE/etc/fsid" ] || uuidgen > "$STATE/etc/fsid"
FSID=$(< "$STATE/etc/fsid")
cat > "$CONF.tmp" << EOF
# written by cephfs-start.sh; rewritten at each start
[global]
fsid = $FSID
mon host = v2:$ADDR:$MON_PORT
public addr = $ADDR
public network = $ADDR/32
ms bind msgr1 = false
# one host, no outside access: no authentication
auth cluster required = none
auth service required = none
auth client required = none
keyring = /dev/null
run dir = $RUN
log file = $STATE/log/\$name.log
pid file = $RUN/\$name.ceph.pid
mon data = $STATE/mon/\$id
mgr data = $STATE/mgr/\$id
mds data = $STATE/mds/\$id
osd data = $STATE/osd/\$id
# one copy of everything, as on Lustre; no pool autoscaling
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon data avail warn = 2
mon data avail crit = 1
mon warn on insecure global id reclaim allowed = false
[mon]
admin socket = $RUN/\$name.asok
[mgr]
admin socket = $RUN/\$name.asok
[mds]
admin socket = $RUN/\$name.asok
[client]
# the ceph tool and ceph-fuse are both client.admin
admin socket = $RUN/\$name.\$pid.asok
[osd]
admin socket = $RUN/\$name.asok
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $OSD_SIZE
bluestore block db create = false
bluestore block wal create = false
# a small machine: small caches
bluestore cache autotune = false
bluestore cache size = 128M
osd memory target = 1G
EOF
mv -f "$CONF.tmp" "$CONF"
echo "$NOSD" > "$RUN/osds"

# ---------------------------------------------------------------- delay (optional)
delay_apply

# ---------------------------------------------------------------- monitor
if [ ! -e "$STATE/mon/a/store.db" ]; then
    rm -rf "$STATE/mon/a"
    monmaptool --create --clobber --fsid "$FSID" --addv a "[v2:$ADDR:$MON_PORT]" "$STATE/etc/monmap" > /dev/null
    ceph-mon -c "$CONF" --mkfs -i a --monmap "$STATE/etc/monmap" > "$STATE/log/mon-mkfs.log" 2>&1 ||
        die "ceph-mon --mkfs failed, see $STATE/log/mon-mkfs.log"
    log "created the monitor's store"
fi
if alive "$RUN/ceph-mon.pid" "$(ceph_pat ceph-mon)"; then
    log "monitor already running (pid $(< "$RUN/ceph-mon.pid"))"
else
    spawn "$RUN/ceph-mon.pid" "$STATE/log/ceph-mon.out" ceph-mon -f -c "$CONF" -i a
    log "started the monitor (pid $(< "$RUN/ceph-mon.pid"))"
fi
wait_for 60 "the monitor on $ADDR:$MON_PORT" cephc mon stat

# ---------------------------------------------------------------- manager
if ! alive "$RUN/ceph-mgr.pid" "$(ceph_pat ceph-mgr)"; then
    spawn "$RUN/ceph-mgr.pid" "$STATE/log/ceph-mgr.out" ceph-mgr -f -c "$CONF" -i x
    log "started the manager (pid $(< "$RUN/ceph-mgr.pid"))"
fi

# ---------------------------------------------------------------- OSDs
for ((i = 0; i < NOSD; i++)); do
    if [ ! -e "$STATE/osd/$i/ready" ]; then
        [ -s "$STATE/osd/$i.uuid" ] || uuidgen > "$STATE/osd/$i.uuid"
        got=$(cephc osd new "$(< "$STATE/osd/$i.uuid")" "$i") || die "ceph osd new for OSD $i failed"
        [ "$got" = "$i" ] || die "the monitor gave id $got for OSD $i"
        rm -rf "$STATE/osd/$i" && mkdir -p "$STATE/osd/$i"
        "${EXEC[@]}" ceph-osd -c "$CONF" -i "$i" --mkfs --osd-uuid "$(< "$STATE/osd/$i.uuid")" \
            > "$STATE/log/osd$i-mkfs.log" 2>&1 || die "ceph-osd --mkfs of OSD $i failed, see $STATE/log/osd$i-mkfs.log"
        log "created OSD $i ($OSD_SIZE block file)"
    fi
    alive "$RUN/ceph-osd$i.pid" "$(osd_pat "$i")" && continue
    spawn "$RUN/ceph-osd$i.pid" "$STATE/log/ceph-osd$i.out" ceph-osd -f -c "$CONF" -i "$i"
    log "started OSD $i (pid $(< "$RUN/ceph-osd$i.pid"))"
done
osds_up() { [ "$(cephc osd stat -f json | sed -n 's/.*"num_up_osds":\([0-9]*\).*/\1/p')" -ge "$NOSD" ]; }
wait_for 90 "$NOSD OSDs to come up" osds_up

# ---------------------------------------------------------------- pools and the file system
if ! cephc fs ls -f json | grep -qF "\"name\":\"$FSNAME\""; then
    cephc osd pool create "${FSNAME}_metadata" 16 > /dev/null 2>&1 || die "cannot create the metadata pool"
    cephc osd pool create "${FSNAME}_data" 64 > /dev/null 2>&1 || die "cannot create the data pool"
    cephc fs new "$FSNAME" "${FSNAME}_metadata" "${FSNAME}_data" > /dev/null 2>&1 || die "ceph fs new failed"
    log "created file system $FSNAME (pools ${FSNAME}_metadata, ${FSNAME}_data; one copy)"
fi

# ---------------------------------------------------------------- MDS
if ! alive "$RUN/ceph-mds.pid" "$(ceph_pat ceph-mds)"; then
    spawn "$RUN/ceph-mds.pid" "$STATE/log/ceph-mds.out" ceph-mds -f -c "$CONF" -i a
    log "started the MDS (pid $(< "$RUN/ceph-mds.pid"))"
fi
mds_active() { cephc mds stat | grep -qF "up:active"; }
wait_for 90 "the MDS to become active" mds_active

# ---------------------------------------------------------------- mount
recorded=$(cat "$RUN/mountpoint" 2> /dev/null || true)
if ceph_mounted "$MNT" && ! fuse_alive &&
    { [ "$recorded" = "$MNT" ] || ! stat -f "$MNT" > /dev/null 2>&1; }; then
    # ours by the record, or a dead mount whose record went with $RUN
    log "stale FUSE mount at $MNT (its client is gone): detaching it"
    umount -l "$MNT" 2> /dev/null || true
fi
mkdir -p "$MNT"
if fuse_alive && ceph_mounted "$MNT"; then
    log "already mounted at $MNT"
elif mountpoint -q "$MNT"; then
    die "$MNT is a mount point already, and not ours"
else
    # A client that exits before mounting is tried again, three times in
    # all, and the error says what the last attempt printed.
    mount_settled() { ceph_mounted "$MNT" || exited "$RUN/ceph-fuse.pid"; }
    out="$STATE/log/ceph-fuse.out"
    for attempt in 1 2 3; do
        stop_pidfile client 10 "$RUN/ceph-fuse.pid" "$(fuse_pats)"
        from=$(($(stat -c %s "$out" 2> /dev/null || echo 0) + 1))
        spawn "$RUN/ceph-fuse.pid" "$out" ceph-fuse -f -c "$CONF" "$MNT"
        echo "$MNT" > "$RUN/mountpoint"
        wait_for 60 "the mount at $MNT" mount_settled
        ceph_mounted "$MNT" && break
        said=$(tail -c "+$from" "$out" | { grep -v -e '^[[:space:]]*$' -e 'starting ' -e 'newargv' || true; } |
            tail -n 2 | tr '\n' ' ')
        [ "$attempt" -lt 3 ] || die "ceph-fuse exited 3 times: ${said:-no message} (log: $out)"
        log "ceph-fuse exited (${said:-no message}); trying again"
        sleep 2
    done
    log "mounted at $MNT (client pid $(< "$RUN/ceph-fuse.pid"))"
fi
wait_for 30 "the space of $MNT" has_space "$MNT"
echo "$MNT" > "$RUN/mountpoint"

# ---------------------------------------------------------------- simulated nodes (optional)
# Each node's own ceph-fuse, in its network namespace (common.sh).
node_up() {   # node_up K
    local k=$1 mnt=$MNT-node$k
    if [ -s "$RUN/node$k.mountpoint" ] && [ "$(< "$RUN/node$k.mountpoint")" = "$mnt" ] &&
        node_client_alive "$k" "$mnt" && is_mounted "$mnt"; then
        log "node $k already mounted at $mnt"
        return 0
    fi
    node_down "$k"
    node_net_up "$k"
    node_mountpoint "$mnt"
    echo "$mnt" > "$RUN/node$k.mountpoint"
    node_client_start "$k" 60 "$STATE/log/ceph-fuse-node$k.out" ceph-fuse -f -c "$CONF" "$mnt"
}
nodes_apply "$CLIENTS"
log "up: CephFS $FSNAME, monitor $ADDR:$MON_PORT in namespace $NS, $NOSD OSDs, mounted at $MNT"
