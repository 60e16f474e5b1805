#!/usr/bin/env bash
# The emulated SR-IOV node: a QEMU guest with emulated Intel 82576 NICs
# (`-device igb`) whose VFs the guest kernel's own igb/igbvf drivers serve.
#
#   vm.sh prepare                 fetch QEMU (bookworm-backports), a 6.12 kernel
#                                 (unpacked, not installed) and build the initramfs
#   vm.sh run SCENARIO [OUT]      boot, run tests/vm/scenarios/SCENARIO.sh (or a
#                                 script of the repository given by its path) in
#                                 the guest, print its lines, exit with its status
#   vm.sh shell                   boot into an interactive bash in the guest
#
# A scenario names its rail PFs (`# nics: N`, default 4) and whether the guest
# gets an emulated IOMMU (`# iommu: on`, for vfio-pci).
#
# Environment: RAILCNI_VM_NICS (rail PFs besides the leaf's, default 4),
# RAILCNI_VM_CACHE (default /var/cache/railcni-vm), RAILCNI_BIN_DIR (where
# railcni, railcnictl and railcni-ipam are; default target/debug),
# RAILCNI_VM_ACCEL (tcg, or kvm where KVM really runs guest code),
# RAILCNI_VM_SMP (vCPUs, default 1), RAILCNI_VM_BOOT_TIMEOUT (default 60 s).
# The guest's root is this machine's root, read-only over 9p: the guest runs
# this machine's bash and iproute2; the repository and the binaries are
# shared at /run/repo and /run/bin, and OUT (read-write) carries the
# scenario's output back.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${RAILCNI_VM_CACHE:-/var/cache/railcni-vm}
kdir="$cache/kernel"

die() { echo "vm.sh: $*" >&2; exit 2; }

kernel_version() { ls "$kdir/lib/modules" 2>/dev/null | sort -V | tail -n 1; }

prepare() {
  [ "$(id -u)" = 0 ] || die "prepare needs root (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  local need=()
  command -v busybox >/dev/null || need+=(busybox-static)
  command -v modprobe >/dev/null && command -v depmod >/dev/null || need+=(kmod)
  command -v zstd >/dev/null || need+=(zstd)
  command -v xz >/dev/null || need+=(xz-utils)
  command -v cpio >/dev/null || need+=(cpio)
  command -v jq >/dev/null || need+=(jq)
  command -v ping >/dev/null || need+=(iputils-ping)
  command -v tc >/dev/null || need+=(iproute2)
  local backports=/etc/apt/sources.list.d/bookworm-backports.sources
  local have_qemu=0
  if command -v qemu-system-x86_64 >/dev/null &&
     qemu-system-x86_64 -device help 2>/dev/null | grep -q '"igb"'; then have_qemu=1; fi
  if ((!have_qemu)) || [ -z "$(kernel_version)" ]; then
    if [ ! -f "$backports" ] && ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$backports"
    fi
    apt-get update -qq
  fi
  ((${#need[@]})) && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  ((have_qemu)) || apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
  mkdir -p "$cache"
  if [ -z "$(kernel_version)" ]; then
    local pkg
    pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' | awk '{print $1}' | sort -V | tail -n 1)
    [ -n "$pkg" ] || die "no linux-image-6.12.*-amd64-unsigned in bookworm-backports"
    local tmp; tmp=$(mktemp -d "$cache/dl.XXXXXX")
    (cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1) || die "cannot download $pkg"
    rm -rf "$kdir.new" && mkdir -p "$kdir.new"
    dpkg -x "$tmp"/*.deb "$kdir.new"
    rm -rf "$tmp"
    local ver; ver=$(ls "$kdir.new/lib/modules")
    depmod -b "$kdir.new" "$ver"
    # The PVH entry of the uncompressed kernel boots without firmware.
    local z="$kdir.new/boot/vmlinuz-$ver" off
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$z" | head -n 1 | cut -d: -f1)
    tail -c +$((off + 1)) "$z" | zstd -dcq > "$kdir.new/vmlinux" 2>/dev/null || true
    [ -s "$kdir.new/vmlinux" ] || die "cannot extract vmlinux from $z"
    rm -rf "$kdir" && mv "$kdir.new" "$kdir"
  fi
  initramfs
}

# busybox and the 9p modules: enough to mount this machine's root.
initramfs() {
  local ver; ver=$(kernel_version)
  local out="$cache/initramfs-$ver.cpio.gz"
  [ "$out" -nt "$here/tests/vm/init" ] && return 0
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$tmp"/{bin,lib,proc,sys,dev,newroot}
  cp "$(command -v busybox)" "$tmp/bin/busybox"
  local m
  for m in netfs 9pnet 9pnet_virtio 9p; do
    xz -dc "$(modinfo -b "$kdir" -k "$ver" -n "$m")" > "$tmp/lib/$m.ko"
  done
  cp "$here/tests/vm/init" "$tmp/init" && chmod 755 "$tmp/init"
  (cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.tmp"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
}

# Boot with the job in the out dir $1 (job.env: the scenario's name).
boot() {
  local out=$1 ver nics=${RAILCNI_VM_NICS:-4} bin
  bin=$(cd "${RAILCNI_BIN_DIR:-$here/target/debug}" && pwd)
  ver=$(kernel_version)
  [ -n "$ver" ] && [ -s "$kdir/vmlinux" ] || die "no guest kernel: run scripts/vm.sh prepare (scripts/install-test-deps.sh does)"
  command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64: run scripts/vm.sh prepare"
  initramfs
  local accel=${RAILCNI_VM_ACCEL:-tcg}
  local cpu=max
  [ "$accel" = kvm ] && cpu=host
  # An emulated IOMMU (passthrough for the host's own drivers) gives VFs
  # IOMMU groups: vfio-pci (DPDK mode) needs them, and Debian's kernel has
  # no no-IOMMU mode. Only for scenarios that ask (`# iommu: on`), and with
  # one TCG thread: QEMU 10's TCG with intel-iommu was seen to abort at boot
  # (iotlb_to_section) with several.
  local iommu=() cmdline="console=ttyS0 quiet loglevel=4 panic=-1 railcni.modules=$kdir pci=realloc"
  if [ "${RAILCNI_VM_IOMMU:-off}" = on ]; then
    iommu=(-device intel-iommu)
    cmdline+=" intel_iommu=on iommu=pt"
    [ "$accel" = tcg ] && accel=tcg,thread=single
  fi
  # One vCPU by default: two TCG vCPU threads on a 2-core host that is also
  # running the test suite starve one another, and a guest whose vCPU is not
  # scheduled misses its timer ticks in early boot (rcu_preempt "timer
  # wakeup didn't happen"); the scenarios run one process at a time anyway.
  local args=(-machine q35 -accel "$accel" -cpu "$cpu" -smp "${RAILCNI_VM_SMP:-1}" -m 1536 -nographic -no-reboot
    "${iommu[@]}"
    -kernel "$kdir/vmlinux" -initrd "$cache/initramfs-$ver.cpio.gz"
    -append "$cmdline"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on"
    -virtfs "local,path=$here,mount_tag=repo,security_model=none,readonly=on"
    -virtfs "local,path=$bin,mount_tag=bin,security_model=none,readonly=on"
    -virtfs "local,path=$out,mount_tag=out,security_model=none")
  # NIC 0 is the leaf switch's port; 1..N carry the rails. One hub joins them.
  local i
  for ((i = 0; i <= nics; i++)); do
    args+=(-device "pcie-root-port,id=rp$i,bus=pcie.0,chassis=$((i + 1)),slot=$((i + 1))"
      -netdev "hubport,id=hp$i,hubid=0"
      -device "igb,netdev=hp$i,bus=rp$i,mac=52:54:00:00:00:$(printf %02x $((i + 16)))")
  done
  qemu-system-x86_64 "${args[@]}"
}

# boot, with a watchdog: a guest that has not started its scenario within
# RAILCNI_VM_BOOT_TIMEOUT s (default 60; it takes about 5 s) is ended, and
# one whose scenario has not ended within RAILCNI_VM_TIMEOUT s (default 900).
# The verdict is the return code, never a line in the console file (QEMU
# holds that file open and its last words land over anything appended):
# 0 the guest ran and ended, 10 it never started the scenario, 11 the
# scenario ran past its time.
watched_boot() { # <out>
  local out=$1 qemu t=0 verdict=0
  boot "$out" > "$out/console" 2>&1 < /dev/null &
  qemu=$!
  while kill -0 "$qemu" 2>/dev/null; do
    sleep 1
    t=$((t + 1))
    if [ ! -s "$out/log" ] && ((t > ${RAILCNI_VM_BOOT_TIMEOUT:-60})); then
      echo "vm.sh: no scenario line after $t s; ending the guest" >&2
      verdict=10
    elif ((t > ${RAILCNI_VM_TIMEOUT:-900})); then
      echo "vm.sh: the scenario ran past $t s; ending the guest" >&2
      verdict=11
    else
      continue
    fi
    pkill -P "$qemu" 2>/dev/null; kill "$qemu" 2>/dev/null
    break
  done
  wait "$qemu" 2>/dev/null || true
  return "$verdict"
}

run() {
  local scenario=${1:?usage: vm.sh run SCENARIO [OUT]} out=${2:-}
  # A name is a scenario of tests/vm/scenarios; a path (with a slash) is a
  # script of the repository (benches/vm/…).
  local script="$here/tests/vm/scenarios/$scenario.sh"
  [[ "$scenario" == */* ]] && script="$here/$scenario"
  [ -f "$script" ] || die "no scenario $script"
  local own=0
  if [ -z "$out" ]; then out=$(mktemp -d /tmp/railcni-vm-XXXXXX); own=1; fi
  mkdir -p "$out"
  rm -f "$out/rc" "$out/log"
  # A scenario may ask for its number of rail PFs (`# nics: N`) and for an
  # IOMMU (`# iommu: on`).
  local nics
  nics=$(sed -n 's/^# nics: *\([0-9]*\).*/\1/p' "$script" | head -n 1)
  export RAILCNI_VM_NICS=${nics:-${RAILCNI_VM_NICS:-4}}
  grep -q '^# iommu: on' "$script" && export RAILCNI_VM_IOMMU=on
  printf 'RAILCNI_SCENARIO=%s\nRAILCNI_VM_NICS=%s\n' "$scenario" "$RAILCNI_VM_NICS" > "$out/job.env"
  env | grep '^RAILCNI_BENCH_' >> "$out/job.env" || true
  local started=$SECONDS try
  for try in 1 2 3; do
    rm -f "$out/log" "$out/rc"
    local verdict=0
    watched_boot "$out" || verdict=$?
    # A scenario that started is the scenario's: its result stands.
    [ -s "$out/log" ] && break
    # QEMU died or hung before the scenario's first line (the watchdog
    # ended it, or the emulator aborted): not a test's failure, so boot
    # again, at most three times.
    ((verdict == 10)) || grep -q "Assertion\|Aborted\|core dumped" "$out/console" || break
    echo "vm.sh: the guest did not start the scenario (try $try); booting again" >&2
    tail -n 3 "$out/console" >&2
  done
  cat "$out/log" 2>/dev/null || true
  local rc
  rc=$(cat "$out/rc" 2>/dev/null || echo "")
  if [ -z "$rc" ]; then
    echo "vm.sh: the guest ended without a result after $((SECONDS - started)) s; its console:" >&2
    tail -n 40 "$out/console" >&2
    rc=3
  fi
  echo "vm.sh: $scenario: exit $rc after $((SECONDS - started)) s"
  ((own)) && rm -rf "$out"
  return "$rc"
}

shell() {
  local out; out=$(mktemp -d /tmp/railcni-vm-XXXXXX)
  printf 'RAILCNI_SCENARIO=\nRAILCNI_VM_NICS=%s\n' "${RAILCNI_VM_NICS:-4}" > "$out/job.env"
  boot "$out"
  rm -rf "$out"
}

case "${1:-}" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  shell) shell ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
