//! CHECK: the attachment still looks like ADD left it (its record), and the
//! runtime's prevResult says the same.

use crate::attachment::verify::{compare, drift, Expected, RdmaPlaces};
use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::net::{NetNs, Netlink};
use cni::CniResult;

pub fn check(ctx: &Ctx) -> Result<()> {
    let prev =
        ctx.conf.prev_result.as_ref().ok_or_else(|| {
            Error::config("prevResult", "CHECK needs the ADD result in prevResult")
        })?;
    let prev = CniResult::from_value(prev)?;
    let (cid, ifname) = (&ctx.env.container_id, &ctx.env.ifname);
    let record = ctx
        .record()?
        .ok_or_else(|| Error::CheckFailed(format!("no attachment record for {cid}/{ifname}")))?;
    let expected = Expected::from_record(&record)?;
    let mut diffs = expected.disagreements(&prev);
    if !record.dpdk {
        let netns = ctx
            .env
            .netns
            .as_deref()
            .ok_or_else(|| Error::invalid_env("CNI_NETNS is required for CHECK"))?;
        let pod = NetNs::open(netns)?;
        let nl = Netlink::connect_in(&pod)?;
        let places = RdmaPlaces::of(&ctx.node);
        diffs.extend(drift(&compare(&pod, &nl, &record, &expected, &places)?));
    }
    // A DPDK VF was not moved: only the address reservation is checked.
    if !diffs.is_empty() {
        return Err(Error::CheckFailed(format!(
            "{ifname} of VF {}: {}",
            record.pci,
            diffs.join("; ")
        )));
    }
    if let Some(ipam) = ctx.ipam() {
        ipam.check()?;
    }
    Ok(())
}
