//! Network namespace handles and a guard that always switches back.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use nix::sched::{setns, CloneFlags};

use crate::error::{Error, Result};

pub struct NetNs {
    file: File,
    label: String,
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
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Switch this thread into the namespace until the guard drops.
    pub fn enter(&self) -> Result<NsGuard> {
        let back = NetNs::current()?;
        setns(self.file.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|e| {
            Error::Netlink(format!(
                "cannot enter network namespace {}: {e}",
                self.label
            ))
        })?;
        Ok(NsGuard { back })
    }
}

#[must_use]
pub struct NsGuard {
    back: NetNs,
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        if let Err(e) = setns(self.back.file.as_fd(), CloneFlags::CLONE_NEWNET) {
            // Carrying on in the wrong namespace would act on the wrong host.
            crate::log_error!("cannot return to the original network namespace: {e}; aborting");
            std::process::abort();
        }
    }
}
