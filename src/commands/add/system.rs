//! ADD's steps on the real system (see `steps` for the order), and the
//! preparation before them: the VF's host link and the checks that need
//! the system but change nothing.

use base::liveness::{Held, NsId, Proof};
use cni::{CniResult, Interface};

use super::intent::Intent;
use super::rdma::{self, Gids, RdmaPlan};
use super::steps::{AttachSteps, Undo};
use crate::attachment::detach::{detach, still_held, Attachment, Pod};
use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::log_info;
use crate::net::mac::format_hw_addr;
use crate::net::{Arrival, Link, Mac, NetNs, Netlink};
use crate::rdma_qos::{self, Moment, QosRecord};
use crate::routing;
use crate::routing::apply::{self as rail, InUse};
use crate::routing::devconf;
use crate::state::{HostLink, Phase, Record};
use crate::vf::home::find_in_host;
use crate::vf::ipoib;
use crate::vf::settings::{self, VfSettings};

/// The sockets one ADD works through.
pub struct Sockets<'a> {
    pub pod: &'a NetNs,
    pub pod_nl: &'a Netlink,
    pub host_nl: &'a Netlink,
}

impl Sockets<'_> {
    /// The pod's namespace as ADD holds it: its inode and its cookie (read
    /// from the pod's socket: one getsockopt), what the record and the
    /// lease name it by.
    fn pod_held(&self) -> Held {
        Held {
            id: self.pod.id(),
            cookie: self.pod_nl.netns_cookie(),
        }
    }
}

pub struct KernelAttach<'a> {
    ctx: &'a Ctx,
    intent: &'a Intent<'a>,
    sockets: Sockets<'a>,
    /// The VF's netdev on the host (`None`: DPDK).
    link: Option<Link>,
    /// What ADD does with the VF's RDMA device.
    rdma: RdmaPlan,
    /// Each address's RoCE v2 GID index, once `wait_for_gids` found them.
    gids: Gids,
    /// The pod's rules and tables, read once when the table is chosen.
    in_use: Option<InUse>,
    /// The netdev once it is in the pod, as the kernel read it back right
    /// after the move (with the MTU, MAC and IPv4 settings the move set).
    moved: Option<Link>,
    /// Held from an InfiniBand VF's rebind until its RDMA device has moved
    /// (`AttachmentStore::lock_rebinds`).
    rebinding: Option<crate::state::VfLock>,
    record: Record,
}

impl<'a> KernelAttach<'a> {
    /// railcni's additions beside pciID (1.1 results only): the RDMA
    /// device, an InfiniBand VF's GUID and P_Key, and what an RDMA launcher
    /// needs: the GID of the first address (IPv4 first, as IPAM orders
    /// them) and the classes set.
    fn result_extras(&self) -> Vec<(String, serde_json::Value)> {
        let ctx = self.ctx;
        let infiniband = self.intent.vf.infiniband;
        let texts = [
            ("rdmaDevice", self.record.rdma_device.clone()),
            (
                "guid",
                (ctx.conf.vf.ib_guid().filter(|_| infiniband)).map(|g| g.to_string()),
            ),
            (
                "pkey",
                (ctx.conf.pkey.filter(|_| infiniband)).map(|k| format!("{k:#06x}")),
            ),
        ];
        let qos = self.rdma.qos.as_ref().map(|q| &q.record);
        let numbers = [
            ("gidIndex", self.gids.first_index()),
            (
                "trafficClass",
                qos.and_then(QosRecord::traffic_class).map(u32::from),
            ),
            ("tos", qos.and_then(QosRecord::tos).map(u32::from)),
        ];
        let texts = texts
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?.into())));
        let numbers = numbers
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?.into())));
        texts.chain(numbers).collect()
    }

    /// Find the VF's host link (`cleared`: as a cleared record left it) and
    /// run the checks that change nothing.
    pub fn prepare(
        ctx: &'a Ctx,
        intent: &'a Intent<'a>,
        sockets: Sockets<'a>,
        cleared: Option<Link>,
    ) -> Result<Self> {
        let vf = &intent.vf;
        let link = if vf.is_dpdk() {
            None
        } else {
            let link = match cleared {
                Some(link) => link,
                None => find_in_host(sockets.host_nl, &vf.pci, &vf.netdevs, None)
                    ?
                    .ok_or_else(|| {
                        Error::DeviceNotFound(format!(
                            "VF {} has no netdev in the host namespace (sysfs lists {:?}); is it attached elsewhere?",
                            vf.pci, vf.netdevs
                        ))
                    })?,
            };
            intent.validate_mtu()?;
            if sockets.pod_nl.link_by_name(&ctx.env.ifname)?.is_some() {
                return Err(Error::invalid_env(format!(
                    "CNI_IFNAME {} already exists in the pod namespace; each network needs its own interface name",
                    ctx.env.ifname
                )));
            }
            Some(link)
        };
        let rdma = RdmaPlan::prepare(ctx, intent, link.is_some())?;
        let mut record = new_record(ctx, intent, link.as_ref(), sockets.pod_held());
        record.rdma_port = rdma.port;
        record.rdma_shared = rdma.shared();
        Ok(KernelAttach {
            ctx,
            intent,
            sockets,
            link,
            rdma,
            gids: Gids::default(),
            in_use: None,
            moved: None,
            rebinding: None,
            record,
        })
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The first address's RoCE v2 GID index, when ADD waited for it.
    pub fn gid_index(&self) -> Option<u32> {
        self.gids.first_index()
    }

    /// The moved VF, as the rail checks name and reach it.
    fn rail(&self) -> Result<crate::probe::MovedVf<'_>> {
        let moved = self.moved()?;
        let mac = self.ctx.conf.mac.or_else(|| Mac::from_slice(&moved.mac));
        Ok(crate::probe::MovedVf {
            network: &self.ctx.conf.name,
            ifname: &self.ctx.env.ifname,
            vf: &self.intent.vf.pci,
            ns: self.sockets.pod,
            ifindex: moved.index,
            mac: mac.ok_or_else(|| Error::internal("the VF has no Ethernet MAC"))?,
        })
    }

    /// The moved VF as the kernel holds it now.
    fn link_now(&self, index: u32) -> Result<Link> {
        let now = self.sockets.pod_nl.link_by_index(index)?;
        now.ok_or_else(|| {
            Error::DeviceVanished(format!(
                "{} vanished from the pod during ADD",
                self.ctx.env.ifname
            ))
        })
    }

    /// The plan's interface sysctls, split by how they are set: the move's
    /// message carries the IPv4 ones, bring-up writes the rest.
    fn sysctls(&self) -> devconf::Split<'_> {
        let plan = self.record.routing.as_ref();
        plan.map(|p| devconf::split(&p.sysctls)).unwrap_or_default()
    }

    fn has_ipv6(&self) -> bool {
        let plan = self.record.routing.as_ref();
        plan.is_some_and(|p| p.rules.iter().any(|r| r.src.addr().is_ipv6()))
    }

    /// Write what `rdmaQoS` sets at `moment` (the device's files as the
    /// host sees them then).
    fn write_qos(&self, moment: Moment) -> Result<()> {
        let Some(qos) = &self.rdma.qos else {
            return Ok(());
        };
        rdma_qos::apply(self.ctx.node.hw.as_ref(), &qos.at, &qos.record, moment)
    }

    /// Give the VF's netdev the config's MAC on the host; whether it changed.
    fn set_netdev_mac(&mut self) -> Result<bool> {
        let (Some(mac), Some(link)) = (self.ctx.conf.mac, self.link.as_mut()) else {
            return Ok(false);
        };
        if link.mac[..] == mac.0 {
            return Ok(false);
        }
        self.sockets
            .host_nl
            .set_mac(link.index, &mac.0)
            .map_err(|e| {
                let vf = &self.intent.vf;
                let (errno, said) = match e {
                    Error::Kernel { errno, said, .. } => (errno, said),
                    other => (nix::errno::Errno::EIO, Some(other.details())),
                };
                Error::Kernel {
                    what: format!(
                        "VF {} ({}) refused its MAC {mac}; if its PF {} holds an admin MAC for it \
                         (`ip link show {}` shows `vf {}` with a MAC), clear it with \
                         `ip link set {} vf {} mac 00:00:00:00:00:00` or set trust on",
                        vf.pci,
                        link.name,
                        vf.pf_netdev.as_deref().unwrap_or("?"),
                        vf.pf_netdev.as_deref().unwrap_or("?"),
                        vf.index,
                        vf.pf_netdev.as_deref().unwrap_or("?"),
                        vf.index
                    ),
                    errno,
                    said,
                }
            })?;
        link.mac = mac.0.to_vec();
        Ok(true)
    }

    /// Before the move: the netdev's MAC as the record saved it.
    fn restore_netdev_mac(&self) -> Result<()> {
        match (&self.link, self.record.host.mac) {
            (Some(link), Some(mac)) if self.moved.is_none() && link.mac[..] != mac.0 => {
                self.sockets.host_nl.set_mac(link.index, &mac.0)
            }
            _ => Ok(()),
        }
    }

    fn moved(&self) -> Result<&Link> {
        self.moved
            .as_ref()
            .ok_or_else(|| Error::internal("the VF has not been moved"))
    }

    /// An InfiniBand VF in exclusive mode, in the order the kernel needs:
    /// its IPoIB netdev is a client of its RDMA device, and moving the
    /// device unregisters the netdev and registers a new one (in the pod
    /// since the 2025 kernels, in the host before). So the device moves
    /// first, found by the VF's PCI address now (a GUID's rebind may have
    /// renamed it: the record follows), then the netdev is found by the
    /// VF's PCI address wherever it is, moved if it is still on the host,
    /// and named `CNI_IFNAME` with its MTU (ib-sriov-cni's order).
    fn move_in_infiniband(&mut self) -> Result<()> {
        self.move_rdma_by_pci()?;
        let (ctx, vf) = (self.ctx, &self.intent.vf);
        let names = ctx.node.sysfs.netdevs(&vf.pci);
        let sides = ipoib::Sides {
            host_nl: self.sockets.host_nl,
            pod: self.sockets.pod,
            pod_nl: self.sockets.pod_nl,
        };
        let known = ipoib::Known {
            pci: &vf.pci,
            sysfs_names: &names,
            saved: Some(self.record.saved_vf()),
            index: self.link.as_ref().map(|l| l.index),
        };
        let arrival = |mtu: u32| Arrival {
            mtu: (mtu != self.intent.mtu).then_some(self.intent.mtu),
            inet: self.sysctls().inet,
        };
        let placed = ipoib::place(&sides, &known, &ctx.env.ifname, arrival)?;
        self.note_moved(placed)
    }

    /// The VF's RDMA device, named now by the VF's PCI address (a GUID's
    /// rebind may have registered it under another name, and udev may
    /// rename it just after: the record follows), moved into the pod; its
    /// name. A name that vanished between the read and the move is read
    /// again, a few times.
    fn move_rdma_by_pci(&mut self) -> Result<String> {
        let (ctx, pod) = (self.ctx, self.sockets.pod);
        let pci = self.intent.vf.pci.clone();
        let moved = (ctx.node).move_rdma_device_of(&pci, pod.fd(), |d| self.note_rdma_device(d))?;
        let device = moved.ok_or_else(|| {
            Error::DeviceNotFound(format!(
                "InfiniBand VF {pci} has no RDMA device in sysfs after its rebind"
            ))
        })?;
        // Named and moved: another rebind may start.
        self.rebinding = None;
        Ok(device)
    }

    /// The record names the RDMA device `device` as the VF's.
    fn note_rdma_device(&mut self, device: &str) -> Result<()> {
        if self.record.rdma_device.as_deref() == Some(device) {
            return Ok(());
        }
        log_info!(
            "VF {}'s RDMA device is {device} now (it was {:?})",
            self.intent.vf.pci,
            self.record
                .rdma_device
                .as_ref()
                .or(self.rdma.moves.as_ref())
        );
        self.record.rdma_device = Some(device.to_string());
        self.ctx.node.store.save(&self.record)
    }

    /// The VF as it arrived in the pod under `CNI_IFNAME`; `placed`: the
    /// kernel took the name (false: it is taken there, and nothing moved).
    fn note_moved(&mut self, placed: bool) -> Result<()> {
        let ifname = &self.ctx.env.ifname;
        if !placed {
            return Err(Error::invalid_env(format!(
                "CNI_IFNAME {ifname} already exists in the pod namespace"
            )));
        }
        let moved = self.sockets.pod_nl.link_by_name(ifname)?;
        let moved = moved.ok_or_else(|| {
            Error::DeviceVanished(format!("VF moved into the pod but {ifname} is not there"))
        })?;
        // The kernel renumbers a moved link whose ifindex is taken in the pod;
        // kept with the final record write (until then DEL knows the VF by
        // its host ifindex or MAC).
        self.record.pod_ifindex = Some(moved.index);
        self.moved = Some(moved);
        Ok(())
    }

    /// The table is chosen against what the pod holds now (the VF adds no
    /// rule), so the whole plan goes into the record written before the move:
    /// rules outlive the VF, and DEL needs the plan to remove them.
    fn plan_routing(&mut self, ipam: &CniResult) -> Result<()> {
        let conf = &self.ctx.conf.routing;
        if conf.table.is_none() {
            self.in_use = Some(InUse::read(self.sockets.pod_nl)?);
        }
        let ours: Vec<_> = ipam.ips.iter().map(|ip| ip.address.addr()).collect();
        let used = self
            .in_use
            .as_ref()
            .map(|u| u.except(&ours))
            .unwrap_or_default();
        let (table, priority) = routing::choose_table(&self.ctx.env.ifname, conf, &used);
        self.record.routing = Some(routing::plan(ipam, conf, table, priority));
        Ok(())
    }
}

impl AttachSteps for KernelAttach<'_> {
    fn moves(&self) -> bool {
        self.link.is_some()
    }

    fn sets_vf(&self) -> bool {
        !self.ctx.conf.vf.is_empty()
    }

    fn sets_traffic_class(&self) -> bool {
        (self.rdma.qos.as_ref()).is_some_and(|q| q.record.writes_before_move())
    }

    fn lease(&mut self) -> Result<CniResult> {
        match self.ctx.ipam() {
            Some(ipam) => {
                self.record.external_ipam = ipam.external()?;
                let node = &self.ctx.node;
                let network = &self.ctx.conf.name;
                ipam.add(self.sockets.pod_held(), &|c, i| {
                    still_held(node, network, c, i)
                })
            }
            None => Ok(CniResult::default()),
        }
    }

    /// The PF's current VF settings and the routing plan, then the record,
    /// written before the first host change: a railcni killed anywhere after
    /// leaves a record DEL can finish from.
    fn record(&mut self, ipam: &CniResult) -> Result<()> {
        let (ctx, vf) = (self.ctx, &self.intent.vf);
        if self.sets_vf() {
            let current =
                VfSettings::from_attrs(ctx.node.hw.vf_state(settings::pf_netdev(vf)?, vf.index)?);
            let netdev_mac = self.link.as_ref().map_or(&[][..], |l| &l.mac[..]);
            self.record.vf_restore = Some(settings::originals(&ctx.conf.vf, &current, netdev_mac));
            self.record.vf_applied = Some(ctx.conf.vf.clone());
        }
        if self.moves() {
            self.plan_routing(ipam)?;
            self.record.rdma_device = self.rdma.moves.clone();
        }
        self.record.rdma_qos = self.rdma.qos.as_ref().map(|q| q.record.clone());
        ctx.node.store.save(&self.record)
    }

    /// The netdev's own MAC first (on the host, while the PF holds no admin
    /// MAC for it, which an untrusted igb VF needs), then the PF-side
    /// settings one by one. A refusal leaves nothing changed.
    fn set_vf(&mut self) -> Result<()> {
        if self.intent.rebinds(self.ctx) {
            self.rebinding = Some(self.ctx.node.store.lock_rebinds()?);
        }
        let node = &self.ctx.node;
        let vf = &self.intent.vf;
        let mac_changed = self.set_netdev_mac()?;
        let originals = self.record.vf_restore.clone().unwrap_or_default();
        let applied = settings::apply(
            node.hw.as_ref(),
            &node.sysfs,
            vf,
            &self.ctx.conf.vf,
            &originals,
            node.settings.rebind_timeout,
        );
        if applied.is_err() && mac_changed {
            if let Err(e) = self.restore_netdev_mac() {
                crate::log_error!("restoring VF {}'s MAC failed: {}", vf.pci, e.details());
            }
        }
        applied
    }

    fn set_traffic_class(&mut self) -> Result<()> {
        self.write_qos(Moment::OnHost)
    }

    fn move_in(&mut self) -> Result<()> {
        if self.intent.vf.infiniband && self.rdma.moves.is_some() {
            return self.move_in_infiniband();
        }
        let (ctx, vf) = (self.ctx, &self.intent.vf);
        let ifname = &ctx.env.ifname;
        let link = if self.intent.rebinds(ctx) {
            // The rebind gave the VF a new netdev: find it again.
            let names = ctx.node.sysfs.netdevs(&vf.pci);
            find_in_host(
                self.sockets.host_nl,
                &vf.pci,
                &names,
                Some(self.record.saved_vf()),
            )?
            .ok_or_else(|| {
                Error::DeviceNotFound(format!(
                    "VF {} has no netdev in the host namespace after its driver was rebound",
                    vf.pci
                ))
            })?
        } else {
            self.link
                .clone()
                .ok_or_else(|| Error::internal("no host link to move"))?
        };
        // The MTU and IPv4 settings ride in the move's own message (the MAC
        // was set on the host: see `Arrival`).
        let arrival = Arrival {
            mtu: (link.mtu != self.intent.mtu).then_some(self.intent.mtu),
            inet: self.sysctls().inet,
        };
        let placed =
            (self.sockets.host_nl).move_to(link.index, self.sockets.pod, ifname, &arrival)?;
        self.note_moved(placed)
    }

    fn bring_up(&mut self) -> Result<()> {
        let (ctx, nl) = (self.ctx, self.sockets.pod_nl);
        let moved = self.moved()?;
        // An InfiniBand VF's device went first (`move_in_infiniband`).
        if let Some(dev) = self
            .rdma
            .moves
            .as_ref()
            .filter(|_| !self.intent.vf.infiniband)
        {
            (ctx.node.hw).move_rdma_device(dev, &ctx.node.host, self.sockets.pod.fd())?;
        }
        // rdma_cm forgot any earlier value when the device moved;
        // configfs finds it by name from any namespace.
        self.write_qos(Moment::AfterMove)?;
        let files = self.sysctls().files;
        if !files.is_empty() {
            rail::write_sysctls(
                self.sockets.pod,
                &ctx.node.settings.proc_sys_net,
                &ctx.env.ifname,
                &files,
            )?;
        }
        nl.set_up(moved.index)
    }

    fn probe_addresses(&mut self, result: &CniResult) -> Result<()> {
        // Off: no rail to build (an InfiniBand VF has no Ethernet MAC for ARP).
        if self.ctx.conf.probes.address_conflict == crate::probe::Mode::Off {
            return Ok(());
        }
        crate::probe::address_conflict(&self.ctx.conf.probes, &self.rail()?, &result.ips)
    }

    fn address(&mut self, result: &mut CniResult) -> Result<()> {
        let (nl, moved) = (self.sockets.pod_nl, self.moved()?);
        for ip in &mut result.ips {
            nl.add_address(moved.index, ip.address)?;
            ip.interface = Some(0);
        }
        Ok(())
    }

    fn route(&mut self, result: &mut CniResult) -> Result<()> {
        let index = self.moved()?.index;
        // Cloned, not taken: a rollback from here needs the plan in the record.
        let mut plan = self
            .record
            .routing
            .clone()
            .ok_or_else(|| Error::internal("the routing plan was not recorded"))?;
        let left_out = rail::install(
            self.sockets.pod_nl,
            &self.ctx.env.ifname,
            index,
            &plan,
            self.in_use.as_ref(),
        )?;
        plan.routes.retain(|r| !left_out.contains(r));
        result.routes = plan.result_routes();
        self.record.routing = Some(plan);
        Ok(())
    }

    fn probe_gateways(&mut self, result: &CniResult) -> Result<()> {
        if self.ctx.conf.probes.gateway == crate::probe::Mode::Off {
            return Ok(());
        }
        crate::probe::gateway(&self.ctx.conf.probes, &self.rail()?, &result.ips)
    }

    fn wait_for_gids(&mut self, result: &CniResult) -> Result<()> {
        let pod = self.sockets.pod;
        self.gids = rdma::wait_for_gids(self.ctx, pod, self.intent, &self.rdma, result)?;
        let moved = self.record.rdma_device.as_deref();
        rdma::wait_for_ib_port(self.ctx, pod, self.intent, &self.rdma, moved)
    }

    /// The interface as the kernel confirms it (a DPDK VF: its PCI address).
    fn report(&mut self, result: &mut CniResult) -> Result<()> {
        let ctx = self.ctx;
        let mut iface = Interface {
            name: ctx.env.ifname.clone(),
            sandbox: ctx.env.netns.as_ref().map(|p| p.display().to_string()),
            pci_id: Some(self.intent.vf.pci.clone()),
            ..Interface::default()
        };
        match &self.moved {
            Some(moved) => {
                // An IPv6 rail reads its link again, last: its link-local
                // address leaves the kernel's (disabled) duplicate detection
                // in a work item after the link-up, and an ADD that returned
                // sooner was seen to leave it tentative (docs/architecture.md).
                let now = if self.has_ipv6() {
                    self.link_now(moved.index)?
                } else {
                    moved.clone()
                };
                iface.mac = Some(format_hw_addr(&now.mac));
                iface.mtu = Some(now.mtu);
                iface.extra.extend(self.result_extras());
            }
            None => {
                for ip in &mut result.ips {
                    ip.interface = Some(0);
                }
                log_info!(
                    "VF {} is bound to {} (DPDK): addressed, not moved",
                    self.intent.vf.pci,
                    self.intent.vf.driver.as_deref().unwrap_or("?")
                );
            }
        }
        result.interfaces = vec![iface];
        Ok(())
    }

    /// Mark the record attached, with the result to replay. A railcni
    /// killed before this write leaves the "adding" record, which says more,
    /// not less (DEL and a retried ADD handle it).
    fn finish(&mut self, result: &CniResult) -> Result<()> {
        // A namespace deleted while ADD ran (it waited for a lock, say)
        // must not be answered as attached: the runtime has no pod there.
        let path = self.intent.netns;
        if NsId::of(path) != self.sockets.pod.id() {
            return Err(Error::container_unknown(format!(
                "the pod's network namespace {} went away while ADD ran; nothing is left attached",
                path.display()
            )));
        }
        self.record.phase = Phase::Attached;
        self.record.result = Some(result.clone());
        self.ctx.node.store.save(&self.record)
    }

    fn undo(&mut self, step: Undo) -> Result<()> {
        let (ctx, node) = (self.ctx, &self.ctx.node);
        match step {
            Undo::Detach => {
                // Detach takes the node's rebind lock for a GUID's restore:
                // held here still (a failure before the device moved), it
                // would wait for itself.
                self.rebinding = None;
                let attachment = Attachment::of(&self.record);
                // Fresh sockets: the failure may have been the socket's.
                detach(
                    node,
                    &attachment,
                    &ctx.release(),
                    Pod::Open(self.sockets.pod),
                )
            }
            Undo::ReleaseLease => ctx.ipam().map_or(Ok(()), |i| {
                i.release(&ctx.env.container_id, &ctx.env.ifname)
            }),
            Undo::RestoreVfSettings => {
                // Detach's order: admin MAC, the netdev's MAC, the rest.
                let vf = &self.intent.vf;
                let admin = settings::restore_admin_mac(
                    node.hw.as_ref(),
                    vf,
                    self.record.vf_restore.as_ref(),
                );
                let mac = self.restore_netdev_mac();
                let rest = settings::restore(
                    node.hw.as_ref(),
                    &node.sysfs,
                    vf,
                    self.record.vf_restore.as_ref(),
                    node.settings.rebind_timeout,
                );
                admin.and(mac).and(rest)
            }
            // Before the move (after it, the undo is a detach).
            Undo::RestoreRdmaQos => match &self.rdma.qos {
                Some(q) => rdma_qos::restore(node.hw.as_ref(), &q.at, &q.record),
                None => Ok(()),
            },
            Undo::RemoveRecord => node.store.remove(&self.intent.vf.pci),
        }
    }
}

fn new_record(ctx: &Ctx, intent: &Intent<'_>, link: Option<&Link>, pod: Held) -> Record {
    let vf = &intent.vf;
    let host = match link {
        Some(link) => HostLink {
            name: link.name.clone(),
            mac: Mac::from_slice(&link.mac),
            mtu: link.mtu,
            ifindex: link.index,
            up: Some(link.up),
        },
        None => HostLink {
            name: String::new(),
            mac: None,
            mtu: 0,
            ifindex: 0,
            up: None,
        },
    };
    // The identity of the namespace ADD holds open, not what the path names.
    let proof = Proof::held(Some(intent.netns), pod, ctx.node.settings.boot_id());
    let env = &ctx.env;
    let mut record = Record::new(
        &vf.pci,
        &ctx.conf.name,
        &env.container_id,
        &env.ifname,
        proof,
        host,
    );
    record.ipam_type = ctx.conf.ipam.as_ref().map(|i| i.plugin.clone());
    record.pod = env.args.pod();
    record.pkey = vf.infiniband.then_some(ctx.conf.pkey).flatten();
    record.dpdk = link.is_none();
    record.whole_nic = vf.whole;
    record
}
