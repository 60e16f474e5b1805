//! Per rail: its PF (there, up with carrier, MTU), its VFs (enabled, bound
//! to the driver the rail needs) and how many are free, from sysfs.

use std::fs;
use std::path::Path;

use super::finding::Finding;
use super::place::Where;
use crate::cli::node::rail_order;
use base::rdma_policy::{LinkType, RdmaPolicy};
use railcni::config::DEFAULT_MTU;
use railcni::vf::sysfs::{link_target_name, link_type, DPDK_DRIVERS};

/// What a rail needs on this node (the node file's or plan's word).
pub struct Rail {
    pub name: String,
    pub pf: Option<String>,
    pub mtu: u32,
    /// The rail's `rdma`, else its PF's link type's default.
    pub rdma: RdmaPolicy,
    pub dpdk: bool,
    /// The class the rail's RDMA traffic carries (`rdmaQoS.tc`, else `tos`).
    pub qos_class: Option<u8>,
    /// A whole-NIC rail: its PF itself goes into the pod.
    pub whole_nic: bool,
}

/// The rails the node file (or plan) names, in rail order.
pub fn expected(w: &Where) -> Vec<Rail> {
    let Ok(file) = &w.expected else {
        return Vec::new();
    };
    let mut rails: Vec<Rail> = file
        .rails()
        .map(|(name, a)| Rail {
            name: name.clone(),
            pf: a.pf.clone(),
            mtu: a.mtu.unwrap_or(DEFAULT_MTU),
            rdma: RdmaPolicy::or_default_for(a.rdma, link_of(w, a.pf.as_deref())),
            dpdk: a.dpdk,
            qos_class: a.rdma_qos.and_then(|q| q.class()),
            whole_nic: a.whole_nic,
        })
        .collect();
    rails.sort_by_key(|r| rail_order(&r.name));
    rails
}

/// The link type of the rail's PF; a rail whose PF is not named or not
/// there counts as Ethernet.
fn link_of(w: &Where, pf: Option<&str>) -> LinkType {
    pf.map_or(LinkType::Ethernet, |pf| {
        link_type(&railcni::vf::Sysfs::new(&w.sysfs).netdev_dir(pf))
    })
}

/// The rail's links, stopping at the first that leaves nothing to check after it.
/// `held`: the VFs attachment records hold.
pub fn findings(w: &Where, rail: &Rail, held: &[String]) -> Vec<Finding> {
    let id = |what: &str| format!("{}/{what}", rail.name);
    let Some(pf) = &rail.pf else {
        return vec![Finding::skipped(
            id("pf"),
            "no PF named for this rail",
            "the rail's `pf` in the plan",
        )];
    };
    if rail.whole_nic && is_pci_address(pf) {
        return vec![granted_by_address(w, pf, id("pf"))];
    }
    let sysfs = railcni::vf::Sysfs::new(&w.sysfs);
    let dir = sysfs.netdev_dir(pf);
    if !dir.exists() && rail.whole_nic {
        return vec![Finding::skipped(
            id("pf"),
            format!("{pf} is not on the host: a whole-NIC rail's PF is in its pod while attached (`railcnictl status`), or gone"),
            "present, with a driver",
        )];
    }
    if !dir.exists() {
        return vec![Finding::broken(
            id("pf"),
            format!("no netdev {pf} ({} is missing)", dir.display()),
            "present, with a driver",
            format!(
                "find the rail's NIC with `ip link` and `lspci -k` (driver loaded? renamed?), or correct \
                 `pf` of {} in the plan",
                rail.name
            ),
        )];
    }
    let device = sysfs.netdev_device_dir(pf);
    let mut out = vec![present(&dir, &device, pf, id("pf"))];
    out.push(link(&dir, pf, id("pf-link")));
    if rail.whole_nic {
        out.push(whole(&device, pf, id("vfs")));
        return out;
    }
    out.push(mtu(&dir, pf, rail, id("pf-mtu")));
    out.push(numvfs(&device, pf, id("vfs")));
    let vfs = sysfs.vf_pcis_of(pf);
    if !vfs.is_empty() {
        out.push(drivers(&sysfs, &vfs, rail, id("vf-drivers")));
        out.push(free(&vfs, held, id("free-vfs")));
    }
    out
}

/// The rail's PF netdev, there: its driver and link layer.
fn present(dir: &Path, device: &Path, pf: &str, id: String) -> Finding {
    let driver = link_target_name(&device.join("driver"));
    let layer = match link_type(dir) {
        LinkType::InfiniBand => "InfiniBand",
        LinkType::Ethernet => "Ethernet",
    };
    let found = format!(
        "{pf}, driver {}, {layer}",
        driver.as_deref().unwrap_or("none")
    );
    Finding::ok(id, found, "present, with a driver")
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn link(dir: &Path, pf: &str, id: String) -> Finding {
    const EXPECTED: &str = "up, carrier";
    const IFF_UP: u32 = 0x1;
    let up = read(&dir.join("flags"))
        .and_then(|f| u32::from_str_radix(f.trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & IFF_UP != 0);
    // The kernel refuses to read `carrier` of a link that is down.
    let carrier = read(&dir.join("carrier")).as_deref() == Some("1");
    let state = read(&dir.join("operstate")).unwrap_or_else(|| "unknown".into());
    match (up, carrier) {
        (true, true) => Finding::ok(id, format!("{pf} up, carrier, state {state}"), EXPECTED),
        (false, _) => Finding::broken(
            id,
            format!("{pf} is down"),
            EXPECTED,
            format!("ip link set {pf} up (and keep it up in the node's network config: netplan, NetworkManager, systemd-networkd)"),
        ),
        (true, false) => Finding::broken(
            id,
            format!("{pf} is up without carrier (state {state})"),
            EXPECTED,
            format!("check {pf}'s cable or transceiver and its leaf switch port (`ethtool {pf}`)"),
        ),
    }
}

fn mtu(dir: &Path, pf: &str, rail: &Rail, id: String) -> Finding {
    let expected = format!("mtu >= {} (the rail's)", rail.mtu);
    match read(&dir.join("mtu")).and_then(|m| m.parse::<u32>().ok()) {
        Some(m) if m >= rail.mtu => Finding::ok(id, format!("{pf} mtu {m}"), &expected),
        Some(m) => Finding::broken(
            id,
            format!(
                "{pf} mtu {m}, below the rail's {}: a VF cannot exceed its PF",
                rail.mtu
            ),
            &expected,
            format!(
                "ip link set {pf} mtu {} (and persist it in the node's network config)",
                rail.mtu
            ),
        ),
        None => Finding::broken(
            id,
            format!("cannot read {}", dir.join("mtu").display()),
            &expected,
            format!("check {pf} with `ip link show {pf}`"),
        ),
    }
}

/// `device`: the PF's PCI device directory.
fn numvfs(device: &Path, pf: &str, id: String) -> Finding {
    const EXPECTED: &str = "sriov_numvfs > 0";
    let file = device.join("sriov_numvfs");
    let total = read(&device.join("sriov_totalvfs")).unwrap_or_else(|| "?".into());
    match read(&file).and_then(|n| n.parse::<u32>().ok()) {
        Some(n) if n > 0 => Finding::ok(id, format!("{n} of {total} VFs enabled on {pf}"), EXPECTED),
        Some(_) => Finding::broken(
            id,
            format!("no VFs on {pf} (sriov_numvfs 0 of {total})"),
            EXPECTED,
            format!(
                "echo <N> > /sys/class/net/{pf}/device/sriov_numvfs (N up to {total}), or the SR-IOV \
                 network operator's SriovNetworkNodePolicy for {pf}"
            ),
        ),
        None => Finding::broken(
            id,
            format!("{pf} is not SR-IOV capable ({} is missing)", file.display()),
            EXPECTED,
            format!("enable SR-IOV for {pf} in the NIC's firmware and BIOS, or correct the rail's `pf`"),
        ),
    }
}

/// `0000:3b:00.0`: a whole-NIC rail's PF named by its PCI address (a PF
/// bound to vfio-pci has no netdev).
fn is_pci_address(pf: &str) -> bool {
    let parts: Vec<&str> = pf.split([':', '.']).collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A whole-NIC rail's PF named by its PCI address: present, with its driver.
fn granted_by_address(w: &Where, pci: &str, id: String) -> Finding {
    const EXPECTED: &str = "present, with a driver";
    let dir = railcni::vf::Sysfs::new(&w.sysfs).device(pci);
    match link_target_name(&dir.join("driver")) {
        Some(driver) if dir.exists() => Finding::ok(id, format!("{pci}, driver {driver} (whole PF)"), EXPECTED),
        _ => Finding::broken(
            id,
            format!("no PCI device {pci} with a driver ({} is missing)", dir.display()),
            EXPECTED,
            format!("find the rail's NIC with `lspci -k` and bind it (vfio-pci for DPDK), or correct the rail's `pf` ({pci})"),
        ),
    }
}

/// A whole-NIC rail's PF has no VFs: ADD refuses one with VFs enabled
/// (they would lose their parent's link when it moves).
fn whole(device: &Path, pf: &str, id: String) -> Finding {
    const EXPECTED: &str = "sriov_numvfs 0 (a whole-NIC rail)";
    match read(&device.join("sriov_numvfs")).and_then(|n| n.parse::<u32>().ok()) {
        Some(n) if n > 0 => Finding::broken(
            id,
            format!("{n} VFs enabled on {pf}: ADD refuses a whole PF with VFs"),
            EXPECTED,
            format!("echo 0 > /sys/class/net/{pf}/device/sriov_numvfs (and drop {pf} from SR-IOV policies)"),
        ),
        _ => Finding::ok(id, format!("no VFs on {pf}: it goes whole to a pod"), EXPECTED),
    }
}

fn drivers(sysfs: &railcni::vf::Sysfs, vfs: &[String], rail: &Rail, id: String) -> Finding {
    let expected = if rail.dpdk {
        "all bound to vfio-pci (DPDK)"
    } else {
        "all bound to a netdev driver"
    };
    let driver_of = |pci: &String| sysfs.driver(pci);
    let bound: Vec<(String, Option<String>)> =
        vfs.iter().map(|p| (p.clone(), driver_of(p))).collect();
    let wrong = |d: &Option<String>| match d.as_deref() {
        None => true,
        Some(d) if rail.dpdk => !DPDK_DRIVERS.contains(&d),
        Some(d) => DPDK_DRIVERS.contains(&d),
    };
    let mut names: Vec<&str> = bound.iter().filter_map(|(_, d)| d.as_deref()).collect();
    names.sort_unstable();
    names.dedup();
    let found = format!(
        "{} VFs, driver {}",
        vfs.len(),
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    );
    let Some((pci, driver)) = bound.iter().find(|(_, d)| wrong(d)) else {
        return Finding::ok(id, found, expected);
    };
    let usual = names.iter().find(|d| rail.dpdk == DPDK_DRIVERS.contains(d));
    let fix = match (driver, rail.dpdk, usual) {
        (_, true, _) => format!("dpdk-devbind.py -b vfio-pci {pci} (or driverctl set-override {pci} vfio-pci)"),
        (None, false, Some(d)) => format!("echo {pci} > /sys/bus/pci/drivers/{d}/bind"),
        (None, false, None) => format!("load the VF driver (modprobe iavf, igbvf or mlx5_core) and bind {pci} to it"),
        (Some(d), false, _) => format!(
            "echo {pci} > /sys/bus/pci/drivers/{d}/unbind, then bind it to the VF's netdev driver (or mark the rail dpdk in the plan)"
        ),
    };
    let what = match driver {
        None => format!("VF {pci} is bound to no driver"),
        Some(d) => format!("VF {pci} is bound to {d}"),
    };
    Finding::broken(id, format!("{found}; {what}"), expected, fix)
}

fn free(vfs: &[String], held: &[String], id: String) -> Finding {
    let free = vfs.iter().filter(|p| !held.contains(p)).count();
    Finding::ok(
        id,
        format!(
            "{free} of {} VFs free, {} attached",
            vfs.len(),
            vfs.len() - free
        ),
        "(information)",
    )
}
