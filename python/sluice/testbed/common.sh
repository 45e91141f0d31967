# common.sh - settings and helpers shared by start.sh and stop.sh (sourced).
#
# Settings (environment variables, all optional):
#   SLUICE_TESTBED_STATE_DIR     configs, metadata, chunk data, logs, PID files
#                                (default /var/tmp/sluice-testbed)
#   SLUICE_TESTBED_NETNS         network namespace of the daemons (default sluice-pfs)
#   SLUICE_TESTBED_ADDR          address on the namespace's own loopback (default 10.213.0.1)
#   SLUICE_TESTBED_CHUNKSERVERS  number of chunkservers, 1..9 (default 3)
#   SLUICE_TESTBED_GOAL          copies per chunk (default 1: no replication, as on Lustre)
#   SLUICE_TESTBED_DELAY_US      one-way delay added to every packet, in microseconds
#                                (default 0 = off)
#   SLUICE_TESTBED_DELAY_RTPRIO  SCHED_FIFO priority of the delay helper, 0 = normal (default 10)
#   SLUICE_TESTBED_MOUNT_OPTS    extra mfsmount -o options, comma separated (default none)
#   SLUICE_TESTBED_CLIENTS       node clients, 0..8: extra mfsmount clients, each in a
#                                network namespace of its own (a simulated node) with a
#                                veth link to the servers, mounted at MOUNTPOINT-nodeK
#                                (default unset: node clients are left as they are)
#   SLUICE_TESTBED_CLIENT_OPTS   extra mfsmount -o options of the node clients only
#                                (default none)
#   SLUICE_TESTBED_NO_INSTALL=1  never call apt-get
# (The mount point is start.sh's argument; SLUICE_TESTBED_MOUNTPOINT is read by
# the Python side only.)

STATE=${SLUICE_TESTBED_STATE_DIR:-/var/tmp/sluice-testbed}
NS=${SLUICE_TESTBED_NETNS:-sluice-pfs}
ADDR=${SLUICE_TESTBED_ADDR:-10.213.0.1}
NCS=${SLUICE_TESTBED_CHUNKSERVERS:-3}
GOAL=${SLUICE_TESTBED_GOAL:-1}
DELAY_US=${SLUICE_TESTBED_DELAY_US:-0}
RTPRIO=${SLUICE_TESTBED_DELAY_RTPRIO:-10}
MOPTS=${SLUICE_TESTBED_MOUNT_OPTS:-}
CLIENTS=${SLUICE_TESTBED_CLIENTS:-}
COPTS=${SLUICE_TESTBED_CLIENT_OPTS:-}
NSFILE=/run/netns/$NS
EXEC=(nsenter "--net=$NSFILE")
# the delay rules, inside the namespace only: every packet between the
# daemons and the main client (lo), and every packet to or from a node
# client (veth nodeK), passes one of them once
NFQ_RULES=("OUTPUT -o lo" "OUTPUT -o node+" "INPUT -i node+")
NFQ_TARGET=(-j NFQUEUE --queue-num 0 --queue-bypass)

log() { echo "[sluice testbed] $*" >&2; }
die() { echo "[sluice testbed] ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespace, FUSE mount)"
case $NS in '' | *[!A-Za-z0-9_.-]*) die "SLUICE_TESTBED_NETNS must be a plain name" ;; esac
case $STATE in /*) ;; *) die "SLUICE_TESTBED_STATE_DIR must be an absolute path" ;; esac
STATE=$(realpath -m -- "$STATE")
[ "$STATE" != / ] || die "SLUICE_TESTBED_STATE_DIR must not be /"
RUN=$STATE/run
# start.sh marks the folder as ours; stop.sh --purge deletes only a marked one
MARK=$STATE/.sluice-testbed

# lock: one start.sh/stop.sh at a time per namespace (the lock lives outside
# the state folder so that --purge can remove all of it)
LOCKDIR=/run/lock
[ -d "$LOCKDIR" ] || LOCKDIR=/run
exec 9> "$LOCKDIR/sluice-testbed-$NS.lock"
flock -w 300 9 || die "another sluice testbed command holds $LOCKDIR/sluice-testbed-$NS.lock"

# pid_of PIDFILE PATTERN...: print the PID in PIDFILE if that process is
# alive, is not a zombie and its command line contains one of the PATTERNs
# (so a recycled PID is never taken for ours)
pid_of() {
    local file=$1 pid p
    shift
    [ -s "$file" ] || return 1
    pid=$(< "$file")
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    [ -r "/proc/$pid/cmdline" ] || return 1
    gone "$pid" && return 1
    local args=()
    for p in "$@"; do args+=(-e "$p"); done
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "${args[@]}" || return 1
    echo "$pid"
}
alive() { pid_of "$@" > /dev/null; }
# exited PIDFILE: the process spawn started has exited. Not `! alive`: right
# after spawn the process is still a copy of this shell (its command line
# is not the daemon's yet), which a loaded machine shows for a while.
exited() {
    local pid
    pid=$(cat "$1" 2> /dev/null) || return 0
    case $pid in '' | *[!0-9]*) return 0 ;; esac
    gone "$pid"
}

# gone PID: true once the process has exited (a zombie counts as gone)
gone() {
    [ -d "/proc/$1" ] || return 0
    [ "$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1)" = Z ]
}

# term_pidfile PIDFILE PATTERN...: SIGTERM the process named in PIDFILE if it
# is ours and print its PID; otherwise remove the stale PIDFILE and fail
term_pidfile() {
    local pid
    pid=$(pid_of "$@") || { rm -f "$1"; return 1; }
    kill -TERM "$pid" 2> /dev/null
    echo "$pid"
}
# wait_gone PID PIDFILE NAME TIMEOUT_S: wait for PID to exit (SIGKILL after
# TIMEOUT_S), then remove PIDFILE
wait_gone() {
    local pid=$1 i
    for ((i = 0; i < $4 * 20; i++)); do
        gone "$pid" && break
        sleep 0.05
    done
    if ! gone "$pid"; then
        log "$3 (pid $pid) did not exit in $4 s: SIGKILL"
        kill -KILL "$pid" 2> /dev/null
        for ((i = 0; i < 40; i++)); do gone "$pid" && break; sleep 0.05; done
    fi
    log "stopped $3 (pid $pid)"
    rm -f "$2"
}
# stop_pidfile NAME TIMEOUT_S PIDFILE PATTERN...: both of the above
stop_pidfile() {
    local name=$1 timeout=$2 pid
    shift 2
    pid=$(term_pidfile "$@") || return 0
    wait_gone "$pid" "$1" "$name" "$timeout"
}

# patterns that identify our processes by their command lines (mfsmount
# rewrites its own once it has mounted)
master_pat() { echo "-c $STATE/etc/mfsmaster.cfg"; }
cs_pat() { echo "-c $STATE/etc/mfschunkserver$1.cfg"; }
mount_pats() { printf '%s\n' "mfsmount -f $1 -o " "mfsmount (mounted on: $1)"; }
nfq_pat() { echo "$STATE/nfq-delay -q 0"; }
# client_alive MOUNTPOINT: our mfsmount for MOUNTPOINT runs
client_alive() {
    local pats
    mapfile -t pats < <(mount_pats "$1")
    alive "$RUN/mfsmount.pid" "${pats[@]}"
}
# is_mounted MOUNTPOINT: a MooseFS FUSE mount is at MOUNTPOINT
# the client's file-system type in /proc/self/mounts, its program (the node
# clients' PID files are $RUN/$CLIENT_PROG-nodeK.pid); cephfs-common.sh sets both
MOUNT_TYPE=${MOUNT_TYPE:-fuse.mfs}
CLIENT_PROG=${CLIENT_PROG:-mfsmount}
is_mounted() { grep -qF " $1 $MOUNT_TYPE " /proc/self/mounts; }

has_netns() { [ -e "$NSFILE" ]; }
nfq_rule_del() {
    has_netns && command -v iptables > /dev/null 2>&1 || return 0
    local r
    for r in "${NFQ_RULES[@]}"; do
        # shellcheck disable=SC2086  # a rule is words
        while "${EXEC[@]}" iptables -D $r "${NFQ_TARGET[@]}" 2> /dev/null; do :; done
    done
}

# ---------------------------------------------------------------- node clients
# Node K (1..8): network namespace $NS-nK, veth 'pfs' (10.214.K.2) there and
# 'nodeK' (10.214.K.1) in the servers' namespace, a route to $ADDR through it;
# its client's PID file is $RUN/$CLIENT_PROG-nodeK.pid, its mount point is
# recorded in $RUN/nodeK.mountpoint, its options in $RUN/nodeK.opts. Each
# start script defines node_up K (its own client); nodes_apply does the rest.
node_ns() { echo "$NS-n$1"; }
node_client_pidfile() { echo "$RUN/$CLIENT_PROG-node$1.pid"; }
node_addr() { echo "10.214.$1.$2"; }
# node_numbers: the nodes that have any state (PID file, mount point, namespace)
node_numbers() {
    local f k
    for f in "$RUN"/node*.mountpoint "$RUN"/node*.netns "$RUN"/node*.uts; do
        [ -e "$f" ] || continue
        k=${f##*/node}
        echo "${k%%.*}"
    done | sort -un
}
node_client_alive() {   # node_client_alive K MOUNTPOINT
    local pats
    mapfile -t pats < <(mount_pats "$2")
    alive "$(node_client_pidfile "$1")" "${pats[@]}"
}
# node_net_up K: node K's network namespace and its link to the servers'
node_net_up() {
    local k=$1 ns
    ns=$(node_ns "$k")
    if [ ! -e "/run/netns/$ns" ]; then
        ip netns add "$ns"
        log "created network namespace $ns"
    fi
    echo "$ns" > "$RUN/node$k.netns"
    ip -n "$ns" link set lo up
    if ! ip -n "$ns" link show pfs > /dev/null 2>&1; then
        ip -n "$NS" link del "node$k" 2> /dev/null || true
        ip -n "$ns" link add pfs type veth peer name "node$k" netns "$NS"
    fi
    ip -n "$ns" addr replace "$(node_addr "$k" 2)/30" dev pfs
    ip -n "$NS" addr replace "$(node_addr "$k" 1)/30" dev "node$k"
    ip -n "$ns" link set pfs up
    ip -n "$NS" link set "node$k" up
    ip -n "$ns" route replace "$ADDR/32" via "$(node_addr "$k" 1)" dev pfs
}
# node_client_start K SECONDS LOG CMD...: node K's client CMD, started in its
# network namespace after node_net_up (the old node gone), mounted at
# $MNT-nodeK within SECONDS, or the script dies pointing at LOG
node_client_start() {
    local k=$1 secs=$2 out=$3 mnt=$MNT-node$1 pidf
    shift 3
    pidf=$(node_client_pidfile "$k")
    spawn_in "/run/netns/$(node_ns "$k")" "$pidf" "$out" "$@"
    node_settled() { is_mounted "$mnt" || exited "$pidf"; }
    wait_for "$secs" "the mount at $mnt" node_settled
    is_mounted "$mnt" || die "$1 of node $k exited, see $out"
    wait_for 30 "the space of $mnt" has_space "$mnt"
    log "node $k: client pid $(< "$pidf") in namespace $(node_ns "$k") ($(node_addr "$k" 2)), mounted at $mnt"
}
has_space() { [ "$(stat -f -c %b "$1")" -gt 0 ]; }
# nodes_down_all: every node down, the host's link and the names gone
nodes_down_all() {
    local k
    for k in $(node_numbers); do
        node_down "$k"
    done
    host_link_down
    hosts_clean
    [ ! -e "$RUN/hosts" ] || : > "$RUN/hosts"
}
# node_mountpoint MOUNTPOINT: an empty directory to mount a node client on
# (a stale mount of ours there detached)
node_mountpoint() {
    if is_mounted "$1"; then
        log "stale FUSE mount at $1: detaching it"
        umount -l "$1" 2> /dev/null || true
    fi
    mkdir -p "$1"
    mountpoint -q "$1" && die "$1 is a mount point already, and not ours"
    return 0
}
# node_down K: unmount node K, stop its client, delete its namespace
node_down() {
    local k=$1 mnt pats pid
    # the node's own namespaces first: its mount namespace holds the client's
    # mount too, and while it does, unmounting it here does not end the client
    node_host_down "$k"
    mnt=$(cat "$RUN/node$k.mountpoint" 2> /dev/null || true)
    if [ -n "$mnt" ]; then
        if is_mounted "$mnt"; then
            umount "$mnt" 2> /dev/null || { log "umount $mnt failed (busy?): lazy unmount"; umount -l "$mnt" 2> /dev/null || true; }
            log "unmounted $mnt"
        fi
        mapfile -t pats < <(mount_pats "$mnt")
        if pid=$(term_pidfile "$(node_client_pidfile "$k")" "${pats[@]}"); then
            wait_gone "$pid" "$(node_client_pidfile "$k")" "node $k client" 30
        fi
    fi
    rm -f "$(node_client_pidfile "$k")" "$RUN/node$k.mountpoint" "$RUN/node$k.opts"
    if [ -s "$RUN/node$k.netns" ]; then
        local ns
        ns=$(< "$RUN/node$k.netns")
        # deleting the namespace deletes the veth pair
        [ -e "/run/netns/$ns" ] && ip netns del "$ns" && log "deleted network namespace $ns"
        rm -f "$RUN/node$k.netns"
    fi
}

# ---------------------------------------------------------------- simulated nodes
# Node K is more than a client: a mount namespace and a UTS namespace, kept
# by bind mounts of their files in $NODES_DIR (a private mount, as `ip netns`
# keeps /run/netns), in which the hostname is nodeK, /dev/shm, /tmp and
# /var/tmp are tmpfs of the node's own, /etc/hosts names every node, and the
# node's client (mounted on the host at MOUNTPOINT-nodeK) is bound over
# MOUNTPOINT, so that a program sees the shared file system at the same path
# on every node. Mounts made on the host later reach the nodes (slave
# propagation); theirs never reach the host. Routing: the servers'
# namespace forwards between the nodes' links and a link to the host
# ('sluice-nodes', 10.214.0.1), so nodes reach each other and the host.
NODES_DIR=/run/sluice-testbed/$NS
HOST_LINK=sluice-nodes
HOSTS_MARK="# sluice testbed $NS"
node_name() { echo "node$1"; }
nodes_dir_up() {
    mkdir -p "$NODES_DIR"
    if ! mountpoint -q "$NODES_DIR"; then
        mount --bind "$NODES_DIR" "$NODES_DIR"
        mount --make-private "$NODES_DIR"
    fi
}
# host_link_up: the host's link to the nodes (through the servers' namespace)
host_link_up() {
    if ip link show "$HOST_LINK" > /dev/null 2>&1 && ! ip -n "$NS" link show host > /dev/null 2>&1; then
        die "the nodes of another testbed are up (the host's link $HOST_LINK leads elsewhere); take them down first"
    fi
    if ! ip link show "$HOST_LINK" > /dev/null 2>&1; then
        ip -n "$NS" link del host 2> /dev/null || true
        ip link add "$HOST_LINK" type veth peer name host netns "$NS"
        log "created the host's link to the nodes ($HOST_LINK, $(node_addr 0 1))"
    fi
    ip addr replace "$(node_addr 0 1)/30" dev "$HOST_LINK"
    ip -n "$NS" addr replace "$(node_addr 0 2)/30" dev host
    ip link set "$HOST_LINK" up
    ip -n "$NS" link set host up
    ip route replace 10.214.0.0/16 via "$(node_addr 0 2)" dev "$HOST_LINK"
    "${EXEC[@]}" sysctl -q -w net.ipv4.ip_forward=1
}
host_link_down() {
    # (only our own: its other end is in our namespace)
    ip link show "$HOST_LINK" > /dev/null 2>&1 && has_netns && ip -n "$NS" link show host > /dev/null 2>&1 || return 0
    ip link del "$HOST_LINK" && log "deleted the host's link to the nodes"
}
# hosts_write: the nodes' names in $RUN/hosts (the nodes' /etc/hosts, rewritten
# in place so that every node sees the change) and in the host's /etc/hosts
# (lines marked with $HOSTS_MARK, removed by hosts_clean)
hosts_write() {
    local k lines=()
    for k in $(node_numbers); do
        [ -s "$RUN/node$k.uts" ] && lines+=("$(node_addr "$k" 2) $(node_name "$k") $HOSTS_MARK")
    done
    {
        echo "127.0.0.1 localhost"
        echo "$(node_addr 0 1) $(hostname) head $HOSTS_MARK"
        printf '%s\n' "${lines[@]}"
    } > "$RUN/hosts.new"
    cat "$RUN/hosts.new" > "$RUN/hosts"
    rm -f "$RUN/hosts.new"
    hosts_clean
    [ ${#lines[@]} = 0 ] || printf '%s\n' "${lines[@]}" >> /etc/hosts
    # Open MPI's hostfile: as many slots per node as the machine has cores
    # (the nodes share them)
    for k in $(node_numbers); do
        [ -s "$RUN/node$k.uts" ] && echo "$(node_name "$k") slots=$(nproc)"
    done > "$RUN/hostfile"
}
hosts_clean() {
    grep -qF "$HOSTS_MARK" /etc/hosts 2> /dev/null || return 0
    local kept
    kept=$(grep -vF "$HOSTS_MARK" /etc/hosts || true)
    printf '%s\n' "$kept" > /etc/hosts
}
# node_host_up K MOUNTPOINT: node K's mount and UTS namespaces (see above)
node_host_up() {
    local k=$1 mnt=$2 name
    name=$(node_name "$k")
    node_host_down "$k"
    nodes_dir_up
    : > "$NODES_DIR/$name.mnt"
    : > "$NODES_DIR/$name.uts"
    touch "$RUN/hosts"
    # The software the nodes run (sluice's own tree, its Python environment)
    # is shared as on a cluster, also where it lives under /tmp or /var/tmp:
    # those directories are held aside, then bound into the node's new /tmp
    # and /var/tmp (SLUICE_TESTBED_NODE_SHARE, colon-separated, set by the
    # Python side).
    nsenter "--net=/run/netns/$(node_ns "$k")" unshare "--mount=$NODES_DIR/$name.mnt" "--uts=$NODES_DIR/$name.uts" \
        --propagation slave /bin/sh -euc '
            umount -l "$1" 2> /dev/null || true
            hostname "$2"
            mount --bind "$3" /etc/hosts
            mount -t tmpfs -o mode=1777,nosuid,nodev "sluice-$2" /dev/shm
            hold=/dev/shm/.sluice-node-share
            i=0
            old_ifs=$IFS
            IFS=:
            for p in $6; do
                case $p in /tmp/?* | /var/tmp/?*) ;; *) continue ;; esac
                [ -d "$p" ] || continue
                mkdir -p "$hold/$i"
                mount --bind "$p" "$hold/$i"
                i=$((i + 1))
            done
            IFS=$old_ifs
            for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777,nosuid,nodev "sluice-$2" "$d"; done
            i=0
            IFS=:
            for p in $6; do
                case $p in /tmp/?* | /var/tmp/?*) ;; *) continue ;; esac
                [ -d "$hold/$i" ] || continue
                mkdir -p "$p"
                mount --move "$hold/$i" "$p"
                rmdir "$hold/$i"
                i=$((i + 1))
            done
            IFS=$old_ifs
            rmdir "$hold" 2> /dev/null || true
            mkdir -p "$5"
            mount --bind "$4" "$5"
        ' node-setup "$NODES_DIR" "$name" "$RUN/hosts" "$mnt" "$MNT" "${SLUICE_TESTBED_NODE_SHARE:-}" 9>&- ||
        die "could not set up node $k's namespaces"
    echo "$name" > "$RUN/node$k.uts"
    ip -n "$(node_ns "$k")" route replace 10.214.0.0/16 via "$(node_addr "$k" 1)" dev pfs
}
# node_host_ready K: node K's namespaces exist and see its client at $MNT
node_host_ready() {
    local name
    name=$(node_name "$1")
    [ -s "$RUN/node$1.uts" ] && [ -e "$NODES_DIR/$name.mnt" ] &&
        nsenter "--mount=$NODES_DIR/$name.mnt" "--uts=$NODES_DIR/$name.uts" /bin/sh -c \
            '[ "$(hostname)" = "$1" ] && grep -qF " $2 $3 " /proc/self/mounts' - "$name" "$MNT" "$MOUNT_TYPE" 9>&- \
            2> /dev/null
}
# nodes_apply N: nodes 1..N up (node_up K, then their namespaces), the
# others down, the host's link and the names; with N empty nothing changes
nodes_apply() {
    local n=$1 k before
    [ -n "$n" ] || return 0
    if [ "$n" -gt 0 ] && ip link show "$HOST_LINK" > /dev/null 2>&1 && ! ip -n "$NS" link show host > /dev/null 2>&1; then
        die "the nodes of another testbed are up (the host's link $HOST_LINK leads elsewhere); take them down first"
    fi
    for k in $(node_numbers); do
        [ "$k" -le "$n" ] || node_down "$k"
    done
    for k in $(seq 1 "$n"); do
        # a node whose client was (re)mounted gets new namespaces: the old ones
        # still show the old mount
        before=$(cat "$(node_client_pidfile "$k")" 2> /dev/null || true)
        node_up "$k"
        if [ "$before" != "$(< "$(node_client_pidfile "$k")")" ] || ! node_host_ready "$k"; then
            node_host_up "$k" "$MNT-node$k"
            log "node $k: hostname $(node_name "$k"), its own /dev/shm, /tmp and /var/tmp, its client at $MNT"
        fi
    done
    if [ "$n" -gt 0 ]; then host_link_up; else host_link_down; fi
    hosts_write
}
# node_host_down K: end node K's processes and namespaces
node_host_down() {
    local k=$1 name ns pids
    name=$(node_name "$k") ns=$(node_ns "$k")
    if [ -e "/run/netns/$ns" ]; then
        # whatever still runs on the node (a job's ranks, a daemon) ends with it
        local client
        client=$(cat "$(node_client_pidfile "$k")" 2> /dev/null || true)
        pids=$(ip netns pids "$ns" 2> /dev/null | grep -vxF "${client:-none}" | tr '\n' ' ' || true)
        if [ -n "${pids// /}" ]; then
            # shellcheck disable=SC2086  # a list of PIDs
            kill -KILL $pids 2> /dev/null || true
            log "node $k: killed what still ran there ($pids)"
        fi
    fi
    local f
    for f in "$NODES_DIR/$name.mnt" "$NODES_DIR/$name.uts"; do
        [ -e "$f" ] || continue
        umount "$f" 2> /dev/null || umount -l "$f" 2> /dev/null || true
        rm -f "$f"
    done
    rm -f "$RUN/node$k.uts"
}

# ---------------------------------------------------------------- shared by start and stop scripts
TESTBED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# netns_up: the daemons' namespace (created if missing, and then marked as
# ours), its loopback up with $ADDR on it
netns_up() {
    if ! has_netns; then
        ip netns add "$NS"
        echo "$NS" > "$RUN/netns.created-by-us"
        log "created network namespace $NS"
    fi
    ip -n "$NS" link set lo up
    ip -n "$NS" -4 addr show dev lo | grep -qF " $ADDR/" || ip -n "$NS" addr add "$ADDR/32" dev lo
}
# netns_down: delete the namespace if netns_up created it
netns_down() {
    local left
    if [ -s "$RUN/netns.created-by-us" ] && [ "$(< "$RUN/netns.created-by-us")" = "$NS" ]; then
        if has_netns; then
            left=$(ip netns pids "$NS" 2> /dev/null | tr '\n' ' ')
            [ -z "$left" ] || log "warning: processes still in namespace $NS: $left"
            ip netns del "$NS" && log "deleted network namespace $NS"
        fi
        rm -f "$RUN/netns.created-by-us"
    fi
}

# install_missing PACKAGE...: apt-get install them (none: nothing to do)
install_missing() {
    [ $# -gt 0 ] || return 0
    [ "${SLUICE_TESTBED_NO_INSTALL:-0}" = 1 ] && die "missing packages: $*"
    log "installing: $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 install -y -q "$@" > /dev/null 2>&1 || {
        apt-get -o DPkg::Lock::Timeout=600 update -q > /dev/null 2>&1
        apt-get -o DPkg::Lock::Timeout=600 install -y -q "$@" > /dev/null 2>&1
    } || die "apt-get install $* failed"
}
# delay_packages: the packages the delay helper needs, when a delay is asked for
delay_packages() {
    [ "$DELAY_US" -gt 0 ] || return 0
    command -v iptables > /dev/null 2>&1 || echo iptables
    command -v gcc > /dev/null 2>&1 || echo gcc
    [ -f /usr/include/libnetfilter_queue/libnetfilter_queue.h ] || echo libnetfilter-queue-dev
}

wait_for() {   # wait_for SECONDS DESCRIPTION COMMAND...
    local what=$2 end=$((SECONDS + $1))
    shift 2
    until "$@" > /dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || die "timed out waiting for $what (logs in $STATE/log)"
        sleep 0.05
    done
}
# spawn PIDFILE LOGFILE COMMAND...: start COMMAND inside the namespace, in a
# session of its own, without the lock's file descriptor
spawn() { spawn_in "$NSFILE" "$@"; }
# spawn_in NETNSFILE PIDFILE LOGFILE COMMAND...: the same in another namespace
spawn_in() {
    local nsfile=$1 pidfile=$2 logfile=$3
    shift 3
    setsid nsenter "--net=$nsfile" "$@" >> "$logfile" 2>&1 < /dev/null 9>&- &
    echo $! > "$pidfile"
}

# delay_apply: the NFQUEUE delay helper and its rules in namespace $NS,
# brought to $DELAY_US (0: helper and rules removed)
delay_apply() {
    local have src bin nlog r
    # A running helper with another delay is replaced; delay 0 removes it and the rule.
    have=0
    alive "$RUN/nfq-delay.pid" "$(nfq_pat)" && have=$(cat "$RUN/delay_us" 2> /dev/null || echo 0)
    if [ "$have" != "$DELAY_US" ]; then
        stop_pidfile "delay helper" 10 "$RUN/nfq-delay.pid" "$(nfq_pat)"
        rm -f "$RUN/delay_us"
    fi
    if [ "$DELAY_US" -gt 0 ]; then
        if ! alive "$RUN/nfq-delay.pid" "$(nfq_pat)"; then
            src=$TESTBED_DIR/nfq-delay.c bin=$STATE/nfq-delay
            [ -f "$src" ] || die "nfq-delay.c is missing beside common.sh"
            if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
                log "compiling the delay helper into $bin"
                gcc -O2 -Wall -o "$bin.tmp" "$src" -lnetfilter_queue -lnfnetlink > "$STATE/log/nfq-delay-build.log" 2>&1 ||
                    die "could not compile nfq-delay.c, see $STATE/log/nfq-delay-build.log"
                mv -f "$bin.tmp" "$bin"
            fi
            nlog=$STATE/log/nfq-delay.log
            [ -f "$nlog" ] && mv -f "$nlog" "$nlog.1"
            spawn "$RUN/nfq-delay.pid" "$nlog" "$bin" -q 0 -d "$DELAY_US" -r "$RTPRIO"
            # it prints this line once it has bound the queue
            nfq_settled() { grep -qF "nfq-delay: queue 0, one-way delay $DELAY_US us" "$nlog" || ! alive "$RUN/nfq-delay.pid" "$(nfq_pat)"; }
            wait_for 10 "the delay helper" nfq_settled
            alive "$RUN/nfq-delay.pid" "$(nfq_pat)" || die "the delay helper exited, see $nlog"
            echo "$DELAY_US" > "$RUN/delay_us"
            log "started the delay helper (pid $(< "$RUN/nfq-delay.pid"))"
        fi
        for r in "${NFQ_RULES[@]}"; do
            # shellcheck disable=SC2086  # a rule is words
            "${EXEC[@]}" iptables -C $r "${NFQ_TARGET[@]}" 2> /dev/null || "${EXEC[@]}" iptables -A $r "${NFQ_TARGET[@]}"
        done
        log "delay: $DELAY_US us one-way on every packet in namespace $NS (and on its links to node clients)"
    else
        nfq_rule_del
    fi
}
