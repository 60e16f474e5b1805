//! Re-attaching a VF that a PF driver reload tore out of a live pod.
//!
//! A reload (`sriov_numvfs` to 0 and back, `modprobe -r` of the PF or VF
//! driver, a firmware reset) destroys every VF netdev inside the pods; the
//! VFs come back at the same PCI addresses, as new netdevs in the host
//! namespace, with the PF's factory settings. The record says which pod
//! held each one and how ADD left it, so the VF goes back exactly so: the
//! PF-side settings, its MAC, into the pod under its name with its MTU and
//! IPv4 settings, its sysctls, up, its addresses, its routes and rule. A
//! VF whose pod is gone is detached instead (`detach`), lease and record.

use std::path::Path;

use cni::{CniResult, Interface};

use super::detach::{detach, Attachment, Pod, Release};
use crate::error::{Error, Result};
use crate::net::{Arrival, Link, Mac, NetNs, Netlink};
use crate::node::Node;
use crate::rdma_qos::{self, Moment, QosRecord, RoceAttr};
use crate::routing::devconf;
use crate::state::{Phase, Record};
use crate::vf::home::{find_in_host, is_vf_in_pod};
use crate::vf::ipoib;
use crate::{log_info, log_warn};

/// What `reattach` found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reattach {
    /// The VF is in its pod as ADD left it (or the record is not an
    /// attached netdev): nothing to do.
    InPlace,
    /// Neither in the pod nor back on the host yet: the VF is gone.
    Gone,
    /// On the host as the same netdev the pod had: a detach brought it
    /// home (a DEL that kept its record to finish later), not a reload.
    Home,
    /// Back on the host while its pod lives: re-attached into the pod
    /// (`locate` names it before `reattach` does it).
    Reattached,
    /// Its pod is gone: the attachment was detached instead.
    Released,
}

impl Reattach {
    /// As `railcni_reattach_total{result}` and the logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Reattach::InPlace => "in_place",
            Reattach::Gone => "gone",
            Reattach::Home => "home",
            Reattach::Reattached => "reattached",
            Reattach::Released => "released",
        }
    }
}

/// Where the record's VF is now, without changing anything.
pub fn locate(node: &Node, record: &Record) -> Result<Reattach> {
    if record.phase != Phase::Attached || record.dpdk {
        return Ok(Reattach::InPlace);
    }
    if !record.netns_alive(node.settings.boot_id().as_deref()) {
        return Ok(Reattach::Released);
    }
    let Some(path) = record.netns() else {
        return Ok(Reattach::InPlace);
    };
    let pod = NetNs::open(Path::new(path))?;
    let pod_nl = Netlink::connect_in(&pod)?;
    if in_pod(&pod_nl, record)?.is_some() {
        return Ok(Reattach::InPlace);
    }
    let host_nl = Netlink::connect_in(&node.host)?;
    let names = node.sysfs.netdevs(&record.pci);
    // A reload makes a new netdev (a new ifindex); a move home keeps the
    // index the VF had in the pod.
    match find_in_host(&host_nl, &record.pci, &names, None)? {
        Some(link) if Some(link.index) == record.pod_ifindex => Ok(Reattach::Home),
        Some(_) => Ok(Reattach::Reattached),
        None => Ok(Reattach::Gone),
    }
}

/// Put the record's VF back in its pod if it is home while its pod lives;
/// give the attachment back if its pod is gone. Takes the VF's lock.
pub fn reattach(node: &Node, pci: &str) -> Result<Reattach> {
    let _lock = node.store.lock_vf(pci)?;
    let Some(record) = node.store.load(pci)? else {
        return Ok(Reattach::InPlace);
    };
    match locate(node, &record)? {
        Reattach::Released => {
            detach(
                node,
                &Attachment::of(&record),
                &Release::Recorded,
                Pod::Unknown,
            )?;
            log_info!(
                "VF {pci}: the pod of {}/{} is gone; its attachment was detached",
                record.container_id,
                record.ifname
            );
            Ok(Reattach::Released)
        }
        Reattach::Reattached => {
            reattach_into_pod(node, &record)?;
            Ok(Reattach::Reattached)
        }
        other => Ok(other),
    }
}

/// The VF in the pod under the attachment's name, if it is there.
fn in_pod(pod_nl: &Netlink, record: &Record) -> Result<Option<Link>> {
    Ok(pod_nl
        .link_by_name(&record.ifname)?
        .filter(|l| is_vf_in_pod(l, &record.pci, Some(record.saved_vf()))))
}

/// ADD's kernel steps again, from the record.
fn reattach_into_pod(node: &Node, record: &Record) -> Result<()> {
    let pci = &record.pci;
    let vf = node.sysfs.resolve_recorded(pci)?;
    let result = record.result.as_ref().ok_or_else(|| {
        Error::State(cni::IoFailure::plain(format!(
            "the record of VF {pci} holds no ADD result"
        )))
    })?;
    let iface = result.interfaces.first().cloned().unwrap_or_default();
    let (mut record, rebinding) = host_side_again(node, record, &vf)?;
    let host_nl = Netlink::connect_in(&node.host)?;
    let link = find_in_host(&host_nl, pci, &vf.netdevs, None)?
        .ok_or_else(|| Error::DeviceNotFound(format!("VF {pci} left the host again")))?;
    set_pod_mac(&host_nl, &link, &iface)?;
    let (path, pod) = pod_of(&record)?;
    let pod_nl = Netlink::connect_in(&pod)?;
    let split = (record.routing.as_ref())
        .map(|p| devconf::split(&p.sysctls))
        .unwrap_or_default();
    let arrival = |mtu: u32| Arrival {
        mtu: iface.mtu.filter(|m| *m != mtu),
        inet: split.inet.clone(),
    };
    // An IPoIB netdev is a client of its RDMA device: the device goes
    // first, and the netdev the kernel makes anew is found after it.
    let ipoib = vf.infiniband && record.rdma_device.is_some();
    if ipoib {
        record.rdma_device = move_device_again(node, &record, &pod)?.or(record.rdma_device);
    }
    drop(rebinding);
    let sides = ipoib::Sides {
        host_nl: &host_nl,
        pod: &pod,
        pod_nl: &pod_nl,
    };
    let moved = put_in_pod(&sides, &vf, &link, (&path, &record.ifname), ipoib, arrival)?;
    if !ipoib && record.rdma_device.is_some() {
        record.rdma_device = move_device_again(node, &record, &pod)?.or(record.rdma_device);
    }
    bring_up(node, &record, &pod, &pod_nl, &moved, &split.files)?;
    address_and_route(&record, result, &pod_nl, &moved)?;
    record.pod_ifindex = Some(moved.index);
    // The host knows the reloaded netdev by its new index.
    record.host.ifindex = link.index;
    record.reattached += 1;
    node.store.save(&record)?;
    log_info!(
        "VF {pci} came back to the host after a driver reload; re-attached in {path} as {} ({}/{})",
        record.ifname,
        record.pod.as_deref().unwrap_or(&record.container_id),
        record.network
    );
    Ok(())
}

/// The PF-side settings and the RDMA device's QoS again, on the host; the
/// record as it is now, and the node's rebind lock when a GUID's rebind
/// came of it (held until the new device is named, by PCI address, and
/// moved: one rebind at a time on the node).
fn host_side_again(
    node: &Node,
    record: &Record,
    vf: &crate::vf::Vf,
) -> Result<(Record, Option<crate::state::VfLock>)> {
    let rebinds = record
        .vf_applied
        .as_ref()
        .and_then(|s| s.ib_guid())
        .is_some();
    let rebinding = rebinds.then(|| node.store.lock_rebinds()).transpose()?;
    set_vf_again(node, record, vf)?;
    Ok((qos_recorded_again(node, record, vf)?, rebinding))
}

/// The pod's namespace the record names: its path, and it open.
fn pod_of(record: &Record) -> Result<(String, NetNs)> {
    let path = record
        .netns()
        .ok_or_else(|| Error::internal("an attached record without a netns"))?;
    Ok((path.to_string(), NetNs::open(Path::new(path))?))
}

/// The VF's netdev into the pod at `path` under `ifname`: an IPoIB netdev
/// wherever its RDMA device's move left it, else from the host. The link
/// there.
fn put_in_pod(
    sides: &ipoib::Sides<'_>,
    vf: &crate::vf::Vf,
    link: &Link,
    (path, ifname): (&str, &str),
    ipoib: bool,
    arrival: impl Fn(u32) -> Arrival,
) -> Result<Link> {
    let known = ipoib::Known {
        pci: &vf.pci,
        sysfs_names: &vf.netdevs,
        saved: None,
        index: Some(link.index),
    };
    let placed = match ipoib {
        true => ipoib::place(sides, &known, ifname, arrival)?,
        false => (sides.host_nl).move_to(link.index, sides.pod, ifname, &arrival(link.mtu))?,
    };
    if !placed {
        return Err(Error::NameTaken(format!(
            "cannot put VF {} back: {ifname} is taken in {path}",
            vf.pci
        )));
    }
    sides.pod_nl.link_by_name(ifname)?.ok_or_else(|| {
        Error::DeviceVanished(format!("VF {} moved but {ifname} is not there", vf.pci))
    })
}

/// The VF's RDMA device, new since the reload (and since any GUID's
/// rebind), named now by its PCI address and moved into the pod; its name
/// (`None`: it has not come back).
fn move_device_again(node: &Node, record: &Record, pod: &NetNs) -> Result<Option<String>> {
    let moved = node.move_rdma_device_of(&record.pci, pod.fd(), |device| {
        if record.rdma_device.as_deref() != Some(device) {
            log_info!(
                "VF {}'s RDMA device is {device} now (it was {:?})",
                record.pci,
                record.rdma_device
            );
        }
        Ok(())
    })?;
    if moved.is_none() {
        log_warn!("VF {}: its RDMA device has not come back", record.pci);
    }
    Ok(moved)
}

/// The record with `rdmaQoS` for the new RDMA device, its traffic class
/// set. The reload made a device with no QoS: what it holds now is what
/// DEL restores, so the record says so before the first write.
fn qos_recorded_again(node: &Node, record: &Record, vf: &crate::vf::Vf) -> Result<Record> {
    let mut record = record.clone();
    let qos = qos_again(node, &record, vf)?;
    if qos != record.rdma_qos {
        record.rdma_qos = qos;
        node.store.save(&record)?;
    }
    if let Some(q) = &record.rdma_qos {
        let at = node.roce_port(&record.pci, &q.device, q.port);
        rdma_qos::apply(node.hw.as_ref(), &at, q, Moment::OnHost)?;
    }
    Ok(record)
}

/// `rdmaQoS` for the VF's RDMA device as the reload left it (its name may
/// have changed): the same values, with what the new device holds now.
/// A half it cannot take is left out and reported.
fn qos_again(node: &Node, record: &Record, vf: &crate::vf::Vf) -> Result<Option<QosRecord>> {
    let (Some(old), Some(device)) = (&record.rdma_qos, vf.rdma_devices.first()) else {
        return Ok(None);
    };
    let hw = node.hw.as_ref();
    let made_group = RoceAttr::RdmaCmGroup(false);
    if old.device != *device && old.restore.get(&made_group) == Some(made_group) {
        // The group railcni made for the old device has nothing to name.
        let at = node.roce_port(&vf.pci, &old.device, old.port);
        if let Err(e) = hw.set_roce(&at, &made_group) {
            log_warn!("VF {}: {}", vf.pci, e.details());
        }
    }
    let device_dir = node.sysfs.rdma_device_dir(&vf.pci, device);
    let port = crate::vf::sysfs::port_of(device_dir.as_deref(), &vf.netdev_names(&record.ifname));
    let at = node.roce_port(&vf.pci, device, port);
    let mut fresh = rdma_qos::prepare(hw, &at, &old.asked(), false)?;
    // The same device still holding what railcni wrote was not remade:
    // what it held before railcni stays what DEL restores.
    if let Some(new) = fresh.as_mut().filter(|n| n.device == old.device) {
        new.restore = new.restore.kept_through(&old.applied, &old.restore);
    }
    Ok(fresh)
}

/// The PF-side settings ADD set: a reload brought the VF back with the
/// driver's defaults.
fn set_vf_again(node: &Node, record: &Record, vf: &crate::vf::Vf) -> Result<()> {
    match record.vf_applied.as_ref().filter(|s| !s.is_empty()) {
        Some(settings) => crate::vf::settings::apply(
            node.hw.as_ref(),
            &node.sysfs,
            vf,
            settings,
            &record.vf_restore.clone().unwrap_or_default(),
            node.settings.rebind_timeout,
        ),
        None => Ok(()),
    }
}

/// The addresses of ADD's result, then the rail's routes and rule.
fn address_and_route(
    record: &Record,
    result: &CniResult,
    pod_nl: &Netlink,
    moved: &Link,
) -> Result<()> {
    for ip in &result.ips {
        if let Err(e) = pod_nl.add_address(moved.index, ip.address) {
            log_warn!("VF {}: address {}: {}", record.pci, ip.address, e.details());
        }
    }
    if let Some(plan) = &record.routing {
        crate::routing::apply::install(pod_nl, &record.ifname, moved.index, plan, None)?;
    }
    Ok(())
}

/// The pod-side MAC ADD gave the netdev, set on the host before the move
/// (see `vf::settings` for why there).
fn set_pod_mac(host_nl: &Netlink, link: &Link, iface: &Interface) -> Result<()> {
    let wanted = iface.mac.as_deref().and_then(|m| m.parse::<Mac>().ok());
    match wanted {
        Some(mac) if link.mac[..] != mac.0 => host_nl.set_mac(link.index, &mac.0),
        _ => Ok(()),
    }
}

fn bring_up(
    node: &Node,
    record: &Record,
    pod: &NetNs,
    pod_nl: &Netlink,
    moved: &Link,
    files: &[&crate::routing::plan::Sysctl],
) -> Result<()> {
    // rdma_cm forgot the ToS when the device moved.
    if let Some(q) = &record.rdma_qos {
        let at = node.roce_port(&record.pci, &q.device, q.port);
        rdma_qos::apply(node.hw.as_ref(), &at, q, Moment::AfterMove)?;
    }
    if !files.is_empty() {
        crate::routing::apply::write_sysctls(
            pod,
            &node.settings.proc_sys_net,
            &record.ifname,
            files,
        )?;
    }
    pod_nl.set_up(moved.index)
}
