//! Per-interface sysctls, written inside the namespace that owns the interface.

use std::path::PathBuf;

use super::NetNs;
use crate::error::{Error, Result};

/// `/proc/sys/net/<family>/conf/<ifname>/<key>`.
pub fn conf_path(family: &str, ifname: &str, key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/net/{family}/conf/{ifname}/{key}"))
}

pub fn write_in(ns: &NetNs, path: &PathBuf, value: &str) -> Result<()> {
    let _guard = ns.enter()?;
    std::fs::write(path, value).map_err(|e| {
        Error::Netlink(format!(
            "cannot set {} = {value} in {}: {e}",
            path.display(),
            ns.label()
        ))
    })
}
