# Sourced by scripts/bench.sh: the kernel's own time for each namespace move,
# from ftrace. Every sendto or sendmsg of railcni and ip is traced with its
# duration. A move is the one request that waits (for an RCU grace period,
# rcu_barrier in __dev_change_net_namespace); every other request answers in
# microseconds, so a send over 1 ms is a move.
#
# Optional instrumentation: a set-up or restore step that fails is reported
# on stderr and skipped, never fatal (the bench runs under `set -e`); a
# failed set-up leaves no trace file, so the figure is n/a. Whatever was
# changed is restored by `trace_moves off`, also on the exit trap.
# TRACEFS points tests at a stand-in directory.

tracefs=${TRACEFS:-/sys/kernel/tracing}
trace_kb=        # buffer size to restore; set once the set-up started
trace_ok=        # the set-up completed: the trace means something
trace_mounted=   # we mounted tracefs, so we unmount it

# Write $1 to file $2, or say why not; never fatal.
trace_write() {
  if ! { printf '%s\n' "$1" >"$2"; } 2>/dev/null; then
    echo "bench.sh: cannot write '$1' to $2; carrying on without it" >&2
    return 1
  fi
}

# trace_moves on          start tracing (status 1 if it could not)
# trace_moves off [DEST]  stop, copy the trace to DEST if it is good, restore
trace_moves() {
  local ev=$tracefs/events/raw_syscalls e
  if [ "$1" = on ]; then
    if [ ! -d "$ev" ]; then
      mount -t tracefs nodev "$tracefs" 2>/dev/null && trace_mounted=1 || return 1
    fi
    [ -w "$ev/sys_enter/filter" ] || return 1
    # "7 (expanded: 1408)" before the buffer was first used: the number is what a write takes.
    trace_kb=$(cat "$tracefs/buffer_size_kb" 2>/dev/null) || return 1
    trace_kb=${trace_kb%% *}
    trace_write 0 "$tracefs/tracing_on" && trace_write 8192 "$tracefs/buffer_size_kb" &&
      trace_write "" "$tracefs/trace" || { trace_moves off; return 1; }
    for e in sys_enter sys_exit; do
      trace_write '(comm == "railcni" || comm == "ip") && (id == 44 || id == 46)' "$ev/$e/filter" &&
        trace_write 1 "$ev/$e/enable" || { trace_moves off; return 1; }
    done
    trace_write 1 "$tracefs/tracing_on" || { trace_moves off; return 1; }
    trace_ok=1
    return 0
  fi
  [ -n "$trace_kb" ] || return 0
  trace_write 0 "$tracefs/tracing_on" || true
  if [ -n "$trace_ok" ] && [ -n "${2:-}" ]; then
    cp "$tracefs/trace" "$2" 2>/dev/null || echo "bench.sh: cannot copy the trace; moves are n/a" >&2
  fi
  for e in sys_enter sys_exit; do
    trace_write 0 "$ev/$e/enable" || true
    trace_write 0 "$ev/$e/filter" || true
  done
  trace_write "" "$tracefs/trace" || true
  trace_write "$trace_kb" "$tracefs/buffer_size_kb" || true
  trace_kb= trace_ok=
  if [ -n "$trace_mounted" ]; then
    umount "$tracefs" 2>/dev/null || echo "bench.sh: cannot unmount $tracefs" >&2
    trace_mounted=
  fi
  return 0
}
