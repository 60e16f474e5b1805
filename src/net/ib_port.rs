//! An InfiniBand port's readiness as sysfs shows it: `<ports>/<p>/state`
//! (`4: ACTIVE`; `2: INIT` until the subnet manager's sweep brings the
//! port up) and `<ports>/<p>/pkeys/<i>` (the partition keys the subnet
//! manager gave the port, `0xffff` style; unused entries read `0x0000`).
//! NCCL's QP setup fails on a port that is not ACTIVE, or not a member of
//! the partition its traffic is tagged with: the InfiniBand side of the
//! RoCE v2 GID wait.

use std::path::Path;
use std::time::{Duration, Instant};

/// What a port says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortState {
    /// The kernel's code (`enum ib_port_state`: 1 DOWN, 2 INIT, 3 ARMED,
    /// 4 ACTIVE) and its word.
    pub code: u32,
    pub word: String,
    pub pkeys: Vec<u16>,
}

/// `ib_port_state`'s ACTIVE.
const ACTIVE: u32 = 4;

impl PortState {
    /// ACTIVE, and a member of `pkey` when one is asked (full or limited
    /// membership: the low 15 bits name the partition).
    pub fn ready_for(&self, pkey: Option<u16>) -> bool {
        self.code == ACTIVE && pkey.is_none_or(|k| self.holds(k))
    }

    pub fn holds(&self, pkey: u16) -> bool {
        self.pkeys.iter().any(|k| k & 0x7fff == pkey & 0x7fff)
    }

    /// `ACTIVE, pkeys 0xffff 0x8001`, for logs and errors.
    pub fn describe(&self) -> String {
        let keys: Vec<String> = self.pkeys.iter().map(|k| format!("{k:#06x}")).collect();
        match keys.is_empty() {
            true => format!("{} (no pkeys)", self.word),
            false => format!("{}, pkeys {}", self.word, keys.join(" ")),
        }
    }
}

/// Port `port` under `ports` (a device's `ports/` directory); `None` when
/// it has no `state` file.
pub fn read(ports: &Path, port: u32) -> Option<PortState> {
    let dir = ports.join(port.to_string());
    let text = std::fs::read_to_string(dir.join("state")).ok()?;
    let (code, word) = text.trim().split_once(':')?;
    // In table order (the entries' names are their indexes).
    let mut entries: Vec<(u32, std::path::PathBuf)> = std::fs::read_dir(dir.join("pkeys"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    entries.sort();
    let pkeys = (entries.iter())
        .filter_map(|(_, path)| std::fs::read_to_string(path).ok())
        .filter_map(|t| u16::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
        .filter(|k| k & 0x7fff != 0)
        .collect();
    Some(PortState {
        code: code.trim().parse().ok()?,
        word: word.trim().to_string(),
        pkeys,
    })
}

/// How a wait for a port ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    Ready(PortState),
    /// The port has no state to read.
    NoState,
    /// Not ready within the timeout: the last state read.
    NotReady(PortState),
}

/// Read the port until it is ready for `pkey`, or `timeout` passes.
pub fn wait_for(
    pkey: Option<u16>,
    timeout: Duration,
    mut read: impl FnMut() -> Option<PortState>,
) -> Wait {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let Some(state) = read() else {
            return Wait::NoState;
        };
        if state.ready_for(pkey) {
            return Wait::Ready(state);
        }
        if start.elapsed() >= timeout {
            return Wait::NotReady(state);
        }
        std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(dir: &Path, state: &str, pkeys: &[&str]) {
        let p = dir.join("1/pkeys");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(dir.join("1/state"), format!("{state}\n")).unwrap();
        for (i, k) in pkeys.iter().enumerate() {
            std::fs::write(p.join(i.to_string()), format!("{k}\n")).unwrap();
        }
    }

    #[test]
    fn reads_the_kernels_words_and_pkeys() {
        let t = tempfile::tempdir().unwrap();
        port(t.path(), "4: ACTIVE", &["0xffff", "0x0000", "0x8001"]);
        let s = read(t.path(), 1).unwrap();
        assert_eq!((s.code, s.word.as_str()), (4, "ACTIVE"));
        assert_eq!(s.pkeys, [0xffff, 0x8001], "unused entries left out");
        assert!(s.ready_for(None) && s.ready_for(Some(0x8001)) && s.ready_for(Some(0x0001)));
        assert!(!s.ready_for(Some(0x8002)), "not a member of 0x8002");
        assert_eq!(s.describe(), "ACTIVE, pkeys 0xffff 0x8001");
        assert_eq!(read(t.path(), 2), None, "no such port");
    }

    #[test]
    fn waits_for_active_and_gives_up_with_the_last_state() {
        let t = tempfile::tempdir().unwrap();
        port(t.path(), "2: INIT", &["0xffff"]);
        let mut reads = 0;
        let waited = wait_for(None, Duration::from_secs(5), || {
            reads += 1;
            if reads == 3 {
                port(t.path(), "4: ACTIVE", &["0xffff"]);
            }
            read(t.path(), 1)
        });
        assert!(
            matches!(waited, Wait::Ready(ref s) if s.code == 4),
            "{waited:?}"
        );
        assert_eq!(reads, 3, "read until the port came up, then no more");

        port(t.path(), "2: INIT", &["0xffff"]);
        let start = Instant::now();
        let waited = wait_for(None, Duration::from_millis(60), || read(t.path(), 1));
        assert!(
            matches!(waited, Wait::NotReady(ref s) if s.word == "INIT"),
            "{waited:?}"
        );
        assert!(start.elapsed() >= Duration::from_millis(60));
        assert_eq!(
            wait_for(None, Duration::from_millis(10), || None),
            Wait::NoState
        );
    }
}
