//! ADD: move the VF into the pod as CNI_IFNAME, configure it, address it.
//! A DPDK VF (no netdev) only gets its PF-side settings and an address.

use cni::liveness::Proof;
use cni::{CniResult, Interface};

use super::detach::{detach, pf_netdev, restore_vf_settings, Attachment};
use super::home::{find_in_host, Home};
use super::rail;
use super::Ctx;
use crate::config::RdmaPolicy;
use crate::devinfo;
use crate::error::{Error, Result};
use crate::hw::{Hardware, RdmaNetnsMode};
use crate::journal::Journal;
use crate::net::mac::format_hw_addr;
use crate::net::{Link, Mac, NetNs, Netlink};
use crate::routing;
use crate::sriov::Vf;
use crate::state::{HostLink, Phase, Record};
use crate::{log_info, log_warn};

/// How to undo each host change ADD makes. Once the VF has moved, `Detach`
/// gives everything back the way DEL does, so it replaces the earlier steps.
enum Undo {
    RemoveRecord,
    RestoreVfSettings,
    ReleaseIpam,
    Detach,
}

/// Everything one ADD works with; `undo` reverses a step from it.
struct Attach<'a> {
    ctx: &'a Ctx,
    vf: &'a Vf,
    hw: &'a dyn Hardware,
    pod: &'a NetNs,
    pod_nl: &'a Netlink,
    home: Home<'a>,
    /// The MTU the VF gets in the pod: `mtu`, or for an InfiniBand VF
    /// without one the PF's (IPoIB MTUs are 2044/4092/65520, never 9000).
    mtu: u32,
    /// The PF's MTU (read once), the ceiling for the VF's.
    pf_mtu: Option<u32>,
}

pub async fn add(ctx: &Ctx) -> Result<CniResult> {
    let vf = ctx.sysfs.resolve(ctx.conf.require_device_id()?)?;
    check_link_type(ctx, &vf)?;
    let hw = ctx.hw.as_ref();
    let _lock = ctx.store.lock_vf(&vf.pci)?;
    let netns_path = ctx
        .env
        .netns
        .as_deref()
        .ok_or_else(|| Error::invalid_env("CNI_NETNS is required for ADD"))?;
    let pod = NetNs::open(netns_path)?;
    let host_nl = Netlink::connect_in(&ctx.host)?;
    let pod_nl = Netlink::connect_in(&pod)?;
    let pf_mtu = ctx.sysfs.pf_mtu(&vf);
    let a = Attach {
        ctx,
        vf: &vf,
        hw,
        pod: &pod,
        pod_nl: &pod_nl,
        home: Home {
            host: &ctx.host,
            host_nl: &host_nl,
            pci: &vf.pci,
            sysfs_names: &vf.netdevs,
        },
        mtu: match (vf.infiniband && !ctx.conf.mtu_given, pf_mtu) {
            (true, Some(pf)) => pf,
            _ => ctx.conf.mtu,
        },
        pf_mtu,
    };

    let cleared = match ctx.store.load(&vf.pci)? {
        Some(existing) => match replay_or_clear(&a, &existing).await? {
            Previous::Replay(result) => return Ok(result),
            Previous::Cleared(link) => link,
        },
        None => None,
    };

    let mut journal = Journal::default();
    let (record, outcome) = if vf.is_dpdk() {
        let mut record = new_record(
            ctx,
            &vf,
            HostLink {
                name: String::new(),
                mac: None,
                mtu: 0,
                ifindex: 0,
            },
        );
        record.dpdk = true;
        let outcome = a.attach_dpdk(&mut record, &mut journal).await;
        (record, outcome)
    } else {
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
        let rdma = a.preflight().await?;
        let host = HostLink {
            name: link.name.clone(),
            mac: Mac::from_slice(&link.mac),
            mtu: link.mtu,
            ifindex: link.index,
        };
        let mut record = new_record(ctx, &vf, host);
        let outcome = a
            .attach_netdev(&link, rdma, &mut record, &mut journal)
            .await;
        (record, outcome)
    };

    match outcome {
        Ok(result) => {
            if let Some(path) = &ctx.conf.device_info_file {
                devinfo::write(
                    path,
                    &ctx.settings.devinfo_dir,
                    &vf,
                    record.rdma_device.as_deref(),
                    vf.infiniband.then_some(devinfo::Infiniband {
                        guid: ctx.conf.vf.ib_guid,
                        pkey: ctx.conf.pkey,
                    }),
                );
            }
            log_info!(
                "attached VF {} as {} in {}: {}, table {}; {}",
                vf.pci,
                ctx.env.ifname,
                netns_path.display(),
                summary_addresses(&result),
                record
                    .routing
                    .as_ref()
                    .map_or_else(|| "none".to_string(), |p| p.table.to_string()),
                crate::timing::summary()
            );
            Ok(result)
        }
        Err(err) => {
            log_warn!("ADD failed ({err}); undoing");
            let failures = journal
                .unwind(async |step| a.undo(step, &record).await)
                .await;
            for f in failures {
                crate::log_error!("undo step failed: {f}");
            }
            Err(err)
        }
    }
}

fn new_record(ctx: &Ctx, vf: &Vf, host: HostLink) -> Record {
    let mut record = Record::new(
        &vf.pci,
        &ctx.conf.name,
        &ctx.env.container_id,
        &ctx.env.ifname,
        Proof::now(ctx.env.netns.as_deref(), ctx.settings.boot_id()),
        host,
    );
    record.ipam_type = ctx.conf.ipam.as_ref().map(|i| i.kind.clone());
    record.pod = ctx.env.args.pod();
    record.pkey = vf.infiniband.then_some(ctx.conf.pkey).flatten();
    record
}

/// Fields that do not apply to the VF's link type are refused, naming them.
fn check_link_type(ctx: &Ctx, vf: &Vf) -> Result<()> {
    if vf.infiniband {
        if let Some(field) = ctx.conf.ethernet_fields.first() {
            return Err(Error::config(
                field,
                format!(
                    "VF {} is an InfiniBand VF, which has no Ethernet MAC, VLAN or spoof check; remove {field}",
                    vf.pci
                ),
            ));
        }
        match ctx.conf.vf.ib_guid {
            Some(g) => log_info!("setting GUID {g} on InfiniBand VF {}", vf.pci),
            None => log_info!(
                "no GUID given: leaving InfiniBand VF {}'s GUID as it is",
                vf.pci
            ),
        }
    } else if ctx.conf.vf.ib_guid.is_some() {
        return Err(Error::config(
            "guid",
            format!(
                "VF {} is an Ethernet VF; a GUID applies to InfiniBand VFs only",
                vf.pci
            ),
        ));
    }
    Ok(())
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

enum Previous {
    Replay(CniResult),
    /// The old attachment was undone; the VF's host link, if found.
    Cleared(Option<Link>),
}

/// What to do about a record that already exists for the VF.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// The same attachment finished: return its result again.
    Replay,
    /// Another attachment in a live namespace holds the VF.
    Busy,
    /// Our own interrupted ADD (`same`) or a dead pod's: give it back first.
    Clear { same: bool },
}

fn judge(existing: &Record, container_id: &str, ifname: &str, netns_alive: bool) -> Verdict {
    let same = existing.is_for(container_id, ifname);
    if same && existing.phase == Phase::Attached && existing.result.is_some() {
        Verdict::Replay
    } else if !same && netns_alive {
        Verdict::Busy
    } else {
        Verdict::Clear { same }
    }
}

/// A record already exists for this VF: replay a finished ADD of the same
/// attachment, refuse a VF held by another live pod, else clear what is left.
async fn replay_or_clear(a: &Attach<'_>, existing: &Record) -> Result<Previous> {
    let ctx = a.ctx;
    let verdict = judge(
        existing,
        &ctx.env.container_id,
        &ctx.env.ifname,
        existing.netns_alive(ctx.settings.boot_id().as_deref()),
    );
    let same = match verdict {
        Verdict::Replay => {
            log_info!(
                "repeated ADD for {}/{}: returning the recorded result",
                existing.container_id,
                existing.ifname
            );
            let recorded = existing.result.as_ref().unwrap_or(&serde_json::Value::Null);
            return Ok(Previous::Replay(CniResult::from_value(recorded)?));
        }
        Verdict::Clear { same } => same,
        Verdict::Busy => return Err(Error::DeviceBusy(format!(
            "VF {} is attached to container {} as {} in live namespace {}; DEL that attachment first",
            existing.pci,
            existing.container_id,
            existing.ifname,
            existing.netns().unwrap_or("?")
        ))),
    };
    // Our own interrupted ADD, or a dead pod's record: give it all back first.
    log_warn!(
        "clearing {} record of VF {} (container {}, {})",
        if same { "an interrupted" } else { "a stale" },
        existing.pci,
        existing.container_id,
        existing.ifname
    );
    let (netns, pod_nl) = if same {
        (ctx.env.netns.as_deref(), Some(a.pod_nl))
    } else {
        // Dead: never look inside whatever the path names now.
        (None, None)
    };
    detach(ctx, &Attachment::of(existing), netns, pod_nl).await?;
    if let Some(ipam) = ctx.ipam() {
        // A missed DEL rarely comes alone (a reboot, a kubelet restart).
        ipam.reclaim_dead()?;
    }
    if existing.dpdk {
        return Ok(Previous::Cleared(None));
    }
    let link = find_in_host(
        a.home.host_nl,
        &existing.pci,
        a.home.sysfs_names,
        Some(existing),
    )
    .await?;
    Ok(Previous::Cleared(link))
}

impl Attach<'_> {
    /// Checks that need the system but change nothing. Returns the RDMA
    /// device to move with the VF, if any.
    async fn preflight(&self) -> Result<Option<String>> {
        let (ctx, vf) = (self.ctx, self.vf);
        if let Some(pf_mtu) = self.pf_mtu {
            if self.mtu > pf_mtu {
                return Err(Error::config(
                    "mtu",
                    format!(
                        "{} is above the MTU {pf_mtu} of PF {} ({}); lower mtu or raise the PF's",
                        self.mtu,
                        vf.pf_netdev.as_deref().unwrap_or("?"),
                        vf.pf_pci
                    ),
                ));
            }
        }
        if self.pod_nl.link_by_name(&ctx.env.ifname).await?.is_some() {
            return Err(Error::invalid_env(format!(
                "CNI_IFNAME {} already exists in the pod namespace; each network needs its own interface name",
                ctx.env.ifname
            )));
        }
        self.rdma_to_move()
    }

    /// `rdma: auto` moves the VF's RDMA device when there is one and the
    /// subsystem is in exclusive netns mode, and logs otherwise; `required`
    /// fails instead of logging.
    fn rdma_to_move(&self) -> Result<Option<String>> {
        // InfiniBand rails are RDMA rails: without its device a VF is useless.
        let policy = if self.vf.infiniband && !self.ctx.conf.rdma_given {
            RdmaPolicy::Required
        } else {
            self.ctx.conf.rdma
        };
        if policy == RdmaPolicy::Off {
            return Ok(None);
        }
        let required = policy == RdmaPolicy::Required;
        let Some(dev) = self.vf.rdma_devices.first() else {
            if required {
                return Err(Error::UnsupportedDevice(format!(
                    "rdma is required but VF {} has no RDMA device (no infiniband/ entry in sysfs)",
                    self.vf.pci
                )));
            }
            log_info!(
                "VF {} has no RDMA device; attaching the netdev only",
                self.vf.pci
            );
            return Ok(None);
        };
        match self.hw.rdma_netns_mode() {
            Ok(RdmaNetnsMode::Exclusive) => Ok(Some(dev.clone())),
            Ok(RdmaNetnsMode::Shared) if required => Err(Error::UnsupportedDevice(format!(
                "rdma is required but the RDMA subsystem is in shared netns mode, so {dev} cannot follow the VF; \
                 run `rdma system set netns exclusive` (ib_core netns_mode=0) or set rdma to auto"
            ))),
            Ok(RdmaNetnsMode::Shared) => {
                log_info!("RDMA netns mode is shared: {dev} stays visible everywhere, nothing to move");
                Ok(None)
            }
            Err(e) if required => Err(Error::UnsupportedDevice(format!(
                "rdma is required but the RDMA netns mode cannot be read ({}); load ib_core or set rdma to auto",
                e.details()
            ))),
            Err(e) => {
                log_warn!("cannot query the RDMA netns mode ({e}); not moving {dev}");
                Ok(None)
            }
        }
    }

    /// Steps every VF shares. The lease first (its own durable write),
    /// then the PF's current VF settings and whatever `plan` works out
    /// (routing, RDMA), then ONE durable record write holding all of it
    /// before the first host change, then the PF-side settings. A crash
    /// anywhere after leaves a record DEL can finish from.
    fn common(
        &self,
        record: &mut Record,
        journal: &mut Journal<Undo>,
        plan: impl FnOnce(&mut Record, &CniResult) -> Result<()>,
    ) -> Result<CniResult> {
        let (ctx, vf) = (self.ctx, self.vf);
        let result = match ctx.ipam() {
            Some(ipam) => {
                let r = ipam.add()?;
                journal.push(Undo::ReleaseIpam);
                r
            }
            None => CniResult::default(),
        };
        let pf_settings = if ctx.conf.vf.is_empty() {
            None
        } else {
            let pf = pf_netdev(vf)?;
            let current = self.hw.vf_state(pf, vf.index)?;
            record.vf_restore = Some(ctx.conf.vf.originals(&current));
            Some(pf)
        };
        plan(record, &result)?;
        ctx.store.save(record)?;
        journal.push(Undo::RemoveRecord);
        if let Some(pf) = pf_settings {
            journal.push(Undo::RestoreVfSettings);
            self.hw.set_vf(pf, vf.index, &ctx.conf.vf)?;
            if vf.infiniband && ctx.conf.vf.ib_guid.is_some() {
                // mlx5 applies a VF's GUID only when its driver binds again.
                ctx.sysfs.rebind(vf, ctx.settings.rebind_timeout)?;
            }
        }
        Ok(result)
    }

    async fn attach_dpdk(
        &self,
        record: &mut Record,
        journal: &mut Journal<Undo>,
    ) -> Result<CniResult> {
        let mut result = self.common(record, journal, |_, _| Ok(()))?;
        for ip in &mut result.ips {
            ip.interface = Some(0);
        }
        result.interfaces = vec![Interface {
            name: self.ctx.env.ifname.clone(),
            sandbox: self.ctx.env.netns.as_ref().map(|p| p.display().to_string()),
            pci_id: Some(self.vf.pci.clone()),
            ..Interface::default()
        }];
        log_info!(
            "VF {} is bound to {} (DPDK): addressed, not moved",
            self.vf.pci,
            self.vf.driver.as_deref().unwrap_or("?")
        );
        self.finish(record, &result)?;
        Ok(result)
    }

    async fn attach_netdev(
        &self,
        link: &Link,
        rdma: Option<String>,
        record: &mut Record,
        journal: &mut Journal<Undo>,
    ) -> Result<CniResult> {
        let (ctx, pod_nl) = (self.ctx, self.pod_nl);
        let ifname = &ctx.env.ifname;
        // The table is chosen against what the pod holds now (the VF adds no
        // rule), so the whole plan goes into the one durable record write:
        // rules outlive the VF, and DEL needs the plan to remove them.
        let in_use = match ctx.conf.routing.table {
            None => Some(rail::InUse::read(pod_nl).await?),
            Some(_) => None,
        };
        let mut result = self.common(record, journal, |record, result| {
            let ours: Vec<_> = result.ips.iter().map(|ip| ip.address.addr()).collect();
            let used = in_use.as_ref().map(|u| u.except(&ours)).unwrap_or_default();
            let (table, priority) = routing::choose_table(ifname, &ctx.conf.routing, &used);
            record.routing = Some(routing::plan(result, &ctx.conf.routing, table, priority));
            record.rdma_device = rdma.clone();
            Ok(())
        })?;

        // A rebind (InfiniBand GUID) gives the VF a new netdev: find it again.
        let link = if self.vf.infiniband && ctx.conf.vf.ib_guid.is_some() {
            let names = ctx.sysfs.netdevs(&self.vf.pci);
            find_in_host(self.home.host_nl, &self.vf.pci, &names, Some(record))
                .await?
                .ok_or_else(|| {
                    Error::DeviceNotFound(format!(
                        "VF {} has no netdev in the host namespace after its driver was rebound",
                        self.vf.pci
                    ))
                })?
        } else {
            link.clone()
        };
        // From here the undo is a full detach, even if the move seems to
        // fail: a move whose answer was lost may well have happened, and
        // detach looks for the VF wherever it is.
        journal.replace_all(Undo::Detach);
        if !self
            .home
            .host_nl
            .move_to(link.index, self.pod, ifname)
            .await?
        {
            return Err(Error::invalid_env(format!(
                "CNI_IFNAME {ifname} already exists in the pod namespace"
            )));
        }
        let moved = pod_nl.link_by_name(ifname).await?.ok_or_else(|| {
            Error::Netlink(format!("VF moved into the pod but {ifname} is not there"))
        })?;
        // The kernel renumbers a moved link whose ifindex is taken in the pod;
        // kept with the final record write (until then DEL knows the VF by
        // its host ifindex or MAC).
        record.pod_ifindex = Some(moved.index);

        if let Some(dev) = &rdma {
            self.hw.move_rdma_device(dev, self.pod.fd())?;
        }
        if moved.mtu != self.mtu {
            pod_nl.set_mtu(moved.index, self.mtu).await?;
        }
        if let Some(mac) = ctx.conf.mac {
            pod_nl.set_mac(moved.index, &mac.0).await?;
        }
        pod_nl.set_up(moved.index).await?;
        for ip in &mut result.ips {
            pod_nl.add_address(moved.index, ip.address).await?;
            ip.interface = Some(0);
        }
        // Cloned, not taken: a rollback from here needs the plan in the record.
        let mut plan = record
            .routing
            .clone()
            .ok_or_else(|| Error::internal("the routing plan was not recorded"))?;
        let left_out = rail::install(
            self.pod,
            pod_nl,
            ifname,
            moved.index,
            &plan,
            in_use.as_ref(),
        )
        .await?;
        plan.routes.retain(|r| !left_out.contains(r));
        result.routes = plan.result_routes();
        record.routing = Some(plan);

        // Report what the kernel confirms, not what was asked for.
        let now = pod_nl
            .link_by_index(moved.index)
            .await?
            .ok_or_else(|| Error::Netlink(format!("{ifname} vanished from the pod during ADD")))?;
        result.interfaces = vec![Interface {
            name: ifname.clone(),
            mac: Some(format_hw_addr(&now.mac)),
            mtu: Some(now.mtu),
            sandbox: ctx.env.netns.as_ref().map(|p| p.display().to_string()),
            pci_id: Some(self.vf.pci.clone()),
            rdma_device: record.rdma_device.clone(),
            guid: self
                .vf
                .infiniband
                .then(|| ctx.conf.vf.ib_guid.map(|g| g.to_string()))
                .flatten(),
            pkey: self
                .vf
                .infiniband
                .then(|| ctx.conf.pkey.map(|k| format!("{k:#06x}")))
                .flatten(),
        }];
        self.finish(record, &result)?;
        Ok(result)
    }

    /// Mark the record attached, with the result to replay. Not made durable:
    /// after a crash the durable "adding" record says more, not less (DEL
    /// and a retried ADD handle it), so this write needs no fsync.
    fn finish(&self, record: &mut Record, result: &CniResult) -> Result<()> {
        record.phase = Phase::Attached;
        record.result = Some(
            serde_json::to_value(result)
                .map_err(|e| Error::internal(format!("encode result: {e}")))?,
        );
        self.ctx.store.save_relaxed(record)
    }

    async fn undo(&self, step: Undo, record: &Record) -> Result<()> {
        let ctx = self.ctx;
        match step {
            Undo::Detach => {
                let attachment = Attachment::of(record);
                // Fresh sockets: the failure may have been the socket's.
                detach(ctx, &attachment, ctx.env.netns.as_deref(), None).await
            }
            Undo::ReleaseIpam => ctx.ipam().map_or(Ok(()), |i| {
                i.release(&ctx.env.container_id, &ctx.env.ifname)
            }),
            Undo::RestoreVfSettings => restore_vf_settings(ctx, self.vf, record),
            Undo::RemoveRecord => ctx.store.remove(&self.vf.pci),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(phase: Phase, result: bool) -> Record {
        let mut r = Record::sample();
        r.phase = phase;
        r.result = result.then(|| serde_json::json!({}));
        r
    }

    #[test]
    fn an_existing_record_is_replayed_refused_or_cleared() {
        let done = record(Phase::Attached, true);
        assert_eq!(judge(&done, "c1", "net1", true), Verdict::Replay);
        assert_eq!(judge(&done, "c2", "net1", true), Verdict::Busy);
        assert_eq!(
            judge(&done, "c2", "net1", false),
            Verdict::Clear { same: false },
            "a dead pod's record never blocks"
        );
        let interrupted = record(Phase::Adding, false);
        assert_eq!(
            judge(&interrupted, "c1", "net1", true),
            Verdict::Clear { same: true },
            "our own interrupted ADD is redone, not replayed"
        );
        assert_eq!(judge(&interrupted, "c1", "net2", true), Verdict::Busy);
    }
}
