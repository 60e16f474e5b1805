//! Multus' device-info file (`k8s.v1.cni.cncf.io/device-info`, spec 1.1.0):
//! how the VF's PCI address and RDMA device reach the pod's
//! network-status annotation.

use std::path::{Component, Path};

use base::files::replace_atomic;
use serde_json::json;

use crate::vf::Vf;

/// Only files under Multus' directory (`allowed_dir`, from the settings) are
/// written, so a NAD's runtimeConfig cannot point root's write anywhere else.
pub fn is_allowed(path: &Path, allowed_dir: &Path) -> bool {
    path.starts_with(allowed_dir)
        && path
            .components()
            .all(|c| !matches!(c, Component::ParentDir))
}

/// For an InfiniBand VF: the GUID set on it and the partition key, for
/// ib-kubernetes-style tooling (the subnet manager applies the key).
pub struct Infiniband {
    pub guid: Option<crate::net::Guid>,
    pub pkey: Option<u16>,
}

/// A RoCE rail's numbers for RDMA launchers: the RoCE v2 GID index of its
/// first address, and the traffic class and rdma_cm ToS `rdmaQoS` set.
#[derive(Debug, Default, Clone, Copy)]
pub struct Roce {
    pub gid_index: Option<u32>,
    pub traffic_class: Option<u8>,
    pub tos: Option<u8>,
}

/// Write it, or log why not: device info is informational and never fails ADD.
pub fn write(
    path: &Path,
    allowed_dir: &Path,
    vf: &Vf,
    rdma_device: Option<&str>,
    ib: Option<Infiniband>,
    roce: Roce,
) {
    if !is_allowed(path, allowed_dir) {
        crate::log_warn!(
            "not writing device-info to {}: only files under {} are written",
            path.display(),
            allowed_dir.display()
        );
        return;
    }
    let mut pci = json!({"pci-address": vf.pci});
    // The spec's `pf-pci-address` is a VF's parent: a whole PF has none.
    if !vf.whole {
        pci["pf-pci-address"] = json!(vf.pf_pci);
    }
    if let Some(dev) = rdma_device {
        pci["rdma-device"] = json!(dev);
    }
    if let Some(ib) = ib {
        if let Some(g) = ib.guid {
            pci["guid"] = json!(g.to_string());
        }
        if let Some(k) = ib.pkey {
            pci["pkey"] = json!(format!("{k:#06x}"));
        }
    }
    let numbers = [
        ("rdma-gid-index", roce.gid_index.map(u64::from)),
        ("rdma-traffic-class", roce.traffic_class.map(u64::from)),
        ("rdma-tos", roce.tos.map(u64::from)),
    ];
    for (key, value) in numbers {
        if let Some(v) = value {
            pci[key] = json!(v);
        }
    }
    let info = json!({"type": "pci", "version": "1.1.0", "pci": pci});
    // Under /run (tmpfs): gone with the boot, so never synced.
    let written = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| replace_atomic(path, info.to_string().as_bytes()));
    if let Err(e) = written {
        crate::log_warn!("cannot write device-info {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_multus_devinfo_paths_are_written() {
        let dir = Path::new(base::settings::DEFAULT_DEVINFO_DIR);
        assert!(is_allowed(
            Path::new("/var/run/k8s.cni.cncf.io/devinfo/net1-abc.json"),
            dir
        ));
        assert!(!is_allowed(Path::new("/etc/passwd"), dir));
        assert!(!is_allowed(
            Path::new("/var/run/k8s.cni.cncf.io/devinfo/../../../etc/passwd"),
            dir
        ));
    }
}
