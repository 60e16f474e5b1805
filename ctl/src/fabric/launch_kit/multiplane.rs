//! The launch kit's Spectrum-X multiplane modes (`profile.spectrumX.
//! multiplaneMode`, k8s-launch-kit 378fd36): which of them a railcni plan
//! can say, and the per-rail software planes (`clusterConfig[].spectrumX.
//! swPlaneByRail`) checked as the launch kit checks them before it renders
//! (its `validateSpectrumXSwPlanes`).

use super::rails::{group_label, ImportedRail, Result};
use super::schema::LaunchKit;
use crate::fabric::PlanError;

/// Refuse what a plan cannot carry: hwplb, a mode whose plane count the
/// rails' PFs contradict, and software planes the launch kit would refuse.
pub(super) fn check(kit: &LaunchKit, rails: &[ImportedRail]) -> Result<()> {
    let sx = (kit.profile.as_ref()).and_then(|p| p.spectrum_x.as_ref());
    let mode = sx.and_then(|s| s.multiplane_mode.as_deref()).unwrap_or("");
    let planes = sx.and_then(|s| s.number_of_planes);
    let wrong = |rail: &ImportedRail, want: String| {
        Err(PlanError(format!(
            "rail {}: multiplaneMode {mode} gives a rail {want}, and the config lists {} east-west PFs \
             for it ({}): fix the config's rails or its profile.spectrumX",
            rail.index,
            rail.pfs.len(),
            rail.pfs.join(", ")
        )))
    };
    match mode {
        "" => {}
        "hwplb" => return Err(PlanError(HWPLB.into())),
        "swplb" => {
            let planes = planes.unwrap_or(0);
            if let Some(rail) = rails.iter().find(|r| r.pfs.len() != usize::from(planes)) {
                return wrong(rail, format!("{planes} planes (numberOfPlanes), one PF each"));
            }
        }
        "none" | "uniplane" => {
            if let Some(rail) = rails.iter().find(|r| r.pfs.len() > 1) {
                return wrong(rail, "one plane".into());
            }
        }
        other => {
            return Err(PlanError(format!(
                "profile.spectrumX.multiplaneMode {other}: the launch kit knows none, uniplane, swplb and hwplb"
            )))
        }
    }
    software_planes(kit, rails, mode)
}

/// Why hwplb has no plan.
const HWPLB: &str = "profile.spectrumX.multiplaneMode hwplb: the NIC spreads each rail's traffic over its \
     planes in hardware, and a rail's plane PFs after the first share the first's RDMA device \
     (nic-configuration-operator PR #330), while a railcni plane is a VF with an RDMA device of its own; \
     the import cannot say which VF serves which plane, so it writes no plan. Use swplb (one PF and RDMA \
     device per plane), or write the rails by hand, each one plane on its first PF";

/// `swPlaneByRail`: each key one of the rails, a nonzero plane only with hwplb.
fn software_planes(kit: &LaunchKit, rails: &[ImportedRail], mode: &str) -> Result<()> {
    for group in &kit.cluster_config {
        let Some(sx) = &group.spectrum_x else {
            continue;
        };
        for (rail, plane) in &sx.sw_plane_by_rail {
            let label = group_label(group);
            if !rails.iter().any(|r| r.index == *rail) {
                return Err(PlanError(format!(
                    "{label}: swPlaneByRail names rail {rail}, which has no east-west PF"
                )));
            }
            if *plane != 0 && mode != "hwplb" {
                return Err(PlanError(format!(
                    "{label}: swPlaneByRail gives rail {rail} plane {plane}; a nonzero software plane needs \
                     hwplb, and this config's multiplaneMode is {}",
                    if mode.is_empty() { "unset" } else { mode }
                )));
            }
        }
    }
    Ok(())
}
