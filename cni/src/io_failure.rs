//! An I/O failure of the stores, the node file or stdin, with what was
//! being done and the errno the system gave, kept as a value: a read-only
//! state dir, a full disk and a permission problem are told apart (named
//! in the CNI error's details and the log, each with what to do), not
//! folded into one string.

use std::fmt;

use nix::errno::Errno;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFailure {
    /// What was being done: `cannot write /var/lib/cni/…`.
    pub what: String,
    /// The system's errno; `None` when the failure had none (a file that
    /// does not decode, a value that is not what it should be).
    pub errno: Option<Errno>,
    /// The system's words when it gave no errno.
    pub said: Option<String>,
}

impl IoFailure {
    /// `what` failed with `e`.
    pub fn new(what: impl Into<String>, e: &std::io::Error) -> Self {
        IoFailure {
            what: what.into(),
            errno: e.raw_os_error().map(Errno::from_raw),
            said: e.raw_os_error().is_none().then(|| e.to_string()),
        }
    }

    /// A failure with no errno behind it.
    pub fn plain(what: impl Into<String>) -> Self {
        IoFailure {
            what: what.into(),
            errno: None,
            said: None,
        }
    }

    /// What an operator does about it, where the errno says.
    pub fn advice(&self) -> Option<&'static str> {
        Some(match self.errno? {
            Errno::EROFS => "the file system is mounted read-only: remount it read-write (or point the plugin at a writable directory)",
            Errno::ENOSPC | Errno::EDQUOT => "the file system is full: free space on it",
            Errno::EACCES | Errno::EPERM => {
                "permission denied: check the owner and mode of the path and its directories, and the security module"
            }
            Errno::EIO => "the disk failed the I/O: check the device (dmesg)",
            Errno::EMFILE | Errno::ENFILE => "out of file descriptors",
            _ => return None,
        })
    }
}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        match (self.errno, &self.said) {
            (Some(errno), _) => write!(f, ": {} ({errno:?})", errno.desc())?,
            (None, Some(said)) => write!(f, ": {said}")?,
            (None, None) => {}
        }
        match self.advice() {
            Some(advice) => write!(f, "; {advice}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_a_full_and_a_forbidden_directory_are_told_apart() {
        let of = |errno: Errno| {
            IoFailure::new(
                "cannot write /s/x.json",
                &std::io::Error::from_raw_os_error(errno as i32),
            )
        };
        let rofs = of(Errno::EROFS);
        let full = of(Errno::ENOSPC);
        let denied = of(Errno::EACCES);
        assert_eq!(rofs.errno, Some(Errno::EROFS));
        assert!(
            rofs.to_string().contains("(EROFS)")
                && rofs.to_string().contains("remount it read-write"),
            "{rofs}"
        );
        assert!(
            full.to_string().contains("(ENOSPC)") && full.to_string().contains("full"),
            "{full}"
        );
        assert!(
            denied.to_string().contains("(EACCES)") && denied.to_string().contains("permission"),
            "{denied}"
        );
        assert_ne!(rofs.advice(), full.advice());
        let plain = IoFailure::plain("record x is unreadable");
        assert_eq!(plain.to_string(), "record x is unreadable");
        let other = IoFailure::new("read", &std::io::Error::other("short read"));
        assert_eq!(other.to_string(), "read: short read");
    }
}
