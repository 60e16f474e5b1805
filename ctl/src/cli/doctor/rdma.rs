//! RDMA: the namespace mode that lets a VF's RDMA device follow it into
//! the pod (`rdma system`), whether that survives a reboot, and each
//! rail's VFs' RDMA devices where the rail wants them.

use super::finding::Finding;
use super::place::Where;
use super::rails::Rail;
use base::rdma_policy::RdmaPolicy;
use railcni::hw;
use railcni::net::rdma::RdmaNetnsMode;
use railcni::vf::sysfs::list_dir;
use railcni::vf::Sysfs;

/// Rails whose pods use RDMA: not `rdma: off`, not DPDK.
fn wanting(rails: &[Rail]) -> impl Iterator<Item = &Rail> {
    rails
        .iter()
        .filter(|r| r.rdma != RdmaPolicy::Off && !r.dpdk)
}

/// (VFs with an RDMA device, VFs) of a rail's PF.
fn devices(w: &Where, rail: &Rail) -> Option<(usize, usize)> {
    let sysfs = Sysfs::new(&w.sysfs);
    let vfs = sysfs.vf_pcis_of(rail.pf.as_ref()?);
    let with = (vfs.iter())
        .filter(|pci| !sysfs.rdma_devices(pci).is_empty())
        .count();
    Some((with, vfs.len()))
}

pub fn findings(w: &Where, rails: &[Rail]) -> Vec<Finding> {
    let required = wanting(rails).any(|r| r.rdma == RdmaPolicy::Required);
    let any_device = wanting(rails).any(|r| devices(w, r).is_some_and(|(with, _)| with > 0));
    if !required && !any_device {
        return vec![Finding::skipped(
            "rdma/netns-mode",
            "no VF has an RDMA device; no rail requires one",
            "exclusive, where RDMA is used",
        )];
    }
    let mut out = vec![mode(required), persisted(w)];
    for rail in wanting(rails) {
        // A whole-NIC rail's device is its PF's (its port: `pf_port`).
        out.extend(rail_devices(w, rail).filter(|_| !rail.whole_nic));
        out.extend(pf_port(w, rail));
    }
    out
}

fn mode(required: bool) -> Finding {
    const EXPECTED: &str = "exclusive";
    match hw::backend().rdma_netns_mode() {
        Ok(RdmaNetnsMode::Exclusive) => Finding::ok("rdma/netns-mode", "exclusive", EXPECTED),
        Ok(RdmaNetnsMode::Shared) => Finding::broken(
            "rdma/netns-mode",
            "shared: every pod sees every RDMA device, and none moves with its VF",
            EXPECTED,
            "echo 'options ib_core netns_mode=0' > /etc/modprobe.d/ib_core.conf and reboot; the kernel \
             changes the mode only while no network namespace but the host's exists, so `rdma system set \
             netns exclusive` works only before any pod (or other namespace) starts",
        ),
        Err(e) if required => Finding::broken(
            "rdma/netns-mode",
            format!("cannot read the RDMA namespace mode ({e}): is the RDMA core loaded?"),
            EXPECTED,
            "modprobe ib_core and the NIC's RDMA driver (mlx5_ib for ConnectX), or set the rail's rdma to auto",
        ),
        Err(e) => Finding::skipped(
            "rdma/netns-mode",
            format!("cannot read the RDMA namespace mode ({e}); rdma: auto attaches without"),
            EXPECTED,
        ),
    }
}

/// `options ib_core netns_mode=0` in modprobe.d: the mode after a reboot.
fn persisted(w: &Where) -> Finding {
    const EXPECTED: &str = "ib_core netns_mode=0 in modprobe.d";
    let dir = w.host_path("/etc/modprobe.d");
    let found = list_dir(&dir).into_iter().find(|name| {
        std::fs::read_to_string(dir.join(name)).is_ok_and(|text| {
            text.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.first() == Some(&"options")
                    && words.get(1) == Some(&"ib_core")
                    && words.contains(&"netns_mode=0")
            })
        })
    });
    match found {
        Some(name) => Finding::ok("rdma/netns-mode-persisted", format!("in /etc/modprobe.d/{name}"), EXPECTED),
        None => Finding::broken(
            "rdma/netns-mode-persisted",
            "not in /etc/modprobe.d: a reboot brings back shared mode",
            EXPECTED,
            "echo 'options ib_core netns_mode=0' > /etc/modprobe.d/ib_core.conf (and update-initramfs -u \
             where ib_core is in the initramfs)",
        ),
    }
}

fn rail_devices(w: &Where, rail: &Rail) -> Option<Finding> {
    let (with, vfs) = devices(w, rail)?;
    let id = format!("{}/rdma-devices", rail.name);
    let expected = format!("one per VF (rdma: {})", rail.rdma);
    Some(match (with, rail.rdma) {
        (n, _) if n == vfs && n > 0 => Finding::ok(id, format!("{n} of {vfs} VFs have one"), &expected),
        (0, RdmaPolicy::Auto) => Finding::skipped(id, format!("none of {vfs} VFs has one; rdma: auto attaches without"), &expected),
        (n, RdmaPolicy::Required) => Finding::broken(
            id,
            format!("{n} of {vfs} VFs have one; rdma: required fails ADD on the others"),
            &expected,
            "load the NIC's RDMA driver (modprobe mlx5_ib for ConnectX); a NIC without RDMA cannot serve \
             rdma: required (set the rail's rdma to auto)",
        ),
        (n, _) => Finding::ok(id, format!("{n} of {vfs} VFs have one"), &expected),
    })
}

/// The rail PF's own RDMA port: the VFs' ports come up only behind it (an
/// InfiniBand port the subnet manager made ACTIVE, a RoCE port with link).
fn pf_port(w: &Where, rail: &Rail) -> Option<Finding> {
    let sysfs = Sysfs::new(&w.sysfs);
    let pci = sysfs.pci_of_netdev(rail.pf.as_ref()?)?;
    let device = sysfs.rdma_devices(&pci).into_iter().next()?;
    let ports = sysfs.rdma_ports(&pci, &device)?;
    let states: Vec<(String, railcni::net::ib_port::PortState)> = list_dir(&ports)
        .into_iter()
        .filter_map(|p| {
            Some((
                p.clone(),
                railcni::net::ib_port::read(&ports, p.parse().ok()?)?,
            ))
        })
        .collect();
    if states.is_empty() {
        return None;
    }
    let id = format!("{}/rdma-port", rail.name);
    let found = (states.iter())
        .map(|(p, s)| format!("{device} port {p} {}", s.word))
        .collect::<Vec<_>>()
        .join(", ");
    Some(match states.iter().all(|(_, s)| s.ready_for(None)) {
        true => Finding::ok(id, found, "ACTIVE"),
        false => Finding::broken(
            id,
            found,
            "ACTIVE",
            "InfiniBand: start or check the subnet manager (`ibstat`, `sminfo`; opensm or the UFM \
             on the fabric); RoCE: the PF's link (`ip link`, the cable and switch port)",
        ),
    })
}
