//! ADD's last phase: the device-info file Multus asked for and the closing
//! log line.

use cni::CniResult;

use super::intent::Intent;
use crate::commands::ctx::Ctx;
use crate::devinfo;
use crate::log_info;
use crate::state::Record;

pub fn attached(
    ctx: &Ctx,
    intent: &Intent<'_>,
    record: &Record,
    result: &CniResult,
    gid_index: Option<u32>,
) {
    let vf = &intent.vf;
    if let Some(path) = &ctx.conf.device_info_file {
        let ib = vf.infiniband.then_some(devinfo::Infiniband {
            guid: ctx.conf.vf.ib_guid(),
            pkey: ctx.conf.pkey,
        });
        let rdma = record.rdma_device.as_deref();
        let qos = record.rdma_qos.as_ref();
        let roce = devinfo::Roce {
            gid_index,
            traffic_class: qos.and_then(crate::rdma_qos::QosRecord::traffic_class),
            tos: qos.and_then(crate::rdma_qos::QosRecord::tos),
        };
        devinfo::write(path, &ctx.node.settings.devinfo_dir, vf, rdma, ib, roce);
    }
    log_info!(
        "attached VF {} as {} in {}: {}, table {}; {}",
        vf.pci,
        ctx.env.ifname,
        intent.netns.display(),
        summary_addresses(result),
        record
            .routing
            .as_ref()
            .map_or_else(|| "none".to_string(), |p| p.table.to_string()),
        crate::timing::summary()
    );
}

/// `172.16.0.0/31` (or `no address`), for log lines.
pub fn summary_addresses(result: &CniResult) -> String {
    if result.ips.is_empty() {
        return "no address".into();
    }
    result
        .ips
        .iter()
        .map(|ip| ip.address.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
