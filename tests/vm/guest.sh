#!/bin/bash
# The emulated node's side of scripts/vm.sh, run chrooted in this machine's
# root: load the guest kernel's NIC drivers, find the igb PFs, then run the
# scenario (its lines to /run/out/log, its exit status to /run/out/rc) or a
# shell. The repository is at /run/repo, the binaries at /run/bin.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
set -a; . /run/out/job.env; set +a
RAILCNI_REPO=/run/repo RAILCNI_BIN_DIR=/run/bin
case "${RAILCNI_SCENARIO:-}" in
  "") ;;
  */*) RAILCNI_SCENARIO=/run/repo/$RAILCNI_SCENARIO ;;
  *) RAILCNI_SCENARIO=/run/repo/tests/vm/scenarios/$RAILCNI_SCENARIO.sh ;;
esac
modules=$(sed -n 's/.*railcni\.modules=\([^ ]*\).*/\1/p' /proc/cmdline)
export RAILCNI_VM_MODULES=$modules
modprobe() { command modprobe -d "$RAILCNI_VM_MODULES" "$@"; }
export -f modprobe
# Without udev nothing loads a driver for a new device (and Debian's kernel
# has no uevent helper): the drivers are loaded here, and the driver core
# binds every VF that appears later to the loaded igbvf.
for m in igb igbvf 8021q; do modprobe "$m" || echo "guest: modprobe $m failed" >&2; done
ip link set lo up
. "$RAILCNI_REPO/tests/vm/lib.sh"
if [ -z "${RAILCNI_SCENARIO:-}" ]; then
  vm_discover
  echo "railcni emulated SR-IOV node: PFs ${VM_PFS[*]} (leaf ${VM_LEAF_PF}); poweroff -f ends it"
  exec setsid -c bash -i <>/dev/ttyS0 >&0 2>&0
fi
: > /run/out/log
echo "# guest up after $(cut -d' ' -f1 /proc/uptime) s; PFs: $(ls /sys/bus/pci/drivers/igb | grep -c '^0000:')" >> /run/out/log
( vm_discover && . "$RAILCNI_SCENARIO" ) > >(tee -a /run/out/log) 2>&1
rc=$?
sleep 0.2
echo "$rc" > /run/out/rc
