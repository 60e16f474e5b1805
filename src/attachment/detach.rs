//! The one way an attachment is detached. DEL, GC, the clearing of a
//! stale record during ADD, ADD's rollback after the move and the
//! operator's `gc` all call `detach`, so they cannot drift apart.
//!
//! Every step runs even when an earlier one failed, and every failure is
//! reported with its own error. The lease is given up only when the VF is
//! really home, and the record only when every step succeeded: a later DEL
//! can then finish. The order lives in `detach_in_order`, over the small `DetachSteps`
//! trait, so it is unit-tested without root; `KernelDetach` is the real
//! implementation, on the node alone (no CNI request needed).

use std::path::Path;

use crate::error::{Error, Result, StepFailure};
use crate::ipam::NetworkIpam;
use crate::net::{Link, NetNs, Netlink};
use crate::node::Node;
use crate::state::Record;
use crate::vf::home::Home;
use crate::vf::{settings, Vf};
use crate::{log_info, log_warn};

/// What is being detached: the VF at `pci`, attached under the CNI key
/// (`container_id`, `ifname`), with its record when there is one.
pub struct Attachment<'a> {
    pub pci: &'a str,
    pub container_id: &'a str,
    pub ifname: &'a str,
    pub record: Option<&'a Record>,
}

impl<'a> Attachment<'a> {
    pub fn of(record: &'a Record) -> Self {
        Attachment {
            pci: &record.pci,
            container_id: &record.container_id,
            ifname: &record.ifname,
            record: Some(record),
        }
    }
}

/// Where the pod is, as far as the caller knows.
#[derive(Clone, Copy)]
pub enum Pod<'a> {
    /// Not known (the operator's `gc`, a dead pod's record): the namespace
    /// is looked for by the identity the record holds.
    Unknown,
    /// The runtime's path (CNI_NETNS); a path that is gone or no longer a
    /// namespace falls back to the record's identity.
    Path(&'a Path),
    /// A namespace the caller holds open (ADD's rollback).
    Open(&'a NetNs),
    /// A namespace the caller holds open, and a socket already open there.
    Socket(&'a NetNs, &'a Netlink),
}

impl<'a> Pod<'a> {
    /// Where the runtime says the pod is (`CNI_NETNS`, possibly empty). A
    /// path naming the plugin's own namespace is no pod: taken as none
    /// given, so the pod is looked for by the record's identity and nothing
    /// of the host's is removed as if it were the pod's. (ADD refuses it;
    /// DEL must still answer.)
    pub fn given(netns: Option<&'a Path>) -> Self {
        match netns {
            Some(path) if is_own_namespace(path) => {
                log_warn!(
                    "CNI_NETNS {} is the plugin's own network namespace, not a pod's: \
                     looking for the pod's namespace by the identity its record holds",
                    path.display()
                );
                Pod::Unknown
            }
            Some(path) => Pod::Path(path),
            None => Pod::Unknown,
        }
    }
}

/// Is `path` the namespace this process runs in? (A live namespace's inode
/// is its own while it lives, so the inode decides.)
fn is_own_namespace(path: &Path) -> bool {
    let own = base::liveness::NsId::of(Path::new("/proc/thread-self/ns/net"));
    own.is_some() && base::liveness::NsId::of(path) == own
}

/// How the attachment's address is released.
pub enum Release<'a> {
    /// Through this CNI call's IPAM when the record is of its network (DEL,
    /// GC, ADD's own rollback), else as the record says.
    Config(Option<NetworkIpam<'a>>),
    /// As the record says (the operator's `gc`, which has no network config).
    Recorded,
}

/// The operations a detach is made of.
pub trait DetachSteps {
    fn move_rdma_home(&mut self, device: &str) -> Result<()>;
    /// The RDMA device's traffic class and rdma_cm ToS, as ADD found them.
    fn restore_rdma_qos(&mut self, record: &Record) -> Result<()>;
    /// A socket in the pod: `Ok(false)` when its namespace cannot be reached.
    fn open_pod(&mut self) -> Result<bool>;
    fn remove_routing(&mut self, record: &Record) -> Result<()>;
    /// Bring the netdev home (name, MTU); its host link when found.
    fn move_vf_home(&mut self) -> Result<Option<Link>>;
    /// Found neither in the pod nor home: can a namespace railcni cannot
    /// reach still hold it? (A VF whose PCI device is gone, or with no
    /// netdev driver, has no netdev anywhere.)
    fn held_elsewhere(&mut self) -> bool;
    /// Clear (or restore) the PF-side MAC, so the VF may change its own.
    fn restore_admin_mac(&mut self, record: &Record) -> Result<()>;
    fn restore_mac(&mut self, link: &Link, record: &Record) -> Result<()>;
    /// The other PF-side settings (VLAN, spoof check, trust, rates, GUID).
    fn restore_vf_settings(&mut self, record: &Record) -> Result<()>;
    fn release_lease(&mut self) -> Result<()>;
    fn remove_record(&mut self) -> Result<()>;
}

/// What a detach left undone.
#[derive(Debug, Default)]
pub struct Left {
    pub failures: Vec<StepFailure>,
    /// The VF is in a namespace railcni cannot reach: its lease and record
    /// stay until it comes home (gc finishes it).
    pub held: bool,
}

/// Run every step in order; what was left. A VF that is not home keeps its
/// lease and record.
pub fn detach_in_order(steps: &mut impl DetachSteps, record: Option<&Record>) -> Left {
    let mut failures = Vec::new();
    if let Some(device) = record.and_then(|r| r.rdma_device.as_deref()) {
        note(
            &mut failures,
            "move RDMA device home",
            steps.move_rdma_home(device),
        );
    }
    // Once the device is home: the traffic class can be written only there,
    // and rdma_cm reset the ToS when it moved.
    if let Some(r) = record.filter(|r| r.rdma_qos.is_some()) {
        note(&mut failures, "restore RDMA QoS", steps.restore_rdma_qos(r));
    }
    let (vf_home, held, returned) = if record.is_some_and(|r| r.dpdk) {
        (true, false, None)
    } else {
        bring_home(steps, record, &mut failures)
    };
    // The drivers' order (vf::settings): admin MAC, the netdev's MAC, then
    // the rest, so `trust off` never comes before the MAC is back.
    if let Some(r) = record {
        note(
            &mut failures,
            "restore admin MAC",
            steps.restore_admin_mac(r),
        );
        if let Some(link) = &returned {
            note(&mut failures, "restore MAC", steps.restore_mac(link, r));
        }
        note(
            &mut failures,
            "restore VF settings",
            steps.restore_vf_settings(r),
        );
    }
    if vf_home {
        note(&mut failures, "release address", steps.release_lease());
    }
    // The record goes last and only when all went well: a DEL that failed
    // anywhere leaves it, so the next DEL runs every step again.
    if vf_home && failures.is_empty() && record.is_some() {
        note(&mut failures, "remove record", steps.remove_record());
    }
    Left { failures, held }
}

/// The netdev's part: rules and routes out of the pod, the VF home. Whether
/// it is home, whether a namespace out of reach holds it, its host link.
fn bring_home(
    steps: &mut impl DetachSteps,
    record: Option<&Record>,
    failures: &mut Vec<StepFailure>,
) -> (bool, bool, Option<Link>) {
    let pod = steps.open_pod();
    let reachable = matches!(pod, Ok(true));
    let opened = note(failures, "open pod namespace", pod.map(drop));
    if let (true, Some(r)) = (reachable, record.filter(|r| r.routing.is_some())) {
        note(
            failures,
            "remove rules and rail routes",
            steps.remove_routing(r),
        );
    }
    match steps.move_vf_home() {
        Ok(Some(link)) => (opened, false, Some(link)),
        // Without a record nothing says whose it would be.
        Ok(None) if record.is_some() && steps.held_elsewhere() => (false, true, None),
        Ok(None) => (opened, false, None),
        Err(e) => {
            note(failures, "move VF home", Err(e));
            (false, false, None)
        }
    }
}

/// Keep a step's failure; whether it succeeded.
fn note(failures: &mut Vec<StepFailure>, step: &'static str, r: Result<()>) -> bool {
    match r {
        Ok(()) => true,
        Err(error) => {
            failures.push(StepFailure { step, error });
            false
        }
    }
}

/// Give the attachment back (see `detach_in_order` for the order). `pod` is
/// where to look for the pod (a gone namespace is not an error). A VF held
/// by a namespace railcni cannot reach is `Error::HeldElsewhere`, its lease
/// and record kept: DEL answers it as done, the others wait for it.
pub fn detach(node: &Node, a: &Attachment<'_>, release: &Release<'_>, pod: Pod<'_>) -> Result<()> {
    let mut system = KernelDetach {
        node,
        a,
        release,
        pod,
        vf: node.sysfs.resolve_recorded(a.pci).ok(),
        opened_pod: None,
        found_ns: None,
        host_nl: None,
    };
    let left = detach_in_order(&mut system, a.record);
    let what = format!("VF {} ({}/{})", a.pci, a.container_id, a.ifname);
    for f in &left.failures {
        log_warn!("detaching {what}: {}: {}", f.step, f.error.details());
    }
    if !left.failures.is_empty() {
        return Err(Error::DetachIncomplete {
            what,
            failures: left.failures,
        });
    }
    if left.held {
        return Err(Error::HeldElsewhere(format!(
            "{what} is neither home nor in a namespace railcni can reach (its path is gone and no \
             process is in it); its address and record are kept until the VF comes home, when \
             the agent's gc (or `railcnictl gc --apply`) detaches it"
        )));
    }
    Ok(())
}

/// Who still holds the VF of an attachment whose namespace path is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// Nobody: the VF is home (or has no netdev anywhere).
    Nobody,
    /// A process is still in the pod's namespace, with the VF.
    Process(u32),
    /// The VF is in a namespace railcni cannot reach (held by an open
    /// descriptor or a bind mount elsewhere).
    OutOfReach,
}

/// Who holds `record`'s VF now, without changing anything (`status`).
pub fn holder_of(node: &Node, record: &Record) -> Result<Holder> {
    if record.dpdk {
        return Ok(Holder::Nobody);
    }
    if let Some((_, pid)) = super::identity::held_by_process(record) {
        return Ok(Holder::Process(pid));
    }
    let Ok(vf) = node.sysfs.resolve_recorded(&record.pci) else {
        return Ok(Holder::Nobody);
    };
    let host_nl = Netlink::connect_in(&node.host)?;
    let home =
        crate::vf::home::find_in_host(&host_nl, &record.pci, &vf.netdevs, Some(record.saved_vf()))?;
    Ok(if vf.has_netdev_driver() && home.is_none() {
        Holder::OutOfReach
    } else {
        Holder::Nobody
    })
}

/// Whether the lease of (`container_id`, `ifname`) on `network`, whose
/// holder's path is gone, is still held: an attachment record claims it
/// and its VF is not home. Such a lease goes with that record's detach,
/// never by reclaim. An unreadable store is taken as a claim.
pub fn still_held(node: &Node, network: &str, container_id: &str, ifname: &str) -> bool {
    let Ok(records) = node.store.list() else {
        return true;
    };
    records
        .iter()
        .filter(|r| r.network == network && r.is_for(container_id, ifname))
        .any(|r| holder_of(node, r).ok().is_none_or(|h| h != Holder::Nobody))
}

/// The steps on the real system.
struct KernelDetach<'a> {
    node: &'a Node,
    a: &'a Attachment<'a>,
    release: &'a Release<'a>,
    pod: Pod<'a>,
    vf: Option<Vf>,
    opened_pod: Option<Netlink>,
    /// The pod's namespace, when DEL opened it (by its path or identity).
    found_ns: Option<NetNs>,
    host_nl: Option<Netlink>,
}

impl KernelDetach<'_> {
    fn pod(&self) -> Option<&Netlink> {
        match self.pod {
            Pod::Socket(_, nl) => Some(nl),
            _ => self.opened_pod.as_ref(),
        }
    }

    /// The pod's namespace, once `find_pod_ns` looked for it.
    fn pod_ns(&self) -> Option<&NetNs> {
        match self.pod {
            Pod::Socket(ns, _) | Pod::Open(ns) => Some(ns),
            _ => self.found_ns.as_ref(),
        }
    }

    /// Open the pod's namespace: by the runtime's path, else (a path that
    /// is gone, or none) by the identity the record holds. Looked for once.
    fn find_pod_ns(&mut self) -> Result<()> {
        if self.pod_ns().is_some() {
            return Ok(());
        }
        let by_path = match self.pod {
            Pod::Path(path) => match NetNs::open(path) {
                Ok(ns) => Some(ns),
                Err(e) if e.code() == 3 => {
                    log_info!(
                        "{}; looking for the pod's namespace by its identity",
                        e.details()
                    );
                    None
                }
                Err(e) => return Err(e),
            },
            _ => None,
        };
        self.found_ns = by_path.or_else(|| self.find_by_identity());
        Ok(())
    }

    /// The VF's RDMA device is not in the pod: it is home already when the
    /// host's RDMA subsystem has it, found by the VF's PCI address (the
    /// kernel moved it to the host when the pod's namespace died, naming
    /// it `ibdev%d` if its name was taken there: rdma_dev_exit_net; or an
    /// earlier DEL moved it). A move to the host from the host is the
    /// kernel's no-op, and fails when the host has no such device.
    fn rdma_home_already(&self, device: &str, why: &str) -> Result<()> {
        let node = self.node;
        let listed = node.sysfs.rdma_devices(self.a.pci).into_iter().next();
        let name = listed.as_deref().unwrap_or(device);
        node.hw.move_rdma_device(name, &node.host, node.host.fd())?;
        log_info!(
            "RDMA device {name} of VF {} is on the host already ({why})",
            self.a.pci
        );
        Ok(())
    }

    /// The pod's namespace found by the identity the record holds: through
    /// the record's path while it still names it (inode and cookie), else
    /// through a process in a namespace `identity` confirms as the pod's
    /// (never across boots, never by its inode alone: inodes are reused).
    fn find_by_identity(&self) -> Option<NetNs> {
        let proof = &self.a.record?.proof;
        let boot = self.node.settings.boot_id();
        match proof.gone(boot.as_deref()) {
            Some(base::liveness::Gone::EarlierBoot) => return None,
            None => {
                let path = proof.netns.as_deref().map(Path::new);
                if let Some(ns) = path.and_then(|p| NetNs::open(p).ok()) {
                    if proof.netns_id.is_some() && ns.id() == proof.netns_id {
                        return Some(ns);
                    }
                }
            }
            Some(_) => {}
        }
        let (ns, pid) = super::identity::held_by_process(self.a.record?)?;
        log_info!(
            "found the pod's namespace of {}/{} by its identity: process {pid} is in it",
            self.a.container_id,
            self.a.ifname
        );
        Some(ns)
    }

    /// A host socket, opened on first use and kept.
    fn home(&mut self) -> Result<(Home<'_>, Option<&Netlink>)> {
        if self.host_nl.is_none() {
            self.host_nl = Some(Netlink::connect_in(&self.node.host)?);
        }
        let host_nl = self
            .host_nl
            .as_ref()
            .ok_or_else(|| Error::internal("host netlink socket missing"))?;
        let home = Home {
            host: &self.node.host,
            host_nl,
            pci: self.a.pci,
            sysfs_names: self.vf.as_ref().map_or(&[], |v| v.netdevs.as_slice()),
        };
        Ok((home, self.pod()))
    }
}

impl DetachSteps for KernelDetach<'_> {
    fn move_rdma_home(&mut self, device: &str) -> Result<()> {
        self.find_pod_ns()?;
        let node = self.node;
        // From inside the pod: only there does the kernel find it.
        let from_pod = match self.pod_ns() {
            Some(pod) => node.hw.move_rdma_device(device, pod, node.host.fd()),
            None => Err(Error::DeviceNotFound(
                "the pod's namespace is gone".to_string(),
            )),
        };
        match from_pod {
            Err(Error::DeviceNotFound(why)) => self.rdma_home_already(device, &why),
            other => other,
        }
    }

    fn restore_rdma_qos(&mut self, record: &Record) -> Result<()> {
        let Some(qos) = &record.rdma_qos else {
            return Ok(());
        };
        let node = self.node;
        let (then, now) = (record.proof.boot_id.as_deref(), node.settings.boot_id());
        if then.is_some_and(|then| now.as_deref().is_some_and(|now| now != then)) {
            // The reboot reloaded the driver: nothing railcni set survived.
            log_info!(
                "RDMA device {} was given its QoS in an earlier boot; nothing of it is left to restore",
                qos.device
            );
            return Ok(());
        }
        let at = node.roce_port(self.a.pci, &qos.device, qos.port);
        crate::rdma_qos::restore(node.hw.as_ref(), &at, qos)
    }

    fn open_pod(&mut self) -> Result<bool> {
        if let Pod::Socket(..) = self.pod {
            return Ok(true);
        }
        self.find_pod_ns()?;
        self.opened_pod = match self.pod_ns() {
            Some(ns) => Some(Netlink::connect_in(ns)?),
            None => None,
        };
        Ok(self.opened_pod.is_some())
    }

    fn remove_routing(&mut self, record: &Record) -> Result<()> {
        match (self.pod(), &record.routing) {
            (Some(nl), Some(routes)) => crate::routing::apply::remove(nl, routes),
            _ => Ok(()),
        }
    }

    fn move_vf_home(&mut self) -> Result<Option<Link>> {
        let a = self.a;
        let (home, pod) = self.home()?;
        home.bring_back(pod, a.ifname, a.record.map(Record::saved_vf))
    }

    fn held_elsewhere(&mut self) -> bool {
        self.vf.as_ref().is_some_and(Vf::has_netdev_driver)
    }

    fn restore_admin_mac(&mut self, record: &Record) -> Result<()> {
        match &self.vf {
            Some(vf) => {
                settings::restore_admin_mac(self.node.hw.as_ref(), vf, record.vf_restore.as_ref())
            }
            None => Ok(()),
        }
    }

    fn restore_vf_settings(&mut self, record: &Record) -> Result<()> {
        let node = self.node;
        // A GUID's restore rebinds the driver: one rebind at a time on the
        // node (`AttachmentStore::lock_rebinds`).
        let _rebinding = match record.vf_restore.as_ref().and_then(|s| s.ib_guid()) {
            Some(_) => Some(node.store.lock_rebinds()?),
            None => None,
        };
        match &self.vf {
            Some(vf) => settings::restore(
                node.hw.as_ref(),
                &node.sysfs,
                vf,
                record.vf_restore.as_ref(),
                node.settings.rebind_timeout,
            ),
            None => Ok(()),
        }
    }

    fn restore_mac(&mut self, link: &Link, record: &Record) -> Result<()> {
        self.home()?.0.restore_mac(link, &record.host)
    }

    fn release_lease(&mut self) -> Result<()> {
        release_lease(self.node, self.a, self.release)
    }

    fn remove_record(&mut self) -> Result<()> {
        self.node.store.remove(self.a.pci)
    }
}

/// The attachment's lease: from the embedded store of the record's
/// network, through this call's IPAM when the record is of its network,
/// else through the external plugin the record names.
fn release_lease(node: &Node, a: &Attachment<'_>, release: &Release<'_>) -> Result<()> {
    let config = match release {
        Release::Config(ipam) => ipam.as_ref(),
        Release::Recorded => None,
    };
    let Some(r) = a.record else {
        // No record: only this call's IPAM can know the lease.
        return config.map_or(Ok(()), |ipam| ipam.release(a.container_id, a.ifname));
    };
    if r.ipam_type.as_deref() == Some(crate::config::EMBEDDED_IPAM) {
        // The embedded store needs only the network's name, not its config.
        return crate::ipam::release_embedded(&node.settings, &r.network, a.container_id, a.ifname);
    }
    if let Some(ipam) = config.filter(|i| i.network() == r.network) {
        return ipam.release(a.container_id, a.ifname);
    }
    match (&r.external_ipam, &r.ipam_type) {
        (Some(external), _) => external.release(a.container_id, a.ifname),
        (None, Some(plugin)) => {
            log_warn!(
                "attachment {}/{} of network {} has a lease of IPAM plugin {plugin}, but its record \
                 (from an older railcni) does not say how to run it; release it with that plugin",
                a.container_id,
                a.ifname,
                r.network
            );
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each step and fails the ones named in `fail`.
    #[derive(Default)]
    struct Recorder {
        calls: Vec<&'static str>,
        fail: Vec<&'static str>,
        /// DetachSteps that fail with this error rather than a netlink one.
        fail_with: Vec<(&'static str, Error)>,
        pod_gone: bool,
        /// The VF is found neither in the pod nor home…
        vf_nowhere: bool,
        /// … while its PCI device still has a netdev driver.
        vf_exists: bool,
    }

    impl Recorder {
        fn step(&mut self, name: &'static str) -> Result<()> {
            self.calls.push(name);
            if let Some((_, e)) = self.fail_with.iter().find(|(n, _)| *n == name) {
                Err(e.clone())
            } else if self.fail.contains(&name) {
                Err(Error::Netlink(format!("{name} refused")))
            } else {
                Ok(())
            }
        }
    }

    impl DetachSteps for Recorder {
        fn move_rdma_home(&mut self, _: &str) -> Result<()> {
            self.step("rdma")
        }
        fn restore_rdma_qos(&mut self, _: &Record) -> Result<()> {
            self.step("qos")
        }
        fn open_pod(&mut self) -> Result<bool> {
            self.step("open pod").map(|()| !self.pod_gone)
        }
        fn remove_routing(&mut self, _: &Record) -> Result<()> {
            self.step("routing")
        }
        fn move_vf_home(&mut self) -> Result<Option<Link>> {
            let found = !self.vf_nowhere;
            self.step("vf").map(|()| found.then(Link::default))
        }
        fn held_elsewhere(&mut self) -> bool {
            self.vf_nowhere && self.vf_exists
        }
        fn restore_admin_mac(&mut self, _: &Record) -> Result<()> {
            self.step("admin mac")
        }
        fn restore_vf_settings(&mut self, _: &Record) -> Result<()> {
            self.step("settings")
        }
        fn restore_mac(&mut self, _: &Link, _: &Record) -> Result<()> {
            self.step("mac")
        }
        fn release_lease(&mut self) -> Result<()> {
            self.step("lease")
        }
        fn remove_record(&mut self) -> Result<()> {
            self.step("record")
        }
    }

    fn record() -> Record {
        let mut r = Record::sample();
        r.rdma_device = Some("mlx5_3".into());
        use crate::rdma_qos::{RoceAttr, RoceSettings};
        r.rdma_qos = Some(crate::rdma_qos::QosRecord {
            device: "mlx5_3".into(),
            port: 1,
            restore: RoceSettings::from_attrs([RoceAttr::TrafficClass(None)]),
            applied: RoceSettings::from_attrs([RoceAttr::TrafficClass(Some(96))]),
        });
        r.routing = Some(crate::routing::RailRoutes {
            table: 1001,
            priority: 1001,
            rules: vec![],
            routes: vec![],
            sysctls: vec![],
        });
        r
    }

    fn run(rec: &mut Recorder, r: Option<&Record>) -> Vec<String> {
        let left = detach_in_order(rec, r);
        left.failures
            .iter()
            .map(|f| format!("{}: {}", f.step, f.error.details()))
            .collect()
    }

    fn run_typed(rec: &mut Recorder, r: Option<&Record>) -> Vec<StepFailure> {
        detach_in_order(rec, r).failures
    }

    #[test]
    fn failures_keep_their_own_errors() {
        let mut rec = Recorder {
            fail: vec!["routing"],
            fail_with: vec![("lease", Error::try_again_later("lease file locked"))],
            ..Recorder::default()
        };
        let failures = run_typed(&mut rec, Some(&record()));
        let steps: Vec<_> = failures.iter().map(|f| (f.step, f.error.code())).collect();
        assert_eq!(
            steps,
            [
                ("remove rules and rail routes", 104),
                ("release address", 11)
            ]
        );
        assert!(
            !rec.calls.contains(&"record"),
            "a failed detach keeps its record"
        );
    }

    #[test]
    fn every_step_in_order_admin_mac_then_mac_then_settings() {
        let mut rec = Recorder::default();
        assert!(run(&mut rec, Some(&record())).is_empty());
        assert_eq!(
            rec.calls,
            [
                "rdma",
                "qos",
                "open pod",
                "routing",
                "vf",
                "admin mac",
                "mac",
                "settings",
                "lease",
                "record"
            ]
        );
    }

    #[test]
    fn a_failing_step_does_not_stop_the_others_and_all_are_reported() {
        let mut rec = Recorder {
            fail: vec!["rdma", "qos", "routing", "settings"],
            ..Recorder::default()
        };
        let failures = run(&mut rec, Some(&record()));
        assert_eq!(failures.len(), 4, "{failures:?}");
        assert!(
            failures[0].starts_with("move RDMA device home"),
            "{failures:?}"
        );
        assert_eq!(
            rec.calls,
            [
                "rdma",
                "qos",
                "open pod",
                "routing",
                "vf",
                "admin mac",
                "mac",
                "settings",
                "lease"
            ],
            "the VF is home, so the lease goes; the record stays for the next DEL"
        );
    }

    #[test]
    fn a_vf_that_is_not_home_keeps_its_lease_and_record() {
        let mut rec = Recorder {
            fail: vec!["vf"],
            ..Recorder::default()
        };
        let failures = run(&mut rec, Some(&record()));
        assert_eq!(failures, ["move VF home: vf refused"]);
        assert!(!rec.calls.contains(&"lease") && !rec.calls.contains(&"record"));
        assert!(rec.calls.contains(&"settings"), "settings still restored");
    }

    #[test]
    fn an_unopenable_pod_keeps_lease_and_record_a_gone_one_does_not() {
        let mut rec = Recorder {
            fail: vec!["open pod"],
            ..Recorder::default()
        };
        run(&mut rec, Some(&record()));
        assert!(!rec.calls.contains(&"routing") && !rec.calls.contains(&"lease"));

        let mut rec = Recorder {
            pod_gone: true,
            ..Recorder::default()
        };
        assert!(run(&mut rec, Some(&record())).is_empty());
        assert!(
            !rec.calls.contains(&"routing"),
            "no pod, no rules to remove there"
        );
        assert!(rec.calls.contains(&"lease") && rec.calls.contains(&"record"));
    }

    #[test]
    fn dpdk_and_record_less_attachments() {
        let mut dpdk = record();
        dpdk.dpdk = true;
        dpdk.rdma_device = None;
        dpdk.rdma_qos = None;
        let mut rec = Recorder::default();
        run(&mut rec, Some(&dpdk));
        assert_eq!(
            rec.calls,
            ["admin mac", "settings", "lease", "record"],
            "nothing moved, nothing to move home"
        );

        let mut rec = Recorder::default();
        run(&mut rec, None);
        assert_eq!(
            rec.calls,
            ["open pod", "vf", "lease"],
            "no record: no settings, no record file"
        );
    }

    #[test]
    fn a_vf_found_nowhere_keeps_its_lease_and_record_unless_nothing_can_hold_it() {
        let mut rec = Recorder {
            pod_gone: true,
            vf_nowhere: true,
            vf_exists: true,
            ..Recorder::default()
        };
        let left = detach_in_order(&mut rec, Some(&record()));
        assert!(left.held && left.failures.is_empty(), "{left:?}");
        assert!(
            !rec.calls.contains(&"lease") && !rec.calls.contains(&"record"),
            "a VF that may sit in a living namespace keeps its address: {:?}",
            rec.calls
        );

        // Its PCI device gone (or no netdev driver): nothing holds a netdev.
        let mut rec = Recorder {
            pod_gone: true,
            vf_nowhere: true,
            ..Recorder::default()
        };
        let left = detach_in_order(&mut rec, Some(&record()));
        assert!(!left.held, "{left:?}");
        assert!(rec.calls.contains(&"lease") && rec.calls.contains(&"record"));
    }
}
