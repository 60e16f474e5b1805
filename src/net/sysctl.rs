//! Per-interface sysctls, written inside the namespace that owns the interface.

use std::path::{Path, PathBuf};

use super::NetNs;
use crate::error::{Error, Result};

/// `/proc/sys/net/<family>/conf/<ifname>/<key>`.
pub fn conf_path(family: &str, ifname: &str, key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/net/{family}/conf/{ifname}/{key}"))
}

pub fn write_in(ns: &NetNs, path: &Path, value: &str) -> Result<()> {
    let _guard = ns.enter()?;
    std::fs::write(path, value).map_err(|e| {
        Error::Netlink(format!(
            "cannot set {} = {value} in {}: {e}",
            path.display(),
            ns.label()
        ))
    })
}

pub fn read_in(ns: &NetNs, path: &Path) -> Result<String> {
    let _guard = ns.enter()?;
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            Error::Netlink(format!(
                "cannot read {} in {}: {e}",
                path.display(),
                ns.label()
            ))
        })
}
