#!/bin/sh
# node-rsh.sh - enter a simulated node of the testbed, as ssh would log in to
# it: Open MPI's launch agent (plm_rsh_agent) and `sluice testbed exec`.
#
# usage: node-rsh.sh [-x] [-n] NODE COMMAND...
#   NODE:    nodeK, or its address 10.214.K.2
#   COMMAND: its words are joined with spaces and run by /bin/sh on the node,
#            from the home directory (what ssh does)
# env:     SLUICE_TESTBED_NETNS (default sluice-pfs)
set -eu
while [ $# -gt 0 ]; do
    case $1 in
        -x | -n | -T | -q) shift ;;
        -*) echo "node-rsh: unknown option $1" >&2; exit 255 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "usage: node-rsh.sh NODE COMMAND..." >&2; exit 255; }
node=$1
shift
case $node in
    node[1-8]) k=${node#node} ;;
    10.214.[1-8].2) k=${node#10.214.}; k=${k%.2} ;;
    *) echo "node-rsh: $node is not a testbed node (node1..node8)" >&2; exit 255 ;;
esac
ns=${SLUICE_TESTBED_NETNS:-sluice-pfs}
dir=/run/sluice-testbed/$ns
[ -e "/run/netns/$ns-n$k" ] && [ -e "$dir/node$k.mnt" ] ||
    { echo "node-rsh: node$k is not up (sluice testbed up --nodes N)" >&2; exit 255; }
# Under `sluice run -- mpirun`, nsenter and the shell that enter the node
# are the launch path, not the job: the preload skips them and is given back
# to the command (orted), which carries it to the ranks.
if [ -n "${LD_PRELOAD+set}" ]; then
    SLUICE_NODE_RSH_PRELOAD=$LD_PRELOAD
    export SLUICE_NODE_RSH_PRELOAD
    unset LD_PRELOAD
fi
exec nsenter "--net=/run/netns/$ns-n$k" "--mount=$dir/node$k.mnt" "--uts=$dir/node$k.uts" /bin/sh -c '
    cd "${HOME:-/}" 2> /dev/null || cd /
    if [ -n "${SLUICE_NODE_RSH_PRELOAD+set}" ]; then
        LD_PRELOAD=$SLUICE_NODE_RSH_PRELOAD
        export LD_PRELOAD
        unset SLUICE_NODE_RSH_PRELOAD
    fi
    eval "exec $1"' node-rsh "$*"
