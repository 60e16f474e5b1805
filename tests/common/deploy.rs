//! What the manifest tests share: the shipped manifests and the plans
//! they emit objects from (`tests/manifests.rs`, `tests/manifest_schemas.rs`).

use std::path::{Path, PathBuf};

use super::plan_emit;

/// A shipped manifest, `deploy/<name>`.
pub fn deploy(name: &str) -> PathBuf {
    super::repo().join("deploy").join(name)
}

/// Plans the manifest checks emit from: one plane (a storage rail, a
/// dual-stack one) and two planes.
pub const ONE_PLANE: &str = "rails:\n\
    - {name: rail0, cidr: 172.16.0.0/15, pf: ens1f0np0, mtu: 9000, resourceName: nvidia.com/rail_0}\n\
    - {name: rail1, cidr: 172.18.0.0/15, pf: ens2f0np0, mtu: 9000, cidr6: 'fd02:0001::/40', perNodePrefix6: 64}\n\
    - {name: storage0, cidr: 10.200.0.0/16, role: storage, pf: ens9f0np0}\n\
    nodes: [gpu-0, gpu-1, gpu-2]\n";

pub const TWO_PLANES: &str = "rails:\n\
    - {name: rail0, cidr: 172.16.0.0/15, planes: 2, pf: [eth_r0_p0, eth_r0_p1], mtu: 9000}\n\
    - {name: rail1, cidr: 172.18.0.0/15, planes: 2, pf: [eth_r1_p0, eth_r1_p1], mtu: 9000}\n\
    nodes: {gpu-0: 0, gpu-1: 1}\n";

/// `railcnictl plan` of `plan` with `args`: its stdout, written to `dir/name`.
pub fn emit(dir: &Path, name: &str, plan: &str, args: &[&str]) -> PathBuf {
    let plan_file = dir.join(format!("{name}.plan.yaml"));
    std::fs::write(&plan_file, plan).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, plan_emit(&plan_file, args)).unwrap();
    path
}
