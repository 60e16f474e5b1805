//! Per-interface sysctls, written inside the namespace that owns the interface.

use std::path::{Path, PathBuf};

use super::NetNs;
use crate::error::{Error, Result};

/// Write every `(path, value)` inside `ns` (entered from the caller's thread, see `NetNs::run`).
pub fn write_all_in(ns: &NetNs, writes: &[(PathBuf, &str)]) -> Result<()> {
    ns.run(|| {
        for (path, value) in writes {
            std::fs::write(path, value).map_err(|e| {
                Error::os(
                    format!("cannot set {} = {value} in {}", path.display(), ns.label()),
                    &e,
                )
            })?;
        }
        Ok(())
    })
}

pub fn read_in(ns: &NetNs, path: &Path) -> Result<String> {
    ns.run(|| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| {
                Error::os(
                    format!("cannot read {} in {}", path.display(), ns.label()),
                    &e,
                )
            })
    })
}
