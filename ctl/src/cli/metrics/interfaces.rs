//! Per rail interface, read in its pod: traffic counters, up, MTU.

use std::collections::BTreeMap;
use std::path::Path;

use super::exposition::{Exposition, Kind};
use super::labels::pod_label;
use railcni::net::link::LinkStats;
use railcni::net::{Link, NetNs, Netlink};
use railcni::state::Record;
use railcni::vf::home::is_vf_in_pod;

/// An exported counter: its name, its help, and where it is in the stats.
type Counter = (&'static str, &'static str, fn(&LinkStats) -> u64);

const COUNTERS: [Counter; 8] = [
    (
        "railcni_interface_receive_bytes_total",
        "Bytes received on the rail interface.",
        |s| s.rx_bytes,
    ),
    (
        "railcni_interface_transmit_bytes_total",
        "Bytes sent on the rail interface.",
        |s| s.tx_bytes,
    ),
    (
        "railcni_interface_receive_packets_total",
        "Packets received on the rail interface.",
        |s| s.rx_packets,
    ),
    (
        "railcni_interface_transmit_packets_total",
        "Packets sent on the rail interface.",
        |s| s.tx_packets,
    ),
    (
        "railcni_interface_receive_errors_total",
        "Receive errors on the rail interface.",
        |s| s.rx_errors,
    ),
    (
        "railcni_interface_transmit_errors_total",
        "Transmit errors on the rail interface.",
        |s| s.tx_errors,
    ),
    (
        "railcni_interface_receive_dropped_total",
        "Received packets dropped on the rail interface.",
        |s| s.rx_dropped,
    ),
    (
        "railcni_interface_transmit_dropped_total",
        "Packets dropped before sending on the rail interface.",
        |s| s.tx_dropped,
    ),
];

/// One socket per pod; a pod that cannot be read is left out (it shows in
/// `railcni_stale_attachments` or `railcnictl status`).
pub fn export(e: &mut Exposition, attached: &[&Record]) {
    let mut by_pod: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in attached.iter().filter(|r| !r.dpdk) {
        if let Some(netns) = r.netns() {
            by_pod.entry(netns).or_default().push(r);
        }
    }
    let mut unreadable: BTreeMap<String, u32> = BTreeMap::new();
    for (netns, records) in by_pod {
        let opened = NetNs::open(Path::new(netns)).and_then(|ns| Netlink::connect_in(&ns));
        let nl = match opened {
            Ok(nl) => nl,
            Err(e) => {
                // A namespace gone is the stale gauge's; any other reason
                // (EPERM without CAP_SYS_ADMIN) is counted and logged once.
                if let Some(errno) = e.errno().filter(|n| *n != nix::errno::Errno::ENOENT) {
                    warn_once(errno, &e);
                    *unreadable.entry(format!("{errno:?}")).or_default() += 1;
                }
                continue;
            }
        };
        for r in records {
            if let Ok(Some(link)) = nl.link_with_stats(&r.ifname) {
                if is_vf_in_pod(&link, &r.pci, Some(r.saved_vf())) {
                    one(e, r, &link);
                }
            }
        }
    }
    export_unreadable(e, &unreadable);
}

/// Pods whose namespace the pass could not enter, by errno.
fn export_unreadable(e: &mut Exposition, unreadable: &BTreeMap<String, u32>) {
    let help = "Pod network namespaces this pass could not enter to read their rail interfaces, by errno (EPERM: the agent lacks CAP_SYS_ADMIN).";
    e.declare("railcni_pod_namespaces_unreadable", help, Kind::Gauge);
    for (errno, n) in unreadable {
        e.sample(
            "railcni_pod_namespaces_unreadable",
            help,
            Kind::Gauge,
            &[("errno", errno.as_str())],
            *n as f64,
        );
    }
}

/// One warning per errno for the life of the process: passes run every scrape.
fn warn_once(errno: nix::errno::Errno, e: &railcni::error::Error) {
    static WARNED: std::sync::Mutex<Vec<nix::errno::Errno>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut warned) = WARNED.lock() else {
        return;
    };
    if !warned.contains(&errno) {
        warned.push(errno);
        crate::log_warn!("metrics: a pod's rail interfaces are left out: {e}");
    }
}

fn one(e: &mut Exposition, r: &Record, link: &Link) {
    let pod = pod_label(r);
    let labels = [
        ("network", r.network.as_str()),
        ("ifname", r.ifname.as_str()),
        ("pod", pod.as_str()),
        ("vf", r.pci.as_str()),
    ];
    if let Some(stats) = &link.stats {
        for (name, help, value) in COUNTERS {
            e.sample(name, help, Kind::Counter, &labels, value(stats) as f64);
        }
    }
    let up = if link.up { 1.0 } else { 0.0 };
    e.sample(
        "railcni_interface_up",
        "Whether the rail interface is administratively up (1) or not (0).",
        Kind::Gauge,
        &labels,
        up,
    );
    e.sample(
        "railcni_interface_mtu",
        "The rail interface's MTU in bytes.",
        Kind::Gauge,
        &labels,
        f64::from(link.mtu),
    );
    e.sample(
        "railcni_interface_whole_nic",
        "Whether the rail's device (the vf label's PCI address) is a whole PF moved into the pod (1, a whole-NIC rail) or a VF (0).",
        Kind::Gauge,
        &labels,
        if r.whole_nic { 1.0 } else { 0.0 },
    );
}
