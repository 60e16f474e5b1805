//! Sysfs as a pod's network namespace sees it. RDMA devices, like netdevs,
//! are shown only to a sysfs mounted from the namespace that holds them,
//! so a device moved into a pod leaves the host's `/sys`. Its files are
//! read on a thread of its own that enters the pod's namespace and a
//! private mount namespace and mounts sysfs there (what `ip netns exec`
//! does); both are dropped with the thread.

use std::path::Path;

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};

use super::NetNs;
use crate::error::{Error, Result};

pub fn with_sysfs_of<T: Send>(pod: &NetNs, f: impl FnOnce(&Path) -> T + Send) -> Result<T> {
    let kernel = |what: &str, errno| Error::Kernel {
        what: format!("{what} (reading {}'s sysfs)", pod.label()),
        errno,
        said: None,
    };
    pod.run_on_thread(|| {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| kernel("make a mount namespace", e))?;
        // Nothing mounted here may reach the host's mount table.
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_SLAVE,
            None::<&str>,
        )
        .map_err(|e| kernel("make / a slave mount", e))?;
        mount(
            Some("sysfs"),
            "/sys",
            Some("sysfs"),
            MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| kernel("mount sysfs", e))?;
        Ok(f(Path::new("/sys")))
    })
}
