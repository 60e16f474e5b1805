//! CHECK: the attachment still looks like prevResult says it should.

use super::verify::{addresses, compare, drift, Expected};
use super::Ctx;
use crate::error::{Error, Result};
use crate::net::{NetNs, Netlink};
use cni::CniResult;

pub async fn check(ctx: &Ctx) -> Result<()> {
    let prev =
        ctx.conf.prev_result.as_ref().ok_or_else(|| {
            Error::config("prevResult", "CHECK needs the ADD result in prevResult")
        })?;
    let prev = CniResult::from_value(prev)?;
    let (cid, ifname) = (&ctx.env.container_id, &ctx.env.ifname);
    let record = ctx
        .store
        .find(cid, ifname)?
        .ok_or_else(|| Error::CheckFailed(format!("no attachment record for {cid}/{ifname}")))?;

    if record.dpdk {
        // Nothing was moved: only the address reservation can be checked.
        return ctx.ipam().map_or(Ok(()), |ipam| ipam.check());
    }
    let netns = ctx
        .env
        .netns
        .as_deref()
        .ok_or_else(|| Error::invalid_env("CNI_NETNS is required for CHECK"))?;
    let pod = NetNs::open(netns)?;
    let nl = Netlink::connect_in(&pod)?;
    let expected = Expected {
        ifname,
        mac: prev
            .interfaces
            .iter()
            .find(|i| &i.name == ifname)
            .and_then(|i| i.mac.as_deref()),
        // What ADD set and reported (an InfiniBand VF's default is the PF's).
        mtu: prev
            .interfaces
            .iter()
            .find(|i| &i.name == ifname)
            .and_then(|i| i.mtu)
            .unwrap_or(ctx.conf.mtu),
        addresses: addresses(&prev.ips),
    };
    let diffs = drift(&compare(&pod, &nl, &record, &expected).await?);
    if !diffs.is_empty() {
        return Err(Error::CheckFailed(format!(
            "{ifname} in {}: {}",
            netns.display(),
            diffs.join("; ")
        )));
    }
    if let Some(ipam) = ctx.ipam() {
        ipam.check()?;
    }
    Ok(())
}
