#!/usr/bin/env bash
# Boot the emulated SR-IOV node N times in a row (default 50) with one
# scenario (default smoke) and count what went wrong: scenario failures,
# guests that never started their scenario (vm.sh boots those again, at most
# three times) and runs that ended without a result.
#   scripts/vm-soak.sh [N] [SCENARIO]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-50} scenario=${2:-smoke}
out=$(mktemp -d /tmp/railcni-vm-soak-XXXXXX)
trap 'rm -rf "$out"' EXIT
ok=0 failed=0 reboots=0 noresult=0
for ((i = 1; i <= n; i++)); do
  start=$SECONDS
  "$here/scripts/vm.sh" run "$scenario" > "$out/stdout" 2> "$out/stderr"
  rc=$?
  r=$(grep -c "booting again" "$out/stderr")
  reboots=$((reboots + r))
  if ((rc == 0)); then ok=$((ok + 1))
  elif grep -q "ended without a result" "$out/stderr"; then noresult=$((noresult + 1))
  else failed=$((failed + 1)); fi
  printf 'boot %d: exit %d, %d s, %d boot(s) again\n' "$i" "$rc" $((SECONDS - start)) "$r"
  ((rc == 0)) || tail -n 20 "$out/stderr"
done
echo "vm-soak: $n runs of $scenario: $ok passed, $failed failed, $noresult without a result; $reboots guest(s) booted again"
((ok == n))
