# cephfs-common.sh - settings and helpers of the CephFS testbed, shared by
# cephfs-start.sh and cephfs-stop.sh (sourced).  The generic helpers (lock,
# PID files, spawn, the delay helper) are common.sh's: this file points them
# at the CephFS testbed's own state folder and network namespace.
#
# Settings (environment variables, all optional):
#   SLUICE_CEPHFS_STATE_DIR   config, monitor store, OSD block files, logs, PID
#                             files (default /var/tmp/sluice-cephfs)
#   SLUICE_CEPHFS_NETNS       network namespace of the daemons (default sluice-ceph)
#   SLUICE_CEPHFS_ADDR        address on the namespace's own loopback (default 10.215.0.1)
#   SLUICE_CEPHFS_OSDS        number of OSDs, 1..9 (default 3)
#   SLUICE_CEPHFS_OSD_SIZE    size of each OSD's BlueStore block file, a sparse
#                             file (default 8G; used when the OSD is created)
#   SLUICE_CEPHFS_NODES       simulated nodes, 0..8, each with a ceph-fuse client of
#                             its own (common.sh, "simulated nodes"); unset: unchanged
#   SLUICE_TESTBED_DELAY_US   one-way delay added to every packet, in µs (default 0)
#   SLUICE_TESTBED_NO_INSTALL=1  never call apt-get

SLUICE_TESTBED_STATE_DIR=${SLUICE_CEPHFS_STATE_DIR:-/var/tmp/sluice-cephfs}
SLUICE_TESTBED_NETNS=${SLUICE_CEPHFS_NETNS:-sluice-ceph}
SLUICE_TESTBED_ADDR=${SLUICE_CEPHFS_ADDR:-10.215.0.1}
# common.sh's MooseFS settings do not apply here
unset SLUICE_TESTBED_CLIENTS SLUICE_TESTBED_CLIENT_OPTS SLUICE_TESTBED_MOUNT_OPTS
MOUNT_TYPE=fuse.ceph-fuse
CLIENT_PROG=ceph-fuse
# shellcheck source=common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

NOSD=${SLUICE_CEPHFS_OSDS:-3}
CLIENTS=${SLUICE_CEPHFS_NODES:-}
OSD_SIZE=${SLUICE_CEPHFS_OSD_SIZE:-8G}
CONF=$STATE/etc/ceph.conf
MON_PORT=3300
FSNAME=cephfs

# patterns that identify our daemons by their command lines
ceph_pat() { echo "$1 -f -c $CONF"; }          # ceph_pat DAEMON
osd_pat() { echo "ceph-osd -f -c $CONF -i $1"; }
fuse_pats() { echo "ceph-fuse -f -c $CONF"; }
# (common.sh's, for the node clients: ceph-fuse at MOUNTPOINT)
mount_pats() { echo "ceph-fuse -f -c $CONF $1"; }
# ceph_mounted MOUNTPOINT: a ceph-fuse mount is at MOUNTPOINT
ceph_mounted() { grep -qF " $1 fuse.ceph-fuse " /proc/self/mounts; }
fuse_alive() { alive "$RUN/ceph-fuse.pid" "$(fuse_pats)"; }
# cephc ARGS...: the ceph command line tool, inside the namespace
cephc() { "${EXEC[@]}" ceph -c "$CONF" --connect-timeout 10 "$@"; }
