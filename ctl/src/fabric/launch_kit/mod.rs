//! `railcnictl plan --from-launch-kit cluster-config.yaml`: NVIDIA
//! k8s-launch-kit's cluster config (what `l8k discover` writes; its format
//! read at commit 378fd36, 2026) as a railcni plan, so a team that
//! describes its nodes once there need not write the plan by hand.
//!
//! - east-west PFs with a `rail` become the rails, in rail order, named
//!   `rail<N>`; a rail's PFs (in PCI order) become its planes; their
//!   netdev names are the rails' `pf` (the same on every node: groups that
//!   disagree are refused);
//! - every group's `workerNodes`, in order, are the nodes;
//! - `sriov.ethernetMtu` is every rail's MTU;
//! - the addressing is one of the launch kit's two (`Layout`): nv-ipam's
//!   subnets (listed, or generated from `startingSubnet`/`mask`/`offset`),
//!   one per rail shared by its nodes, each node a block of
//!   `perNodeBlockSize`; or Spectrum-X's 2-tier layout, a /31 per node per
//!   rail (host even, leaf odd) or a /64 (host ::1, leaf ::2), the node's
//!   place being its position in `workerNodes` (the launch kit takes it
//!   from the fabric's topology file: import its CIDRPools with
//!   `--from-cidrpool` where the two differ).
//!
//! What has no place in a plan is named in `Imported::unmapped`; what
//! cannot become a valid plan is refused.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::{Nodes, Pf, Plan, PlanError, Rail, Role, SharedSubnet};

mod multiplane;
mod rails;
mod schema;
#[cfg(test)]
mod tests;

use schema::{Group, LaunchKit, NvIpam, PF_DESCRIPTIVE};

use rails::{group_label, ImportedRail, Result};

/// How the imported rails are addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// The config's `nvIpam` subnets: one shared subnet per rail.
    NvIpam,
    /// Spectrum-X 2-tier IPv4: a /31 per node per rail (172.16.0.0/12).
    SpectrumX,
    /// Spectrum-X 2-tier IPv6: a /64 per node per rail (fd02::/16).
    SpectrumXIpv6,
}

/// The plan, and what of the config it does not carry.
pub struct Imported {
    pub plan: Plan,
    pub unmapped: Vec<String>,
}

/// Why a rail has no resource name, and what to set.
fn no_resource(rail: &ImportedRail, layout: Layout) -> String {
    format!(
        "rail{}: no SR-IOV resource name ({}): set the rail's resourceName in the plan (`--emit plan`), \
         or its NADs carry none and Multus passes no deviceID",
        rail.index,
        match layout {
            Layout::NvIpam => "the config has no sriov.resourceName",
            _ => "the launch kit gives a multi-plane rail one resource for all its planes",
        }
    )
}

/// The resource the Network Operator's SR-IOV device plugin names a
/// rail's VFs by, as the launch kit's profiles configure it (k8s-launch-kit
/// `profiles/sriov-ethernet-rdma/40-sriovnetworknodepolicy.yaml` at
/// ddf273c: `<sriov.resourceName>_rail_<rail>`; `profiles/spectrum-x/
/// 50-sriovnetworknodepolicy.yaml` at 1ea5433: `rail_<i>`, `i` the PF's
/// place in the group's list), with the operator's `nvidia.com/` prefix.
/// `None` where the config does not give one.
fn resource_of(kit: &LaunchKit, layout: Layout, rail: &ImportedRail) -> Option<String> {
    match layout {
        Layout::NvIpam => {
            let base = kit.sriov.as_ref()?.resource_name.as_deref()?;
            Some(format!("nvidia.com/{base}_rail_{}", rail.index))
        }
        // One resource for every plane of a rail: not a railcni plane's own.
        Layout::SpectrumX | Layout::SpectrumXIpv6 if rail.pfs.len() > 1 => None,
        Layout::SpectrumX | Layout::SpectrumXIpv6 => {
            let group = kit.cluster_config.first()?;
            let i = (group.pfs.iter()).position(|p| p.network_interface == rail.pfs[0])?;
            Some(format!("nvidia.com/rail_{i}"))
        }
    }
}

pub fn import(text: &str, layout: Layout) -> Result<Imported> {
    let kit: LaunchKit = serde_yaml_ng::from_str(text)
        .map_err(|e| PlanError(format!("the launch kit config does not read: {e}")))?;
    let mut unmapped = Vec::new();
    if kit.cluster_config.is_empty() {
        return Err(PlanError(
            "the launch kit config has no clusterConfig groups".into(),
        ));
    }
    let rails = rails_of(&kit.cluster_config, &mut unmapped)?;
    multiplane::check(&kit, &rails)?;
    let nodes = nodes_of(&kit.cluster_config)?;
    let mtu = kit.sriov.as_ref().and_then(|s| s.ethernet_mtu);
    let mut plan_rails = Vec::new();
    // nv-ipam hands out blocks around its gateway; a railcni node's block
    // is its index: the nodes skip the blocks holding a rail's gateway.
    let mut skipped: Vec<usize> = Vec::new();
    for (position, rail) in rails.iter().enumerate() {
        let mut r = Rail {
            name: format!("rail{}", rail.index),
            mtu,
            role: Role::Compute,
            pf: Some(if rail.pfs.len() == 1 {
                Pf::One(rail.pfs[0].clone())
            } else {
                Pf::PerPlane(rail.pfs.clone())
            }),
            planes: (rail.pfs.len() > 1).then_some(rail.pfs.len() as u8),
            resource_name: resource_of(&kit, layout, rail),
            ..Rail::default()
        };
        if r.resource_name.is_none() {
            unmapped.push(no_resource(rail, layout));
        }
        match layout {
            Layout::NvIpam => skipped.extend(nv_ipam(&kit, rail, position, &mut r)?),
            Layout::SpectrumX => spectrum_x_ipv4(rail, &mut r)?,
            Layout::SpectrumXIpv6 => spectrum_x_ipv6(rail, &mut r)?,
        }
        plan_rails.push(r);
    }
    if is_host_device(&kit) {
        whole_nics(&kit, &rails, &mut plan_rails, &mut unmapped)?;
    }
    name_unmapped(&kit, layout, &mut unmapped);
    Ok(Imported {
        plan: Plan {
            rails: plan_rails,
            nodes: indexed(nodes, &skipped),
            namespace: kit
                .pod_namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            config_map_namespace: "kube-system".into(),
        },
        unmapped,
    })
}

/// The Host Device RDMA profile (`profile.deployment: host_device`): each
/// rail's PF goes whole into the pod.
fn is_host_device(kit: &LaunchKit) -> bool {
    (kit.profile.as_ref()).and_then(|p| p.deployment.as_deref()) == Some("host_device")
}

/// Each rail a whole-NIC rail of its one PF, its resource the Host Device
/// profile's (`nvidia.com/<hostdev.resourceName>_rail_<rail>`, one PF per
/// node in it). A rail of several PFs (planes) cannot be one PF.
fn whole_nics(
    kit: &LaunchKit,
    rails: &[ImportedRail],
    plan_rails: &mut [Rail],
    unmapped: &mut Vec<String>,
) -> Result<()> {
    let base = (kit.hostdev.as_ref()).and_then(|h| h.resource_name.as_deref());
    for (rail, r) in rails.iter().zip(plan_rails.iter_mut()) {
        if rail.pfs.len() > 1 {
            return Err(PlanError(format!(
                "rail{}: profile.deployment host_device hands each rail's PF whole to a pod, but \
                 this rail has {} PFs ({}); a whole-NIC rail is one PF",
                rail.index,
                rail.pfs.len(),
                rail.pfs.join(", ")
            )));
        }
        r.whole_nic = true;
        r.resource_name = base.map(|b| format!("nvidia.com/{b}_rail_{}", rail.index));
        if r.resource_name.is_none() {
            unmapped.push(format!(
                "rail{}: no Host Device resource name (the config has no hostdev.resourceName): set \
                 the rail's resourceName in the plan (`--emit plan`)",
                rail.index
            ));
        }
    }
    Ok(())
}

/// A group's east-west PFs by rail: (PCI address, netdev), sorted.
type GroupRails<'g> = BTreeMap<u8, Vec<(&'g str, &'g str)>>;

/// The rails: east-west PFs with a rail, grouped; every group must name
/// the same netdevs for a rail (a plan's `pf` is one name on every node).
fn rails_of(groups: &[Group], unmapped: &mut Vec<String>) -> Result<Vec<ImportedRail>> {
    let by_group = (groups.iter())
        .map(|g| group_rails(g, unmapped))
        .collect::<Result<Vec<_>>>()?;
    let first = &by_group[0];
    if first.is_empty() {
        return Err(PlanError(format!(
            "{}: no east-west PF with a rail: nothing to import",
            group_label(&groups[0])
        )));
    }
    let names = |r: &GroupRails| -> Vec<(u8, Vec<String>)> {
        r.iter()
            .map(|(k, v)| (*k, v.iter().map(|(_, n)| n.to_string()).collect()))
            .collect()
    };
    for (group, rails) in groups.iter().zip(&by_group).skip(1) {
        if names(rails) != names(first) {
            return Err(PlanError(format!(
                "{} names its rails' PFs {:?}, {} {:?}: a railcni rail's `pf` is the same netdev on every node \
                 (the NIC configuration operator's interface name template makes it so); import the groups apart",
                group_label(group),
                names(rails),
                group_label(&groups[0]),
                names(first)
            )));
        }
    }
    first
        .iter()
        .map(|(index, pfs)| match pfs.len() {
            1 | 2 | 4 => Ok(ImportedRail {
                index: *index,
                pfs: pfs.iter().map(|(_, n)| n.to_string()).collect(),
            }),
            n => Err(PlanError(format!(
                "rail {index} has {n} east-west PFs: a rail has 1, 2 or 4 planes"
            ))),
        })
        .collect()
}

/// One group's east-west PFs by rail; its other PFs named in `unmapped`.
/// An InfiniBand group is refused.
fn group_rails<'g>(group: &'g Group, unmapped: &mut Vec<String>) -> Result<GroupRails<'g>> {
    let label = group_label(group);
    if let Some(link) = (group.link_type.as_deref()).filter(|l| !l.eq_ignore_ascii_case("ethernet"))
    {
        return Err(PlanError(format!(
            "{label}: linkType {link}: railcni imports Ethernet (RoCE) rails; an InfiniBand fabric's \
             rails are written by hand (docs/configuration.md, InfiniBand)"
        )));
    }
    let mut rails = GroupRails::new();
    for pf in &group.pfs {
        match (pf.traffic.as_deref(), pf.rail) {
            (Some("east-west"), Some(rail)) => rails
                .entry(rail)
                .or_default()
                .push((pf.pci_address.as_str(), pf.network_interface.as_str())),
            (traffic, _) => unmapped.push(format!(
                "{label}: PF {} ({}, traffic {}): not an east-west rail",
                pf.network_interface,
                pf.pci_address,
                traffic.unwrap_or("unset")
            )),
        }
    }
    for pfs in rails.values_mut() {
        pfs.sort();
    }
    Ok(rails)
}

/// The nodes in order, each at the next index not in `skipped`.
fn indexed(nodes: Vec<String>, skipped: &[usize]) -> Nodes {
    if skipped.is_empty() {
        return Nodes::List(nodes);
    }
    let free = (0..).filter(|i| !skipped.contains(i));
    Nodes::Map(nodes.into_iter().zip(free).collect())
}

fn nodes_of(groups: &[Group]) -> Result<Vec<String>> {
    let mut nodes: Vec<String> = Vec::new();
    for group in groups {
        for node in &group.worker_nodes {
            if nodes.contains(node) {
                return Err(PlanError(format!(
                    "node {node} is in two clusterConfig groups"
                )));
            }
            nodes.push(node.clone());
        }
    }
    if nodes.is_empty() {
        return Err(PlanError("no clusterConfig group lists workerNodes".into()));
    }
    Ok(nodes)
}

/// nv-ipam's layout: the rail's own subnet, shared by its nodes, each node
/// a block of `perNodeBlockSize` (rounded up to a power of two). The block
/// the gateway lies in, which no node may have.
fn nv_ipam(
    kit: &LaunchKit,
    rail: &ImportedRail,
    position: usize,
    r: &mut Rail,
) -> Result<Option<usize>> {
    let ipam = kit.nv_ipam.as_ref().ok_or_else(|| {
        PlanError("no nvIpam section: give --layout spectrum-x or spectrum-x-ipv6".into())
    })?;
    if kit.cluster_config.len() > 1 {
        return Err(PlanError(
            "nvIpam gives each clusterConfig group its own subnets, while a railcni rail is one subnet: \
             import each group as a plan of its own"
                .into(),
        ));
    }
    if rail.pfs.len() > 1 {
        return Err(PlanError(format!(
            "rail {}: nvIpam gives each plane's PF a subnet and gateway of its own; a railcni rail's planes \
             share its addressing: use --layout spectrum-x, or write the planes as rails of their own",
            rail.index
        )));
    }
    let (subnet, gateway) = nv_ipam_subnet(ipam, position)?;
    let block = ipam.per_node_block_size.unwrap_or(1).max(1);
    let host_bits = 32 - (block - 1).leading_zeros().min(32);
    let per_node = if subnet.addr().is_ipv4() { 32 } else { 128 } - host_bits as u8;
    r.cidr = subnet;
    r.per_node_prefix = Some(per_node);
    r.shared_subnet = Some(SharedSubnet {
        gateway: Some(gateway),
    });
    let offset = match (subnet.network(), gateway) {
        (IpAddr::V4(n), IpAddr::V4(g)) => u128::from(u32::from(g).wrapping_sub(u32::from(n))),
        (IpAddr::V6(n), IpAddr::V6(g)) => u128::from(g).wrapping_sub(u128::from(n)),
        _ => {
            return Err(PlanError(format!(
                "nvIpam subnet {subnet}: gateway {gateway} is of the other family"
            )))
        }
    };
    Ok(usize::try_from(offset >> host_bits).ok())
}

/// The rail at `position`'s subnet and gateway: listed, else generated.
fn nv_ipam_subnet(ipam: &NvIpam, position: usize) -> Result<(IpNet, IpAddr)> {
    match ipam.subnets.get(position) {
        Some(s) if !s.exclusions.is_empty() => Err(PlanError(format!(
            "nvIpam subnet {}: exclusions have no railcni equivalent (each node's block is its own)",
            s.subnet
        ))),
        Some(s) => Ok((s.subnet, s.gateway)),
        None if !ipam.subnets.is_empty() => Err(PlanError(format!(
            "nvIpam lists {} subnets for {} or more rails: list one per rail",
            ipam.subnets.len(),
            position + 1
        ))),
        None => generated_subnet(ipam, position),
    }
}

/// The launch kit's generated subnets: consecutive /mask blocks from
/// `startingSubnet`, one per east-west PF; gateway network + offset.
fn generated_subnet(ipam: &NvIpam, position: usize) -> Result<(IpNet, IpAddr)> {
    let (Some(start), Some(mask)) = (ipam.starting_subnet, ipam.mask) else {
        return Err(PlanError(
            "nvIpam has neither subnets nor startingSubnet and mask: no addressing to import"
                .into(),
        ));
    };
    let base = Ipv4Net::new(start, mask)
        .map_err(|e| PlanError(format!("nvIpam mask {mask}: {e}")))?
        .trunc();
    let size = 1u64 << (32 - u32::from(mask));
    let network = u64::from(u32::from(base.network())) + size * position as u64;
    let network = u32::try_from(network)
        .map_err(|_| PlanError(format!("nvIpam: subnet {position} is past the end of IPv4")))?;
    let subnet =
        Ipv4Net::new(Ipv4Addr::from(network), mask).map_err(|e| PlanError(e.to_string()))?;
    let gateway = Ipv4Addr::from(network + ipam.offset.unwrap_or(1));
    Ok((IpNet::V4(subnet), IpAddr::V4(gateway)))
}

/// Spectrum-X 2-tier IPv4: host 172.S.T.2h, leaf +1. One plane: rail r is
/// 172.(16+2r).0.0/15; several: plane p of rail r is the /18 at
/// 172.(16 | p<<2 | (r>>2)&1).((r&3)<<6).0 under its plane's /14.
fn spectrum_x_ipv4(rail: &ImportedRail, r: &mut Rail) -> Result<()> {
    let n = rail.index;
    if n > 7 {
        return Err(PlanError(format!(
            "rail {n}: Spectrum-X numbers rails 0 to 7"
        )));
    }
    let net = |a: u8, b: u8, len: u8| {
        IpNet::V4(Ipv4Net::new(Ipv4Addr::new(172, a, b, 0), len).expect("len <= 32"))
    };
    r.per_node_prefix = Some(31);
    r.gateway_index = Some(1);
    r.routes = vec![net(16, 0, 12)];
    if rail.pfs.len() == 1 {
        r.cidr = net(16 | (n << 1), 0, 15);
    } else {
        r.cidr = net(16, 0, 12);
        r.plane_cidrs = (0..rail.pfs.len() as u8)
            .map(|p| net(16 | (p << 2) | ((n >> 2) & 1), (n & 3) << 6, 18))
            .collect();
    }
    Ok(())
}

/// Spectrum-X 2-tier IPv6: a /64 per node, fd02:00PP:RR00:SSHH::/64, host
/// ::1, leaf ::2; rail r of plane p is fd02:00PP:RR00::/40.
fn spectrum_x_ipv6(rail: &ImportedRail, r: &mut Rail) -> Result<()> {
    let n = u16::from(rail.index);
    let net = |plane: u16, len: u8| {
        IpNet::V6(
            Ipv6Net::new(Ipv6Addr::new(0xfd02, plane, n << 8, 0, 0, 0, 0, 0), len)
                .expect("len <= 128"),
        )
    };
    r.per_node_prefix = Some(64);
    r.gateway_index = Some(2);
    if rail.pfs.len() == 1 {
        r.cidr = net(0, 40);
        r.routes = vec![IpNet::V6(
            Ipv6Net::new(Ipv6Addr::new(0xfd02, 0, 0, 0, 0, 0, 0, 0), 32).expect("32"),
        )];
    } else {
        r.cidr =
            IpNet::V6(Ipv6Net::new(Ipv6Addr::new(0xfd02, 0, 0, 0, 0, 0, 0, 0), 24).expect("24"));
        r.routes = vec![r.cidr];
        r.plane_cidrs = (0..rail.pfs.len() as u16).map(|p| net(p, 40)).collect();
    }
    Ok(())
}

/// Name what the plan does not carry: top-level sections (the Network
/// Operator's business), fields within the ones read, per-PF details.
fn name_unmapped(kit: &LaunchKit, layout: Layout, unmapped: &mut Vec<String>) {
    let mut sections: Vec<&str> = kit.rest.keys().map(String::as_str).collect();
    if kit.profile.is_some() {
        // Read for its multiplane mode; the rest is the launch kit's choice of deployment.
        sections.push("profile");
        sections.sort_unstable();
    }
    if !sections.is_empty() {
        unmapped.push(format!(
            "sections for the Network Operator and its tools, not for a rail plugin: {}",
            sections.join(", ")
        ));
    }
    if let Some(sriov) = &kit.sriov {
        let keys: Vec<&str> = sriov.rest.keys().map(String::as_str).collect();
        if !keys.is_empty() {
            unmapped.push(format!(
                "sriov: {} (VF counts and resource names are the SR-IOV operator's; railcni reads the VF it is given)",
                keys.join(", ")
            ));
        }
    }
    match (&kit.nv_ipam, layout) {
        (Some(ipam), Layout::NvIpam) if !ipam.rest.is_empty() => unmapped.push(format!(
            "nvIpam: {} (pool names are nv-ipam's)",
            ipam.rest
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (Some(_), Layout::SpectrumX | Layout::SpectrumXIpv6) => {
            unmapped.push("nvIpam: not used: the Spectrum-X layout addresses the rails".into())
        }
        _ => {}
    }
    for group in &kit.cluster_config {
        name_unmapped_in(group, unmapped);
    }
}

/// What one clusterConfig group says that the import does not map.
fn name_unmapped_in(group: &Group, unmapped: &mut Vec<String>) {
    let keys: Vec<&str> = group.rest.keys().map(String::as_str).collect();
    if !keys.is_empty() {
        unmapped.push(format!("{}: {}", group_label(group), keys.join(", ")));
    }
    let mut pf_keys: Vec<&str> = group
        .pfs
        .iter()
        .flat_map(|pf| pf.rest.keys().map(String::as_str))
        .filter(|k| !PF_DESCRIPTIVE.contains(k))
        .collect();
    pf_keys.sort_unstable();
    pf_keys.dedup();
    if !pf_keys.is_empty() {
        unmapped.push(format!(
            "{}: PF fields {}",
            group_label(group),
            pf_keys.join(", ")
        ));
    }
    if let Some(gpu) = &group.gpu_type {
        let platform = group
            .spectrum_x
            .as_ref()
            .and_then(|s| s.platform_type.as_deref());
        unmapped.push(format!(
            "{}: gpuType {gpu}{}: the launch kit's node labels and doSPCX platform; a plan does not depend on it",
            group_label(group),
            platform.map_or_else(String::new, |p| format!(" (platform {p})"))
        ));
    }
    let paired: Vec<&str> = (group.pfs.iter())
        .filter(|pf| pf.connected_gpu.is_some())
        .map(|pf| pf.network_interface.as_str())
        .collect();
    if !paired.is_empty() {
        unmapped.push(format!(
            "{}: connectedGPU is known for {}: `--emit dra --pair-gpus` claims each rail's VF with a GPU \
             on its PCIe root (no per-node address needed)",
            group_label(group),
            paired.join(", ")
        ));
    }
}
