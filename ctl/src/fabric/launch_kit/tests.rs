//! The import against the launch kit's config shapes, fixtures named by the
//! upstream commit they follow.

use super::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/launch-kit");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

fn refusal(text: &str) -> String {
    match import(text, Layout::SpectrumX) {
        Ok(_) => panic!("imported:\n{text}"),
        Err(e) => e.0,
    }
}

#[test]
fn swplb_rails_become_planes_one_pf_each() {
    let imported = import(&fixture("spectrum-x-swplb.378fd36.yaml"), Layout::SpectrumX).unwrap();
    let rails = &imported.plan.rails;
    assert_eq!(rails.len(), 2);
    for (rail, n) in rails.iter().zip(0..) {
        assert_eq!(rail.name, format!("rail{n}"));
        assert_eq!(rail.planes, Some(2));
        assert_eq!(
            rail.pf,
            Some(Pf::PerPlane(vec![
                format!("eth_p0_r{n}"),
                format!("eth_p1_r{n}")
            ]))
        );
    }
    let notes = imported.unmapped.join("\n");
    assert!(
        notes.contains("gpuType NVIDIA-GB300 (platform gb300)"),
        "{notes}"
    );
    assert!(notes.contains("profile"), "{notes}");
}

#[test]
fn hwplb_is_refused_with_the_reason() {
    let why = refusal(&fixture("spectrum-x-hwplb.378fd36.yaml"));
    assert!(
        why.contains("multiplaneMode hwplb") && why.contains("share the first's RDMA device"),
        "{why}"
    );
}

/// A config whose profile and first group are replaced as given.
fn swplb_with(profile: &str, group_sx: &str) -> String {
    fixture("spectrum-x-swplb.378fd36.yaml")
        .replace(
            "spectrumX: {enable: true, spcxVersion: RA2.2, multiplaneMode: swplb, numberOfPlanes: 2}",
            profile,
        )
        .replace(
            "spectrumX: {platformType: gb300, swPlaneByRail: {0: 0, 1: 0}}",
            group_sx,
        )
}

#[test]
fn a_rail_key_given_twice_is_refused_however_it_is_spelled() {
    let profile = "spectrumX: {multiplaneMode: swplb, numberOfPlanes: 2}";
    for planes in ["{0: 0, 0: 1}", "{0x0: 0, 00: 1}"] {
        let text = swplb_with(profile, &format!("spectrumX: {{swPlaneByRail: {planes}}}"));
        let why = refusal(&text);
        assert!(
            why.contains("duplicate swPlaneByRail rail key 0"),
            "{planes}: {why}"
        );
    }
}

#[test]
fn a_plane_count_the_pfs_contradict_is_refused_naming_the_rail() {
    let group = "spectrumX: {swPlaneByRail: {0: 0}}";
    let four = swplb_with(
        "spectrumX: {multiplaneMode: swplb, numberOfPlanes: 4}",
        group,
    );
    let why = refusal(&four);
    assert!(
        why.contains("rail 0: multiplaneMode swplb gives a rail 4 planes"),
        "{why}"
    );
    let none = swplb_with("spectrumX: {multiplaneMode: none}", group);
    let why = refusal(&none);
    assert!(
        why.contains("gives a rail one plane") && why.contains("eth_p0_r0, eth_p1_r0"),
        "{why}"
    );
    let unknown = swplb_with("spectrumX: {multiplaneMode: bogus}", group);
    assert!(refusal(&unknown).contains("knows none, uniplane, swplb and hwplb"));
}

#[test]
fn software_planes_are_checked_as_the_launch_kit_checks_them() {
    let profile = "spectrumX: {multiplaneMode: swplb, numberOfPlanes: 2}";
    let nonzero = swplb_with(profile, "spectrumX: {swPlaneByRail: {1: 1}}");
    assert!(refusal(&nonzero).contains("nonzero software plane needs hwplb"));
    let unknown = swplb_with(profile, "spectrumX: {swPlaneByRail: {5: 0}}");
    assert!(refusal(&unknown).contains("names rail 5, which has no east-west PF"));
}

#[test]
fn nv_ipam_rails_are_named_by_the_sriov_resource() {
    let imported = import(&fixture("cluster-config.yaml"), Layout::NvIpam).unwrap();
    let first = &imported.plan.rails[0];
    let rail = first.name.trim_start_matches("rail");
    let resource = first.resource_name.as_deref().unwrap_or_default();
    assert!(
        resource.starts_with("nvidia.com/") && resource.ends_with(&format!("_rail_{rail}")),
        "{resource}"
    );
}

/// The Host Device RDMA profile: each rail a whole-NIC rail of its PF,
/// its resource the profile's, and the node files grant the PF (#61).
#[test]
fn a_host_device_profile_plans_whole_nic_rails() {
    let imported = import(&fixture("host-device.378fd36.yaml"), Layout::NvIpam).unwrap();
    let rails = &imported.plan.rails;
    assert_eq!(rails.len(), 2);
    for (rail, (n, pf)) in rails.iter().zip([(0, "enp3s0f0np0"), (1, "enp129s0np0")]) {
        assert!(rail.whole_nic, "{}", rail.name);
        assert_eq!(rail.pf, Some(Pf::One(pf.into())));
        assert_eq!(
            rail.resource_name.as_deref(),
            Some(format!("nvidia.com/hostdev-resource_rail_{n}").as_str())
        );
    }
    // The same config without the profile plans VF rails, as before.
    let vf =
        fixture("host-device.378fd36.yaml").replace("deployment: host_device", "deployment: sriov");
    let imported = import(&vf, Layout::NvIpam).unwrap();
    assert!(imported.plan.rails.iter().all(|r| !r.whole_nic));
}
