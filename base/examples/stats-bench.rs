//! What counting one CNI call costs in-process (`base::stats`), for
//! scripts/bench.sh: `stats-bench <state-dir> <calls>` prints the median
//! nanoseconds of `record_operation`.

use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(calls)) = (
        args.next(),
        args.next().and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: stats-bench <state-dir> <calls>");
        std::process::exit(2);
    };
    let settings = base::Settings {
        state_dir: dir.into(),
        ..base::Settings::default()
    };
    let mut took: Vec<u128> = (0..calls.max(1))
        .map(|i| {
            let t0 = Instant::now();
            let verb = if i % 2 == 0 { "ADD" } else { "DEL" };
            if let Err(e) = base::stats::record_operation(
                &settings,
                "rail1",
                verb,
                0,
                Duration::from_millis(20),
            ) {
                eprintln!("stats-bench: {e}");
                std::process::exit(1);
            }
            t0.elapsed().as_nanos()
        })
        .collect();
    took.sort_unstable();
    println!("{}", took[took.len() / 2]);
}
