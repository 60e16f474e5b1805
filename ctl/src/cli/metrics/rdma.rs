//! Per RDMA device of an attached rail: the traffic class and ToS
//! `rdmaQoS` set (`railcni_rdma_traffic_class`, `railcni_rdma_tos`), and
//! every numeric file of each port's
//! `hw_counters/` and `counters/`, as `railcni_rdma_<file name>`, typed
//! `unknown` (the driver's files mix counters and gauges). The device is
//! found at scrape time, moved with the VF or not (shared mode).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::exposition::name_part;
use super::exposition::{Exposition, Kind};
use super::labels::pod_label;
use railcni::state::Record;
use railcni::vf::sysfs::list_dir;
use railcni::vf::Sysfs;

pub fn export(e: &mut Exposition, sysfs: &Sysfs, attached: &[&Record]) {
    qos(e, attached);
    for r in attached {
        let Ok(vf) = sysfs.resolve_recorded(&r.pci) else {
            continue;
        };
        for dev in &vf.rdma_devices {
            let Some(ports) = sysfs.rdma_ports(&r.pci, dev) else {
                continue;
            };
            // A multi-port device carries the VF on one port: only its
            // counters are the attachment's (any port of a record that
            // predates the port match).
            let ours = |port: &String| r.hca_port().is_none_or(|p| p.to_string() == *port);
            for port in list_dir(&ports).iter().filter(|p| ours(p)) {
                device_port(e, r, dev, port, &ports.join(port));
            }
        }
    }
}

/// What `rdmaQoS` set on each attachment's RDMA device.
fn qos(e: &mut Exposition, attached: &[&Record]) {
    for r in attached {
        let Some(q) = &r.rdma_qos else { continue };
        let pod = pod_label(r);
        let port = q.port.to_string();
        let labels = [
            ("network", r.network.as_str()),
            ("ifname", r.ifname.as_str()),
            ("pod", pod.as_str()),
            ("rdma_device", q.device.as_str()),
            ("port", port.as_str()),
        ];
        if let Some(c) = q.traffic_class() {
            let help = "The traffic class (IP ToS byte) railcni forced on the attachment's RDMA device (rdmaQoS.tc).";
            e.sample(
                "railcni_rdma_traffic_class",
                help,
                Kind::Gauge,
                &labels,
                f64::from(c),
            );
        }
        if let Some(c) = q.tos() {
            let help =
                "rdma_cm's default ToS railcni set for the attachment's RDMA device (rdmaQoS.tos).";
            e.sample("railcni_rdma_tos", help, Kind::Gauge, &labels, f64::from(c));
        }
    }
}

fn device_port(e: &mut Exposition, r: &Record, dev: &str, port: &str, dir: &Path) {
    let pod = pod_label(r);
    let labels = [
        ("network", r.network.as_str()),
        ("ifname", r.ifname.as_str()),
        ("pod", pod.as_str()),
        ("rdma_device", dev),
        ("port", port),
    ];
    // The port's state as the kernel numbers it (`enum ib_port_state`).
    let state = (port.parse().ok()).and_then(|p| railcni::net::ib_port::read(dir.parent()?, p));
    if let Some(state) = state {
        let help =
            "The state of the attachment's RDMA port as the kernel numbers it: 1 DOWN, 2 INIT, \
                    3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER (ports/<p>/state); NCCL needs 4.";
        e.sample(
            "railcni_rdma_port_state",
            help,
            Kind::Gauge,
            &labels,
            f64::from(state.code),
        );
    }
    let mut seen = BTreeSet::new();
    for sub in ["hw_counters", "counters"] {
        for file in list_dir(&dir.join(sub)) {
            let Some(value) = read_number(&dir.join(sub).join(&file)) else {
                continue;
            };
            // A name in both directories is exported once (hw_counters' value).
            if !seen.insert(file.clone()) {
                continue;
            }
            let name = format!("railcni_rdma_{}", name_part(&file));
            let help = format!("The RDMA device's {sub}/{file} counter, as the driver reports it.");
            e.sample(&name, &help, Kind::Unknown, &labels, value);
        }
    }
}

fn read_number(path: &Path) -> Option<f64> {
    let text = fs::read_to_string(path).ok()?;
    let n: u64 = text.trim().parse().ok()?;
    Some(n as f64)
}
