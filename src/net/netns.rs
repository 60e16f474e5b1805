//! Network namespace handles, and running work inside one on a thread of its own.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use nix::sched::{setns, CloneFlags};

use crate::error::{Error, Result};

pub struct NetNs {
    file: File,
    label: String,
    /// The namespace this process runs in: work for it needs no thread.
    current: bool,
}

impl NetNs {
    /// The pod namespace at `path`; a missing one is CNI code 3.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::container_unknown(format!(
                "network namespace {} does not exist",
                path.display()
            )),
            _ => Error::Netlink(format!(
                "cannot open network namespace {}: {e}",
                path.display()
            )),
        })?;
        Ok(NetNs {
            file,
            label: path.display().to_string(),
            current: false,
        })
    }

    /// The namespace the plugin was started in: "the host" for every return.
    pub fn current() -> Result<Self> {
        let path = Path::new("/proc/thread-self/ns/net");
        let file = File::open(path)
            .map_err(|e| Error::Netlink(format!("cannot open {}: {e}", path.display())))?;
        Ok(NetNs {
            file,
            label: "host".into(),
            current: true,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Run `f` on a short-lived thread inside this namespace. The thread
    /// ends there, so nothing ever has to switch back (a failed switch back
    /// could only abort), and the caller's thread never leaves its own.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        if self.current {
            return f();
        }
        let fd = self.file.as_fd();
        let label = &self.label;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    setns(fd, CloneFlags::CLONE_NEWNET).map_err(|e| {
                        Error::Netlink(format!("cannot enter network namespace {label}: {e}"))
                    })?;
                    f()
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(Error::internal(format!(
                        "work inside network namespace {label} panicked"
                    )))
                })
        })
    }
}
