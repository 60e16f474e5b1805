#!/bin/bash
# A container's box as a runtime builds it for a non-privileged container
# on the host network, for tests/vm/scenarios/confined.sh. Run by `unshare
# -m -p -f --propagation slave` (its own mounts and PIDs, the host's
# network), as root with every capability; execs CMD inside.
#   box-enter.sh ROOT CAPS N "HOSTDIR MOUNTPATH ro|rw"... M NAME=VALUE... CMD...
# - the image: railcni's three binaries at / (what deploy/Containerfile
#   holds); the debug builds are dynamically linked, so the machine's /usr
#   is there too, read-only, standing in for the libraries a static build
#   does without (and giving the box setpriv);
# - the root read-only (readOnlyRootFilesystem), /proc this PID namespace's
#   with /proc/sys read-only (runc's readonlyPaths), /sys read-only (what
#   a runtime gives a non-privileged container), /dev a tmpfs with null,
#   zero and urandom only;
# - each volume at its mountPath, read-only where the manifest says;
#   HostToContainer propagation: a namespace the host adds or deletes under
#   /run/netns later shows here too (this namespace is the host's slave);
# - the capability bounding set exactly CAPS, nothing inheritable, and
#   no_new_privs (allowPrivilegeEscalation: false); uid 0 as in the image.
set -eu
root=$1 caps=$2
shift 2
n=$1; shift
mounts=("${@:1:n}"); shift "$n"
n=$1; shift
envs=("${@:1:n}"); shift "$n"

mount -t tmpfs -o mode=0755 box-root "$root"
mkdir -p "$root"/{usr,proc,sys,dev}
for b in railcni railcni-ipam railcnictl; do
  touch "$root/$b"
  mount --bind "$RAILCNI_BIN_DIR/$b" "$root/$b"
done
mount --rbind /usr "$root/usr"
mount -o remount,bind,ro "$root/usr"
for l in bin sbin lib lib64; do ln -s "usr/$l" "$root/$l"; done
mount -t proc proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount -o remount,bind,ro "$root/proc/sys"
mount -t sysfs -o ro sysfs "$root/sys"
mount -t tmpfs -o mode=0755 box-dev "$root/dev"
for d in null zero urandom; do
  touch "$root/dev/$d"
  mount --bind "/dev/$d" "$root/dev/$d"
done
for m in "${mounts[@]}"; do
  read -r src dst mode <<<"$m"
  if [ -f "$src" ]; then   # a file volume (hostPath type File)
    mkdir -p "$(dirname "$root$dst")" && touch "$root$dst"
  else
    mkdir -p "$src" "$root$dst"
  fi
  mount --rbind "$src" "$root$dst"
  [ "$mode" = rw ] || mount -o remount,bind,ro "$root$dst"
done
mount -o remount,ro "$root"
bounding=-all
[ -n "$caps" ] && bounding+=",+${caps//,/,+}"
exec chroot "$root" /usr/bin/setpriv --bounding-set "$bounding" --inh-caps -all --no-new-privs -- \
  /usr/bin/env -i PATH=/usr/bin "${envs[@]}" "$@"
