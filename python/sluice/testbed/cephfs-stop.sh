#!/bin/bash
# cephfs-stop.sh - unmount and stop what cephfs-start.sh started.  Only the
# processes named in its PID files are signalled, each after its command line
# is checked; the monitor goes last, once the daemons that report to it are
# gone.  Removes the delay rule, and the network namespace if
# cephfs-start.sh created it.
#
# usage: cephfs-stop.sh [--purge]     --purge also deletes all data and state
# env:   see cephfs-common.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cephfs-common.sh
. "$HERE/cephfs-common.sh"

PURGE=0
case ${1:-} in
    '') ;;
    --purge) PURGE=1 ;;
    *) die "usage: cephfs-stop.sh [--purge]" ;;
esac

names=() pids=()
term() {   # term NAME PATTERN: SIGTERM it now, wait for it in wait_all
    local pid
    pid=$(term_pidfile "$RUN/$1.pid" "$2") || return 0
    names+=("$1")
    pids+=("$pid")
}
wait_all() {   # wait_all TIMEOUT_S
    local i
    for i in "${!pids[@]}"; do
        wait_gone "${pids[$i]}" "$RUN/${names[$i]}.pid" "${names[$i]}" "$1"
    done
    names=() pids=()
}

if [ -d "$RUN" ]; then
    # 1. unmount; the client exits once its mount is gone
    MNT=
    [ -s "$RUN/mountpoint" ] && MNT=$(< "$RUN/mountpoint")
    if [ -n "$MNT" ] && ceph_mounted "$MNT"; then
        if ! umount "$MNT" 2> /dev/null; then
            log "umount $MNT failed (busy?): lazy unmount"
            umount -l "$MNT" 2> /dev/null || true
        fi
        log "unmounted $MNT"
    fi

    # the nodes: their namespaces, clients, the host's link and names
    nodes_down_all

    # 2. the client (its mount is gone: after a large delete it may still
    #    wait on the servers, so it gets 5 s), then MDS, OSDs, manager and
    #    delay helper, then the monitor
    term ceph-fuse "$(fuse_pats)"
    wait_all 5
    term ceph-mds "$(ceph_pat ceph-mds)"
    for f in "$RUN"/ceph-osd*.pid; do
        [ -e "$f" ] || continue
        n=$(basename "$f" .pid)
        term "$n" "$(osd_pat "${n#ceph-osd}")"
    done
    term ceph-mgr "$(ceph_pat ceph-mgr)"
    term nfq-delay "$(nfq_pat)"
    wait_all 20
    term ceph-mon "$(ceph_pat ceph-mon)"
    wait_all 20
    rm -f "$RUN/mountpoint" "$RUN/delay_us"

    # 3. the delay rule, and the namespace if cephfs-start.sh created it
    nfq_rule_del
    netns_down
else
    log "nothing to stop ($RUN does not exist)"
fi

if [ "$PURGE" = 1 ] && [ -e "$STATE" ]; then
    [ -e "$MARK" ] || die "$STATE is not a testbed state folder (no $MARK): not deleting it"
    rm -rf -- "$STATE" && log "purged $STATE"
fi
exit 0
