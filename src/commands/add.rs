//! ADD: move the VF into the pod as CNI_IFNAME, configure it, address it.

use super::rail;
use super::vf::{find_in_host, Home};
use super::Ctx;
use crate::cni::result::{CniResult, Interface};
use crate::config::format_mac;
use crate::error::{Error, Result};
use crate::ipam::Ipam;
use crate::journal::Journal;
use crate::net::{Link, NetNs, Netlink};
use crate::routing;
use crate::sriov::Vf;
use crate::state::{HostLink, Phase, Record};
use crate::{log_info, log_warn};

/// How to undo each host change ADD makes.
enum Undo {
    RemoveRecord,
    ReleaseIpam,
    ReturnVf,
    RemoveRouting,
}

pub async fn add(ctx: &Ctx) -> Result<CniResult> {
    let vf = ctx.sysfs.resolve(ctx.conf.require_device_id()?)?;
    vf.require_netdev_mode()?;
    let _lock = ctx.store.lock_vf(&vf.pci)?;
    let netns_path = ctx
        .env
        .netns
        .as_deref()
        .ok_or_else(|| Error::InvalidEnv("CNI_NETNS is required for ADD".into()))?;
    let pod = NetNs::open(netns_path)?;
    let host_nl = Netlink::connect_in(&ctx.host)?;
    let pod_nl = Netlink::connect_in(&pod)?;
    let home = Home {
        host: &ctx.host,
        host_nl: &host_nl,
        pci: &vf.pci,
        sysfs_names: &vf.netdevs,
    };

    let cleared = match ctx.store.load(&vf.pci)? {
        Some(existing) => match replay_or_clear(ctx, &existing, &home, &pod_nl).await? {
            Previous::Replay(result) => return Ok(result),
            Previous::Cleared(link) => link,
        },
        None => None,
    };
    let link = match cleared {
        Some(link) => Some(link),
        None => find_in_host(&host_nl, &vf.pci, &vf.netdevs, None).await?,
    };
    let link = link.ok_or_else(|| {
            Error::DeviceNotFound(format!(
                "VF {} has no netdev in the host namespace (sysfs lists {:?}); is it attached elsewhere?",
                vf.pci, vf.netdevs
            ))
        })?;
    preflight(ctx, &vf, &pod_nl).await?;

    let mut record = Record::new(
        &vf.pci,
        &ctx.conf.name,
        &ctx.env.container_id,
        &ctx.env.ifname,
        Some(netns_path),
        HostLink {
            name: link.name.clone(),
            mac: format_mac(&link.mac),
            mtu: link.mtu,
            ifindex: link.index,
        },
    );
    record.ipam_type = ctx.conf.ipam.as_ref().map(|i| i.kind.clone());

    let mut journal = Journal::default();
    let outcome = attach(
        ctx,
        &vf,
        &link,
        &pod,
        &host_nl,
        &pod_nl,
        &mut record,
        &mut journal,
    )
    .await;
    match outcome {
        Ok(result) => {
            journal.commit();
            log_info!(
                "attached VF {} ({}) as {} in {}",
                vf.pci,
                link.name,
                ctx.env.ifname,
                netns_path.display()
            );
            Ok(result)
        }
        Err(err) => {
            log_warn!("ADD failed ({err}); undoing");
            let failures = journal
                .unwind(async |step| match step {
                    Undo::ReturnVf => home
                        .bring_back(Some(&pod_nl), &ctx.env.ifname, Some(&record))
                        .await
                        .map(drop),
                    Undo::ReleaseIpam => Ipam::new(&ctx.conf, &ctx.env).map_or(Ok(()), |i| i.del()),
                    Undo::RemoveRecord => ctx.store.remove(&vf.pci),
                    Undo::RemoveRouting => match &record.routing {
                        Some(plan) => rail::remove(&pod_nl, plan).await,
                        None => Ok(()),
                    },
                })
                .await;
            for f in failures {
                crate::log_error!("undo step failed: {f}");
            }
            Err(err)
        }
    }
}

enum Previous {
    Replay(CniResult),
    /// The old attachment was undone; the VF's host link, if found.
    Cleared(Option<Link>),
}

/// A record already exists for this VF: replay a finished ADD of the same
/// attachment, refuse a VF held by another live pod, else clear what is left.
async fn replay_or_clear(
    ctx: &Ctx,
    existing: &Record,
    home: &Home<'_>,
    pod_nl: &Netlink,
) -> Result<Previous> {
    let same = existing.is_for(&ctx.env.container_id, &ctx.env.ifname);
    if same && existing.phase == Phase::Attached {
        if let Some(v) = &existing.result {
            log_info!(
                "repeated ADD for {}/{}: returning the recorded result",
                existing.container_id,
                existing.ifname
            );
            return CniResult::from_value(v).map(Previous::Replay);
        }
    }
    if !same && existing.netns_alive() {
        return Err(Error::DeviceBusy(format!(
            "VF {} is attached to container {} as {} in live namespace {}; DEL that attachment first",
            existing.pci,
            existing.container_id,
            existing.ifname,
            existing.netns.as_deref().unwrap_or("?")
        )));
    }
    // Our own interrupted ADD, or a dead pod's record: bring the VF home first.
    log_warn!(
        "clearing {} record of VF {} (container {}, {})",
        if same { "an interrupted" } else { "a stale" },
        existing.pci,
        existing.container_id,
        existing.ifname
    );
    let pod = if same { Some(pod_nl) } else { None };
    if let (Some(nl), Some(plan)) = (pod, &existing.routing) {
        rail::remove(nl, plan).await?;
    }
    let link = home
        .bring_back(pod, &existing.ifname, Some(existing))
        .await?;
    if same {
        if let Some(ipam) = Ipam::new(&ctx.conf, &ctx.env) {
            ipam.del()?;
        }
    }
    ctx.store.remove(&existing.pci)?;
    Ok(Previous::Cleared(link))
}

/// Checks that need the system but change nothing.
async fn preflight(ctx: &Ctx, vf: &Vf, pod_nl: &Netlink) -> Result<()> {
    if let Some(pf_mtu) = ctx.sysfs.pf_mtu(vf) {
        if ctx.conf.mtu > pf_mtu {
            return Err(Error::config(
                "mtu",
                format!(
                    "{} is above the MTU {pf_mtu} of PF {} ({}); lower mtu or raise the PF's",
                    ctx.conf.mtu,
                    vf.pf_netdev.as_deref().unwrap_or("?"),
                    vf.pf_pci
                ),
            ));
        }
    }
    if pod_nl.link_by_name(&ctx.env.ifname).await?.is_some() {
        return Err(Error::InvalidEnv(format!(
            "CNI_IFNAME {} already exists in the pod namespace; each network needs its own interface name",
            ctx.env.ifname
        )));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn attach(
    ctx: &Ctx,
    vf: &Vf,
    link: &Link,
    pod: &NetNs,
    host_nl: &Netlink,
    pod_nl: &Netlink,
    record: &mut Record,
    journal: &mut Journal<Undo>,
) -> Result<CniResult> {
    let ifname = &ctx.env.ifname;
    ctx.store.save(record)?;
    journal.push(Undo::RemoveRecord);

    let mut result = match Ipam::new(&ctx.conf, &ctx.env) {
        Some(ipam) => {
            let r = ipam.add()?;
            journal.push(Undo::ReleaseIpam);
            r
        }
        None => CniResult::default(),
    };

    if !host_nl.move_to(link.index, pod, ifname).await? {
        return Err(Error::InvalidEnv(format!(
            "CNI_IFNAME {ifname} already exists in the pod namespace"
        )));
    }
    journal.push(Undo::ReturnVf);

    let moved = pod_nl.link_by_name(ifname).await?.ok_or_else(|| {
        Error::Netlink(format!("VF moved into the pod but {ifname} is not there"))
    })?;
    // The kernel renumbers a moved link whose ifindex is taken in the pod.
    record.pod_ifindex = Some(moved.index);
    ctx.store.save(record)?;
    if moved.mtu != ctx.conf.mtu {
        pod_nl.set_mtu(moved.index, ctx.conf.mtu).await?;
    }
    if let Some(mac) = ctx.conf.mac {
        pod_nl.set_mac(moved.index, &mac).await?;
    }
    pod_nl.set_up(moved.index).await?;
    for ip in &mut result.ips {
        pod_nl.add_address(moved.index, ip.address).await?;
        ip.interface = Some(0);
    }

    let used = match (&ctx.conf.routing.table, ifname.strip_prefix("net")) {
        (None, None) => rail::used_tables(pod_nl).await?,
        _ => Vec::new(),
    };
    let (table, priority) = routing::choose_table(ifname, &ctx.conf.routing, &used)?;
    let plan = routing::plan(&result, &ctx.conf.routing, table, priority);
    // Recorded before the first rule exists: rules outlive the VF, DEL needs this.
    record.routing = Some(plan.clone());
    ctx.store.save(record)?;
    journal.push(Undo::RemoveRouting);
    rail::install(pod, pod_nl, ifname, moved.index, &plan).await?;
    result.routes = plan.result_routes();

    let now = pod_nl.link_by_index(moved.index).await?.unwrap_or(moved);
    result.interfaces = vec![Interface {
        name: ifname.clone(),
        mac: Some(format_mac(&now.mac)),
        mtu: Some(now.mtu),
        sandbox: ctx.env.netns.as_ref().map(|p| p.display().to_string()),
        pci_id: Some(vf.pci.clone()),
    }];
    record.phase = Phase::Attached;
    record.result = Some(
        serde_json::to_value(&result)
            .map_err(|e| Error::Internal(format!("encode result: {e}")))?,
    );
    ctx.store.save(record)?;
    Ok(result)
}
