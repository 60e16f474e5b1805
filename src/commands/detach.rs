//! The one way an attachment is given back. DEL, GC, the clearing of a
//! stale record during ADD, and ADD's rollback after the move all call
//! `detach`, so they cannot drift apart.
//!
//! Every step runs even when an earlier one failed, and every failure is
//! reported. The lease is given up only when the VF is really home, and
//! the record only when every step succeeded: a later DEL can then finish.
//! The order lives in `give_back`, over the small `Steps` trait, so it is
//! unit-tested without root; `System` is the real implementation.

use std::path::Path;

use super::home::Home;
use super::rail;
use super::Ctx;
use crate::error::{Error, Result};
use crate::net::{Link, NetNs, Netlink};
use crate::sriov::Vf;
use crate::state::Record;
use crate::{log_info, log_warn};

/// What is being given back: the VF at `pci`, attached under the CNI key
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

/// The operations a detach is made of.
#[allow(async_fn_in_trait)] // used generically, never as `dyn`
pub trait Steps {
    fn return_rdma(&mut self, device: &str) -> Result<()>;
    /// A socket in the pod: `Ok(false)` when its namespace is gone.
    fn open_pod(&mut self) -> Result<bool>;
    async fn remove_routing(&mut self, record: &Record) -> Result<()>;
    /// Bring the netdev home (name, MTU); its host link when found.
    async fn return_vf(&mut self) -> Result<Option<Link>>;
    fn restore_vf_settings(&mut self, record: &Record) -> Result<()>;
    async fn restore_mac(&mut self, link: &Link, record: &Record) -> Result<()>;
    fn release_lease(&mut self) -> Result<()>;
    fn remove_record(&mut self) -> Result<()>;
}

/// Run every step in order; the failures, in words. A VF that is not home
/// keeps its lease and record.
pub async fn give_back(steps: &mut impl Steps, record: Option<&Record>) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some(device) = record.and_then(|r| r.rdma_device.as_deref()) {
        note(
            &mut failures,
            "return RDMA device",
            steps.return_rdma(device),
        );
    }
    let mut vf_home = true;
    let mut returned = None;
    if !record.is_some_and(|r| r.dpdk) {
        let pod = steps.open_pod();
        let reachable = matches!(pod, Ok(true));
        vf_home &= note(&mut failures, "open pod namespace", pod.map(drop));
        if let (true, Some(r)) = (reachable, record.filter(|r| r.routing.is_some())) {
            note(
                &mut failures,
                "remove rules and rail routes",
                steps.remove_routing(r).await,
            );
        }
        match steps.return_vf().await {
            Ok(link) => returned = link,
            Err(e) => vf_home &= note(&mut failures, "return VF", Err(e)),
        }
    }
    if let Some(r) = record {
        note(
            &mut failures,
            "restore VF settings",
            steps.restore_vf_settings(r),
        );
        if let Some(link) = &returned {
            note(
                &mut failures,
                "restore MAC",
                steps.restore_mac(link, r).await,
            );
        }
    }
    if vf_home {
        note(&mut failures, "release address", steps.release_lease());
    }
    // The record goes last and only when all went well: a DEL that failed
    // anywhere leaves it, so the next DEL runs every step again.
    if vf_home && failures.is_empty() && record.is_some() {
        note(&mut failures, "remove record", steps.remove_record());
    }
    failures
}

/// Record a step's failure in words; whether it succeeded.
fn note(failures: &mut Vec<String>, step: &str, r: Result<()>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) => {
            failures.push(format!("{step}: {}", e.details()));
            false
        }
    }
}

/// Give the attachment back (see `give_back` for the order). `netns` is
/// where to look for the pod (a gone namespace is not an error); `pod_nl` an
/// already-open socket there, if the caller has one.
pub async fn detach(
    ctx: &Ctx,
    a: &Attachment<'_>,
    netns: Option<&Path>,
    pod_nl: Option<&Netlink>,
) -> Result<()> {
    let mut system = System {
        ctx,
        a,
        netns,
        vf: ctx.sysfs.resolve(a.pci).ok(),
        given_pod: pod_nl,
        opened_pod: None,
        host_nl: None,
    };
    let failures = give_back(&mut system, a.record).await;
    if failures.is_empty() {
        return Ok(());
    }
    let what = format!("VF {} ({}/{})", a.pci, a.container_id, a.ifname);
    for f in &failures {
        log_warn!("giving back {what}: {f}");
    }
    Err(Error::Netlink(format!(
        "giving back {what} left work undone: {}",
        failures.join("; ")
    )))
}

/// The steps on the real system.
struct System<'a> {
    ctx: &'a Ctx,
    a: &'a Attachment<'a>,
    netns: Option<&'a Path>,
    vf: Option<Vf>,
    given_pod: Option<&'a Netlink>,
    opened_pod: Option<Netlink>,
    host_nl: Option<Netlink>,
}

impl System<'_> {
    fn pod(&self) -> Option<&Netlink> {
        self.given_pod.or(self.opened_pod.as_ref())
    }

    /// A host socket, opened on first use and kept.
    fn home(&mut self) -> Result<(Home<'_>, Option<&Netlink>)> {
        if self.host_nl.is_none() {
            self.host_nl = Some(Netlink::connect_in(&self.ctx.host)?);
        }
        let host_nl = self
            .host_nl
            .as_ref()
            .ok_or_else(|| Error::internal("host netlink socket missing"))?;
        let home = Home {
            host: &self.ctx.host,
            host_nl,
            pci: self.a.pci,
            sysfs_names: self.vf.as_ref().map_or(&[], |v| v.netdevs.as_slice()),
        };
        Ok((home, self.given_pod.or(self.opened_pod.as_ref())))
    }
}

impl Steps for System<'_> {
    fn return_rdma(&mut self, device: &str) -> Result<()> {
        self.ctx.hw.move_rdma_device(device, self.ctx.host.fd())
    }

    fn open_pod(&mut self) -> Result<bool> {
        if self.given_pod.is_some() {
            return Ok(true);
        }
        let Some(path) = self.netns else {
            return Ok(false);
        };
        match NetNs::open(path) {
            Ok(ns) => {
                self.opened_pod = Some(Netlink::connect_in(&ns)?);
                Ok(true)
            }
            Err(e) if e.code() == 3 => {
                log_info!(
                    "pod namespace {} is gone; looking for the VF on the host",
                    path.display()
                );
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    async fn remove_routing(&mut self, record: &Record) -> Result<()> {
        match (self.pod(), &record.routing) {
            (Some(nl), Some(plan)) => rail::remove(nl, plan).await,
            _ => Ok(()),
        }
    }

    async fn return_vf(&mut self) -> Result<Option<Link>> {
        let a = self.a;
        let (home, pod) = self.home()?;
        home.bring_back(pod, a.ifname, a.record).await
    }

    fn restore_vf_settings(&mut self, record: &Record) -> Result<()> {
        match &self.vf {
            Some(vf) => restore_vf_settings(self.ctx, vf, record),
            None => Ok(()),
        }
    }

    async fn restore_mac(&mut self, link: &Link, record: &Record) -> Result<()> {
        self.home()?.0.restore_mac(link, record).await
    }

    fn release_lease(&mut self) -> Result<()> {
        release_lease(self.ctx, self.a)
    }

    fn remove_record(&mut self) -> Result<()> {
        self.ctx.store.remove(self.a.pci)
    }
}

/// Put back the PF-side VF attributes the record saved, and only those.
pub fn restore_vf_settings(ctx: &Ctx, vf: &Vf, record: &Record) -> Result<()> {
    match &record.vf_restore {
        Some(saved) if !saved.is_empty() => {
            ctx.hw.set_vf(pf_netdev(vf)?, vf.index, saved)?;
            if vf.infiniband && saved.ib_guid.is_some() {
                // The original GUID takes effect on a fresh bind, as it was set.
                ctx.sysfs.rebind(vf, ctx.settings.rebind_timeout)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

pub fn pf_netdev(vf: &Vf) -> Result<&str> {
    vf.pf_netdev.as_deref().ok_or_else(|| {
        Error::DeviceNotFound(format!(
            "PF {} of VF {} has no netdev; VF settings are set through it",
            vf.pf_pci, vf.pci
        ))
    })
}

/// The attachment's lease: straight from the embedded store of the record's
/// network, else through this network's IPAM (an external plugin).
fn release_lease(ctx: &Ctx, a: &Attachment<'_>) -> Result<()> {
    match a.record {
        // The embedded store needs only the network's name, not its config.
        Some(r) if r.ipam_type.as_deref() == Some(crate::config::EMBEDDED_IPAM) => {
            crate::ipam::release_embedded(&ctx.settings, &r.network, a.container_id, a.ifname)
        }
        Some(r) if r.network != ctx.conf.name => {
            log_warn!(
                "attachment {}/{} belongs to network {}, whose IPAM ({}) this config cannot run; \
                 its address is left to that network's GC",
                a.container_id,
                a.ifname,
                r.network,
                r.ipam_type.as_deref().unwrap_or("none")
            );
            Ok(())
        }
        _ => ctx
            .ipam()
            .map_or(Ok(()), |ipam| ipam.release(a.container_id, a.ifname)),
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
        pod_gone: bool,
    }

    impl Recorder {
        fn step(&mut self, name: &'static str) -> Result<()> {
            self.calls.push(name);
            if self.fail.contains(&name) {
                Err(Error::Netlink(format!("{name} refused")))
            } else {
                Ok(())
            }
        }
    }

    impl Steps for Recorder {
        fn return_rdma(&mut self, _: &str) -> Result<()> {
            self.step("rdma")
        }
        fn open_pod(&mut self) -> Result<bool> {
            self.step("open pod").map(|()| !self.pod_gone)
        }
        async fn remove_routing(&mut self, _: &Record) -> Result<()> {
            self.step("routing")
        }
        async fn return_vf(&mut self) -> Result<Option<Link>> {
            self.step("vf").map(|()| Some(Link::default()))
        }
        fn restore_vf_settings(&mut self, _: &Record) -> Result<()> {
            self.step("settings")
        }
        async fn restore_mac(&mut self, _: &Link, _: &Record) -> Result<()> {
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
        r.routing = Some(crate::routing::Plan {
            table: 1001,
            priority: 1001,
            rules: vec![],
            routes: vec![],
            sysctls: vec![],
        });
        r
    }

    fn run(rec: &mut Recorder, r: Option<&Record>) -> Vec<String> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(give_back(rec, r))
    }

    #[test]
    fn every_step_in_order_settings_before_the_mac() {
        let mut rec = Recorder::default();
        assert!(run(&mut rec, Some(&record())).is_empty());
        assert_eq!(
            rec.calls,
            ["rdma", "open pod", "routing", "vf", "settings", "mac", "lease", "record"]
        );
    }

    #[test]
    fn a_failing_step_does_not_stop_the_others_and_all_are_reported() {
        let mut rec = Recorder {
            fail: vec!["rdma", "routing", "settings"],
            ..Recorder::default()
        };
        let failures = run(&mut rec, Some(&record()));
        assert_eq!(failures.len(), 3, "{failures:?}");
        assert!(
            failures[0].starts_with("return RDMA device"),
            "{failures:?}"
        );
        assert_eq!(
            rec.calls,
            ["rdma", "open pod", "routing", "vf", "settings", "mac", "lease"],
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
        assert_eq!(failures, ["return VF: vf refused"]);
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
        let mut rec = Recorder::default();
        run(&mut rec, Some(&dpdk));
        assert_eq!(
            rec.calls,
            ["settings", "lease", "record"],
            "nothing moved, nothing to return"
        );

        let mut rec = Recorder::default();
        run(&mut rec, None);
        assert_eq!(
            rec.calls,
            ["open pod", "vf", "lease"],
            "no record: no settings, no record file"
        );
    }
}
