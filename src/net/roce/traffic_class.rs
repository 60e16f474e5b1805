//! An mlx5 RDMA device's forced traffic class (NVIDIA's DOCA/MLNX driver
//! stack): `<device>/tc/<port>/traffic_class`. Reading it shows
//! `Global tclass=N` only while one is set (then any per-address rule
//! lines); writing a bare number sets it, `-1` unsets it. It can be
//! written only while the device is in the host's namespace.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file for `port` under the device's sysfs directory.
pub fn path(device_dir: &Path, port: u32) -> PathBuf {
    device_dir
        .join("tc")
        .join(port.to_string())
        .join("traffic_class")
}

/// The class set now: `None` when none is. A file holding just what was
/// written (a bare number, `-1` for none) reads the same way.
pub fn parse(text: &str) -> Option<u8> {
    let global = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Global tclass="));
    global
        .or(Some(text.trim()))
        .and_then(|n| n.trim().parse().ok())
}

pub fn read(file: &Path) -> Result<Option<u8>> {
    std::fs::read_to_string(file)
        .map(|t| parse(&t))
        .map_err(|e| Error::os(format!("read {}", file.display()), &e))
}

/// Set `class`, or unset with `None`.
pub fn write(file: &Path, class: Option<u8>) -> Result<()> {
    let text = class.map_or_else(|| "-1".to_string(), |c| c.to_string());
    std::fs::write(file, &text)
        .map_err(|e| Error::os(format!("write {text} to {}", file.display()), &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_unset_and_rule_lines() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("Global tclass=96\n"), Some(96));
        assert_eq!(
            parse("Global tclass=106\ntclass=24 dst_ip=10.0.0.0/8\n"),
            Some(106)
        );
        assert_eq!(
            parse("tclass=24 dst_ip=10.0.0.0/8\n"),
            None,
            "a rule alone is not a global class"
        );
        assert_eq!((parse("96"), parse("-1\n")), (Some(96), None));
    }
}
