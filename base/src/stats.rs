//! What the plugin did, counted per network for `railcnictl metrics`: each
//! verb's result and CNI error code, a histogram of its duration, and the
//! leases of gone holders released.
//!
//! One small JSON file per network under `<state dir>/stats/`, replaced
//! atomically (0600, like every state file) under a lock file of its own
//! (held for microseconds): no count is lost when calls run at once, a
//! reader never sees half a file, the files never grow with the number of
//! calls, and nothing is fsynced (a crash may lose the last counts, which
//! Prometheus reads as a counter reset). Counting must never fail or slow a
//! CNI call: every error is the caller's to log and ignore, and the lock is
//! waited for at most `LOCK_WAIT`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files;
use crate::settings::Settings;

/// Upper bounds (seconds) of the duration histogram: 5 ms to 2 s.
pub const BUCKETS: [f64; 9] = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0];

/// The format version this build writes; a newer file is never misread.
pub const VERSION: u32 = 1;

const LOCK_WAIT: Duration = Duration::from_millis(100);
const LOCK_POLL: Duration = Duration::from_micros(200);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStats {
    pub version: u32,
    /// Calls by `"<VERB> <code>"` (code 0: ok).
    #[serde(default)]
    pub operations: BTreeMap<String, u64>,
    /// Durations by verb.
    #[serde(default)]
    pub durations: BTreeMap<String, Histogram>,
    /// Leases of provably gone holders released (ADD's reclaim, `railcnictl gc`).
    #[serde(default)]
    pub reclaimed_leases: u64,
    /// VFs a driver reload tore out of a live pod, by what the agent did:
    /// `reattached` (`put_back` in earlier builds), `released` (the pod was
    /// gone) or `error`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reattached: BTreeMap<String, u64>,
    /// What `railcnictl gc --apply` and the agent's gc did, by
    /// `"<action> <result>"`: action `detach`, `reattach` or `release`,
    /// result `done` or `error` (the error itself is logged).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gc: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// Per bucket of `BUCKETS`, then the overflow: not cumulative.
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.counts.resize(BUCKETS.len() + 1, 0);
        let i = BUCKETS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BUCKETS.len());
        self.counts[i] += 1;
        self.sum += seconds;
        self.count += 1;
    }

    /// Cumulative counts per bucket of `BUCKETS` (the exposition's `le`).
    pub fn cumulative(&self) -> Vec<u64> {
        let mut total = 0;
        (0..BUCKETS.len())
            .map(|i| {
                total += self.counts.get(i).copied().unwrap_or(0);
                total
            })
            .collect()
    }
}

/// One operation as counted: `(verb, code)` from an `operations` key.
pub fn split_key(key: &str) -> Option<(&str, u32)> {
    let (verb, code) = key.split_once(' ')?;
    Some((verb, code.parse().ok()?))
}

fn dir(settings: &Settings) -> PathBuf {
    settings.state_dir.join("stats")
}

/// The network's stats file.
pub fn file_of(settings: &Settings, network: &str) -> PathBuf {
    dir(settings).join(format!("{}.json", files::file_safe(network)))
}

/// Count one call of `verb` on `network` that answered `code` (0: ok).
pub fn record_operation(
    settings: &Settings,
    network: &str,
    verb: &str,
    code: u32,
    took: Duration,
) -> io::Result<()> {
    update(settings, network, |s| {
        *s.operations.entry(format!("{verb} {code}")).or_default() += 1;
        s.durations
            .entry(verb.to_string())
            .or_default()
            .observe(took.as_secs_f64());
    })
}

/// Count `n` leases of gone holders released on `network`.
pub fn record_reclaimed(settings: &Settings, network: &str, n: u64) -> io::Result<()> {
    if n == 0 {
        return Ok(());
    }
    update(settings, network, |s| s.reclaimed_leases += n)
}

/// Count one VF the agent found torn out of its pod, by `result`.
pub fn record_reattach(settings: &Settings, network: &str, result: &str) -> io::Result<()> {
    update(settings, network, |s| {
        *s.reattached.entry(result.to_string()).or_default() += 1
    })
}

/// Count one gc action on `network`: `done` or `error`.
pub fn record_gc(settings: &Settings, network: &str, action: &str, ok: bool) -> io::Result<()> {
    let result = if ok { "done" } else { "error" };
    update(settings, network, |s| {
        *s.gc.entry(format!("{action} {result}")).or_default() += 1
    })
}

fn update(
    settings: &Settings,
    network: &str,
    change: impl FnOnce(&mut NetworkStats),
) -> io::Result<()> {
    let path = file_of(settings, network);
    let lock_path = path.with_extension("lock");
    // The directory is made once, by the first count on this node.
    let lock = match files::open_rw(&lock_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            files::private_dir(&dir(settings))?;
            files::open_rw(&lock_path)?
        }
        opened => opened?,
    };
    files::lock_open(&lock, LOCK_WAIT, LOCK_POLL).map_err(|e| match e {
        files::LockError::Busy(t) => {
            io::Error::other(format!("stats file stayed locked for {t:?}"))
        }
        files::LockError::Io(e) => e,
    })?;
    let mut stats = read_locked(&path)?;
    change(&mut stats);
    stats.version = VERSION;
    let bytes = serde_json::to_vec(&stats).map_err(io::Error::other)?;
    files::replace_atomic(&path, &bytes)
}

/// The file's stats (empty: none yet). A newer format is an error; a file
/// that does not parse starts over (counts are not worth failing a call for).
fn read_locked(path: &Path) -> io::Result<NetworkStats> {
    let bytes = files::read(path)?.unwrap_or_default();
    match parse(&bytes) {
        Ok(s) if s.version > VERSION => Err(io::Error::other(format!(
            "stats file version {} is newer than this railcni's {VERSION}",
            s.version
        ))),
        Ok(s) => Ok(s),
        Err(_) => Ok(NetworkStats::default()),
    }
}

/// The first JSON object in `bytes` (trailing bytes are ignored).
fn parse(bytes: &[u8]) -> serde_json::Result<NetworkStats> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(NetworkStats::default());
    }
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<NetworkStats>();
    values.next().unwrap_or_else(|| Ok(NetworkStats::default()))
}

/// Every network's stats on this node (each file is replaced whole, so a
/// read needs no lock).
pub fn load_all(settings: &Settings) -> Vec<(String, Result<NetworkStats, String>)> {
    let Ok(entries) = std::fs::read_dir(dir(settings)) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let network = files::unescape_name(name.strip_suffix(".json")?)?;
            Some((network, load(&e.path())))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn load(path: &Path) -> Result<NetworkStats, String> {
    read_locked(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &Path) -> Settings {
        Settings {
            state_dir: dir.to_path_buf(),
            ..Settings::default()
        }
    }

    #[test]
    fn counts_by_verb_and_code_with_a_histogram() {
        let t = tempfile::tempdir().unwrap();
        let s = settings(t.path());
        let ms = Duration::from_millis;
        record_operation(&s, "rail1", "ADD", 0, ms(3)).unwrap();
        record_operation(&s, "rail1", "ADD", 0, ms(30)).unwrap();
        record_operation(&s, "rail1", "ADD", 110, ms(3000)).unwrap();
        record_operation(&s, "rail/2", "DEL", 0, ms(20)).unwrap();
        record_reclaimed(&s, "rail1", 2).unwrap();
        let all = load_all(&s);
        let names: Vec<_> = all.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["rail/2", "rail1"],
            "names survive the file name escaping"
        );
        let rail1 = all[1].1.as_ref().unwrap();
        assert_eq!(rail1.operations["ADD 0"], 2);
        assert_eq!(rail1.operations["ADD 110"], 1);
        assert_eq!(rail1.reclaimed_leases, 2);
        let h = &rail1.durations["ADD"];
        assert_eq!(h.count, 3);
        assert!((h.sum - 3.033).abs() < 1e-9);
        // 3 ms in the first bucket, 30 ms under 50 ms, 3 s above every bound.
        assert_eq!(h.cumulative(), [1, 1, 1, 2, 2, 2, 2, 2, 2]);
        assert_eq!(split_key("ADD 110"), Some(("ADD", 110)));
    }

    /// Every count that was written is there. A write may give up after
    /// `LOCK_WAIT` by design (counting never slows a CNI call), which a
    /// loaded machine makes likely: those are counted as given up, not lost.
    #[test]
    fn concurrent_writers_lose_no_count() {
        let t = tempfile::tempdir().unwrap();
        let s = settings(t.path());
        let written = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        match record_operation(&s, "rail1", "ADD", 0, Duration::from_millis(1)) {
                            Ok(()) => {
                                written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => assert!(e.to_string().contains("stayed locked"), "{e}"),
                        }
                    }
                });
            }
        });
        let all = load_all(&s);
        let counted = all[0].1.as_ref().unwrap().operations["ADD 0"];
        assert_eq!(counted, written.into_inner());
        assert!(counted > 0);
    }

    #[test]
    fn a_torn_tail_is_ignored_and_garbage_starts_over_a_newer_file_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let s = settings(t.path());
        record_operation(&s, "rail1", "DEL", 0, Duration::from_millis(1)).unwrap();
        let path = file_of(&s, "rail1");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"\"}, stale tail");
        std::fs::write(&path, &bytes).unwrap();
        record_operation(&s, "rail1", "DEL", 0, Duration::from_millis(1)).unwrap();
        assert_eq!(load_all(&s)[0].1.as_ref().unwrap().operations["DEL 0"], 2);

        std::fs::write(&path, "{not json").unwrap();
        record_operation(&s, "rail1", "DEL", 0, Duration::from_millis(1)).unwrap();
        assert_eq!(load_all(&s)[0].1.as_ref().unwrap().operations["DEL 0"], 1);

        std::fs::write(&path, r#"{"version": 9, "operations": {"DEL 0": 5}}"#).unwrap();
        assert!(record_operation(&s, "rail1", "DEL", 0, Duration::ZERO).is_err());
        assert!(load_all(&s)[0].1.as_ref().unwrap_err().contains("newer"));
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"version\": 9"),
            "untouched"
        );
    }
}
