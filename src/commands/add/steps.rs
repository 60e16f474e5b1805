//! ADD's host changes as ordered steps, each pushing its undo onto a
//! journal; on any failure the journal unwinds newest first. The order
//! lives here, over the small `AttachSteps` trait, so it is unit-tested without
//! root; `system::KernelAttach` is the real implementation.
//!
//! 1. lease the address (undo: release it); like every state write it
//!    neither waits for the disk nor starts writing to it (see
//!    `base::files::replace_atomic`): disk I/O in flight while the kernel
//!    moves the VF made each move wait about 7 ms longer for its RCU grace
//!    period (measured: 22.7 against 15.3 ms p50);
//! 2. write the record before the first host change, with the routing
//!    plan and the PF's original VF settings (undo: remove it);
//! 3. set the VF's MAC on its netdev, then the PF-side VF settings one by
//!    one; a refused one is undone inside the step, so the undo (restore
//!    them) is pushed only once all took;
//! 4. `rdmaQoS.tc`: the RDMA device's traffic class, on the host (it
//!    cannot be written once the device has moved; undo: restore it);
//! 5. move the netdev into the pod, its MTU and IPv4 settings in the
//!    move's own message; from here the undo is a full detach,
//!    which covers every earlier step (a move whose answer was lost may
//!    well have happened, and detach looks for the VF wherever it is);
//! 6. bring it up (RDMA device, then `rdmaQoS.tos`, which rdma_cm forgets
//!    when the device moves, the sysctls only /proc/sys sets, up);
//! 7. `checks.addressConflict`: an RFC 5227 probe for each address;
//! 8. address it;
//! 9. install the rail routing;
//! 10. `checks.gateway`: each gateway answers ARP;
//! 11. `checks.roceGid`: the RDMA device holds a RoCE v2 GID per address;
//! 12. report what the kernel confirms, and mark the record attached.
//!
//! A DPDK VF has no netdev (nor RDMA device): steps 4 to 11 are skipped.

use cni::CniResult;

use crate::error::Result;
use crate::journal::Journal;
use crate::log_warn;

/// How to undo a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undo {
    ReleaseLease,
    RemoveRecord,
    RestoreVfSettings,
    RestoreRdmaQos,
    /// Give everything back the way DEL does.
    Detach,
}

pub trait AttachSteps {
    /// Whether the VF has a netdev to move (not DPDK).
    fn moves(&self) -> bool;
    /// Whether the config sets PF-side VF settings.
    fn sets_vf(&self) -> bool;
    /// Whether the RDMA device's traffic class is set before the move.
    fn sets_traffic_class(&self) -> bool;
    /// The IPAM result (empty without IPAM).
    fn lease(&mut self) -> Result<CniResult>;
    fn record(&mut self, ipam: &CniResult) -> Result<()>;
    fn set_vf(&mut self) -> Result<()>;
    fn set_traffic_class(&mut self) -> Result<()>;
    fn move_in(&mut self) -> Result<()>;
    fn bring_up(&mut self) -> Result<()>;
    fn probe_addresses(&mut self, result: &CniResult) -> Result<()>;
    fn address(&mut self, result: &mut CniResult) -> Result<()>;
    fn route(&mut self, result: &mut CniResult) -> Result<()>;
    fn probe_gateways(&mut self, result: &CniResult) -> Result<()>;
    fn wait_for_gids(&mut self, result: &CniResult) -> Result<()>;
    fn report(&mut self, result: &mut CniResult) -> Result<()>;
    fn finish(&mut self, result: &CniResult) -> Result<()>;
    fn undo(&mut self, step: Undo) -> Result<()>;
}

/// Run the steps; on failure undo what was done and return the error.
pub fn attach(steps: &mut impl AttachSteps) -> Result<CniResult> {
    let mut journal = Journal::default();
    let outcome = run(steps, &mut journal);
    if let Err(err) = &outcome {
        log_warn!("ADD failed ({err}); undoing");
        for failure in journal.unwind(|u| steps.undo(u)) {
            crate::log_error!("undo step failed: {failure}");
        }
    }
    outcome
}

fn run(steps: &mut impl AttachSteps, journal: &mut Journal<Undo>) -> Result<CniResult> {
    let mut result = steps.lease()?;
    journal.push(Undo::ReleaseLease);
    steps.record(&result)?;
    journal.push(Undo::RemoveRecord);
    if steps.sets_vf() {
        // A refusal undoes its own step: a setting that never took is
        // never "restored" (and never logged as a failed undo).
        steps.set_vf()?;
        journal.push(Undo::RestoreVfSettings);
    }
    if steps.sets_traffic_class() {
        // One write: a refused one changed nothing.
        steps.set_traffic_class()?;
        journal.push(Undo::RestoreRdmaQos);
    }
    if steps.moves() {
        journal.replace_all(Undo::Detach);
        steps.move_in()?;
        steps.bring_up()?;
        steps.probe_addresses(&result)?;
        steps.address(&mut result)?;
        steps.route(&mut result)?;
        steps.probe_gateways(&result)?;
        steps.wait_for_gids(&result)?;
    }
    steps.report(&mut result)?;
    steps.finish(&result)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Records each step and undo; fails the step named in `fail`.
    struct Recorder {
        calls: Vec<String>,
        fail: Option<&'static str>,
        dpdk: bool,
        vf_settings: bool,
    }

    impl Recorder {
        fn new(fail: Option<&'static str>) -> Self {
            Recorder {
                calls: Vec::new(),
                fail,
                dpdk: false,
                vf_settings: true,
            }
        }

        fn step(&mut self, name: &'static str) -> Result<()> {
            self.calls.push(name.to_string());
            match self.fail {
                Some(f) if f == name => Err(Error::Netlink(format!("{name} refused"))),
                _ => Ok(()),
            }
        }
    }

    impl AttachSteps for Recorder {
        fn moves(&self) -> bool {
            !self.dpdk
        }
        fn sets_vf(&self) -> bool {
            self.vf_settings
        }
        fn lease(&mut self) -> Result<CniResult> {
            self.step("lease").map(|()| CniResult::default())
        }
        fn record(&mut self, _: &CniResult) -> Result<()> {
            self.step("record")
        }
        fn set_vf(&mut self) -> Result<()> {
            self.step("set_vf")
        }
        fn sets_traffic_class(&self) -> bool {
            self.vf_settings
        }
        fn set_traffic_class(&mut self) -> Result<()> {
            self.step("set_traffic_class")
        }
        fn move_in(&mut self) -> Result<()> {
            self.step("move_in")
        }
        fn bring_up(&mut self) -> Result<()> {
            self.step("bring_up")
        }
        fn probe_addresses(&mut self, _: &CniResult) -> Result<()> {
            self.step("probe_addresses")
        }
        fn address(&mut self, _: &mut CniResult) -> Result<()> {
            self.step("address")
        }
        fn route(&mut self, _: &mut CniResult) -> Result<()> {
            self.step("route")
        }
        fn probe_gateways(&mut self, _: &CniResult) -> Result<()> {
            self.step("probe_gateways")
        }
        fn wait_for_gids(&mut self, _: &CniResult) -> Result<()> {
            self.step("wait_for_gids")
        }
        fn report(&mut self, _: &mut CniResult) -> Result<()> {
            self.step("report")
        }
        fn finish(&mut self, _: &CniResult) -> Result<()> {
            self.step("finish")
        }
        fn undo(&mut self, step: Undo) -> Result<()> {
            self.calls.push(format!("undo {step:?}"));
            Ok(())
        }
    }

    fn attach_with(rec: &mut Recorder) -> Result<CniResult> {
        attach(rec)
    }

    const ALL: [&str; 13] = [
        "lease",
        "record",
        "set_vf",
        "set_traffic_class",
        "move_in",
        "bring_up",
        "probe_addresses",
        "address",
        "route",
        "probe_gateways",
        "wait_for_gids",
        "report",
        "finish",
    ];

    #[test]
    fn every_step_in_order_and_nothing_undone_on_success() {
        let mut rec = Recorder::new(None);
        assert!(attach_with(&mut rec).is_ok());
        assert_eq!(rec.calls, ALL);
    }

    #[test]
    fn a_failure_undoes_exactly_what_was_done_newest_first() {
        let undo =
            |steps: &[&str]| -> Vec<String> { steps.iter().map(|s| format!("undo {s}")).collect() };
        let cases: [(&str, Vec<String>); 13] = [
            ("lease", vec![]),
            ("record", undo(&["ReleaseLease"])),
            ("set_vf", undo(&["RemoveRecord", "ReleaseLease"])),
            (
                "set_traffic_class",
                undo(&["RestoreVfSettings", "RemoveRecord", "ReleaseLease"]),
            ),
            ("move_in", undo(&["Detach"])),
            ("bring_up", undo(&["Detach"])),
            ("probe_addresses", undo(&["Detach"])),
            ("address", undo(&["Detach"])),
            ("route", undo(&["Detach"])),
            ("probe_gateways", undo(&["Detach"])),
            ("wait_for_gids", undo(&["Detach"])),
            ("report", undo(&["Detach"])),
            ("finish", undo(&["Detach"])),
        ];
        for (fail, undone) in cases {
            let mut rec = Recorder::new(Some(fail));
            let err = attach_with(&mut rec).unwrap_err();
            assert_eq!(err.code(), 104, "{fail}: the step's own error is returned");
            let at = ALL.iter().position(|s| *s == fail).unwrap();
            let mut expected: Vec<String> = ALL[..=at].iter().map(|s| s.to_string()).collect();
            expected.extend(undone);
            assert_eq!(rec.calls, expected, "failing at {fail}");
        }
    }

    #[test]
    fn dpdk_moves_nothing_and_settings_are_optional() {
        let mut rec = Recorder::new(None);
        rec.dpdk = true;
        rec.vf_settings = false;
        attach_with(&mut rec).unwrap();
        assert_eq!(rec.calls, ["lease", "record", "report", "finish"]);

        let mut rec = Recorder::new(Some("finish"));
        rec.dpdk = true;
        attach_with(&mut rec).unwrap_err();
        assert_eq!(
            rec.calls[rec.calls.len() - 4..],
            [
                "undo RestoreRdmaQos",
                "undo RestoreVfSettings",
                "undo RemoveRecord",
                "undo ReleaseLease"
            ],
            "nothing moved: the earlier undos, not a detach"
        );
    }
}
