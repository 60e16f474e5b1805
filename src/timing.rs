//! Where one invocation's time went, for its closing log line. A slow pod
//! start is then visible as railcni's own time or the kernel's namespace
//! move, which waits for an RCU grace period (`rcu_barrier`) and usually
//! dominates an attach.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static STARTED: OnceLock<Instant> = OnceLock::new();
static MOVING_NS: AtomicU64 = AtomicU64::new(0);

/// Marks the start of the invocation; later calls keep the first mark.
pub fn start() {
    STARTED.get_or_init(Instant::now);
}

/// Adds the time one namespace move took in the kernel.
pub fn add_move(took: Duration) {
    let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    MOVING_NS.fetch_add(ns, Ordering::Relaxed);
}

/// Time since `start`.
pub fn elapsed() -> Duration {
    STARTED.get().map(Instant::elapsed).unwrap_or_default()
}

/// "took 21.3 ms (18.9 ms of it the kernel's namespace move)".
pub fn summary() -> String {
    let total = elapsed();
    describe(
        total,
        Duration::from_nanos(MOVING_NS.load(Ordering::Relaxed)),
    )
}

fn describe(total: Duration, moving: Duration) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if moving.is_zero() {
        format!("took {:.1} ms", ms(total))
    } else {
        format!(
            "took {:.1} ms ({:.1} ms of it the kernel's namespace move)",
            ms(total),
            ms(moving)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_move_is_named_only_when_there_was_one() {
        let ms = Duration::from_micros;
        assert_eq!(describe(ms(2_340), Duration::ZERO), "took 2.3 ms");
        assert_eq!(
            describe(ms(21_260), ms(18_940)),
            "took 21.3 ms (18.9 ms of it the kernel's namespace move)"
        );
    }
}
