//! CHECK: the attachment still looks like prevResult says it should.

use super::home::is_vf_in_pod;
use super::rail;
use super::Ctx;
use crate::error::{Error, Result};
use crate::net::mac::format_hw_addr;
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
    let link = nl.link_by_name(ifname).await?.ok_or_else(|| {
        Error::CheckFailed(format!("{ifname} is missing from {}", netns.display()))
    })?;
    if !is_vf_in_pod(&link, &record.pci, Some(&record)) {
        return Err(Error::CheckFailed(format!(
            "{ifname} in the pod is not VF {}",
            record.pci
        )));
    }

    let mut diffs = Vec::new();
    let expected = prev.interfaces.iter().position(|i| &i.name == ifname);
    if let Some(mac) = expected.and_then(|i| prev.interfaces[i].mac.as_deref()) {
        let actual = format_hw_addr(&link.mac);
        if !mac.eq_ignore_ascii_case(&actual) {
            diffs.push(format!("MAC is {actual}, expected {mac}"));
        }
    }
    if link.mtu != ctx.conf.mtu {
        diffs.push(format!("MTU is {}, expected {}", link.mtu, ctx.conf.mtu));
    }
    if !link.up {
        diffs.push("link is down".to_string());
    }
    let addresses = nl.addresses(link.index).await?;
    for ip in prev
        .ips
        .iter()
        .filter(|ip| ip.interface.is_none() || ip.interface == expected)
    {
        if !addresses.contains(&ip.address) {
            diffs.push(format!("address {} is missing", ip.address));
        }
    }
    if let Some(plan) = &record.routing {
        diffs.extend(rail::differences(&pod, &nl, ifname, plan).await?);
    }
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
