#!/usr/bin/env bash
# Install what the test suite needs, from Debian's packages, if it is missing:
# iproute2 and ping (namespaces, packets), strace (netlink captures), Go and
# containernetworking's libcni sources (the real-client test), and the
# reference plugins (host-local, host-device) railcni is compared with,
# podman (the installer image test), containerd's go-cni (a second client)
# a C compiler with static libc (the benchmark's no-op plugin), and
# Prometheus with promtool and curl (the metrics tests), and containerd,
# runc and protoc (the CRI tests and their client's build), and the emulated
# SR-IOV node (scripts/vm.sh prepare: QEMU, a guest kernel, an initramfs),
# whose guest runs the host's rping with the rxe provider and tcpdump (the
# rdma-qos scenario's packets on the wire).
set -euo pipefail

need=()
command -v ip >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
command -v strace >/dev/null || need+=(strace)
command -v go >/dev/null || need+=(golang-go)
[ -d /usr/share/gocode/src/github.com/containernetworking/cni/libcni ] || need+=(golang-github-appc-cni-dev)
[ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/host-device ] || need+=(containernetworking-plugins)
command -v podman >/dev/null || need+=(podman)
[ -x /usr/bin/time ] || need+=(time)
[ -d /usr/share/gocode/src/github.com/containerd/go-cni ] || need+=(golang-github-containerd-go-cni-dev)
command -v cc >/dev/null || need+=(gcc)
command -v promtool >/dev/null && command -v prometheus >/dev/null || need+=(prometheus)
command -v curl >/dev/null || need+=(curl)
command -v containerd >/dev/null && command -v ctr >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
command -v protoc >/dev/null || need+=(protobuf-compiler)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(libc6-dev)
command -v rping >/dev/null || need+=(rdmacm-utils)
[ -f /etc/libibverbs.d/rxe.driver ] || need+=(ibverbs-providers)
command -v tcpdump >/dev/null || need+=(tcpdump)

if ((${#need[@]})); then
  echo "install-test-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# The Kubernetes schemas, offline (scripts/validate-k8s.py); jsonschema comes with it.
python3 -c 'import kubernetes_validate, yaml' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore kubernetes-validate==1.37.0 pyyaml
# cargo-deny (scripts/test.sh) and cargo-auditable (scripts/build-static.sh).
"$(dirname "$0")/install-cargo-tools.sh"
# The emulated SR-IOV node: QEMU 10 and a 6.12 kernel from bookworm-backports.
"$(dirname "$0")/vm.sh" prepare
