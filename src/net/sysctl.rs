//! Per-interface sysctls, written inside the namespace that owns the interface.

use std::path::Path;

use super::NetNs;
use crate::error::{Error, Result};

pub fn write_in(ns: &NetNs, path: &Path, value: &str) -> Result<()> {
    ns.run(|| {
        std::fs::write(path, value).map_err(|e| {
            Error::Netlink(format!(
                "cannot set {} = {value} in {}: {e}",
                path.display(),
                ns.label()
            ))
        })
    })
}

pub fn read_in(ns: &NetNs, path: &Path) -> Result<String> {
    ns.run(|| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| {
                Error::Netlink(format!(
                    "cannot read {} in {}: {e}",
                    path.display(),
                    ns.label()
                ))
            })
    })
}
