#!/bin/bash
# stop.sh - unmount and stop what start.sh started.  Only the processes named
# in its PID files are signalled, each after its command line is checked.
# Removes the delay rule, and the network namespace if start.sh created it.
#
# usage: stop.sh [--purge]     --purge also deletes all data and state
# env:   see common.sh (SLUICE_TESTBED_*)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

PURGE=0
case ${1:-} in
    '') ;;
    --purge) PURGE=1 ;;
    *) die "usage: stop.sh [--purge]" ;;
esac

if [ -d "$RUN" ]; then
    # 1. unmount; the client exits by itself once its mount is gone
    MNT=
    [ -s "$RUN/mountpoint" ] && MNT=$(< "$RUN/mountpoint")
    if [ -n "$MNT" ] && is_mounted "$MNT"; then
        if ! umount "$MNT" 2> /dev/null; then
            log "umount $MNT failed (busy?): lazy unmount"
            umount -l "$MNT" 2> /dev/null || true
        fi
        log "unmounted $MNT"
    fi

    # node clients: unmount, stop, delete their namespaces
    nodes_down_all

    # 2. client, chunkservers, master, delay helper: SIGTERM all at once, then
    #    wait for each (the master writes its metadata to disk on SIGTERM)
    names=() pids=()
    term() {   # term NAME PATTERN...
        local pid
        pid=$(term_pidfile "$RUN/$1.pid" "${@:2}") || return 0
        names+=("$1")
        pids+=("$pid")
    }
    if [ -n "$MNT" ]; then
        mapfile -t pats < <(mount_pats "$MNT")
        term mfsmount "${pats[@]}"
    fi
    for f in "$RUN"/mfschunkserver*.pid; do
        [ -e "$f" ] || continue
        n=$(basename "$f" .pid)
        term "$n" "$(cs_pat "${n#mfschunkserver}")"
    done
    term mfsmaster "$(master_pat)"
    term nfq-delay "$(nfq_pat)"
    for i in "${!pids[@]}"; do
        wait_gone "${pids[$i]}" "$RUN/${names[$i]}.pid" "${names[$i]}" 60
    done
    rm -f "$RUN/mountpoint" "$RUN/delay_us"

    # 3. the delay rule, and the namespace if start.sh created it
    nfq_rule_del
    netns_down
else
    log "nothing to stop ($RUN does not exist)"
fi

if [ "$PURGE" = 1 ] && [ -e "$STATE" ]; then
    [ -e "$MARK" ] || grep -qsF "DATA_PATH = $STATE/master" "$STATE/etc/mfsmaster.cfg" ||
        die "$STATE is not a testbed state folder (no $MARK): not deleting it"
    rm -rf -- "$STATE" && log "purged $STATE"
fi
exit 0
