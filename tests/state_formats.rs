//! The previous release's files, read by this build without a node:
//! `tests/fixtures/state/<v>/` (see its README). Tearing a previous
//! release's attachment down under a live pod is tests/upgrade.rs's, on the
//! fake node. Needs nothing but the tree.

mod common;

use std::path::Path;

use serde_json::json;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state");

/// The v1 node file still configures the embedded IPAM: gpu-0's rail1 prefix.
#[test]
fn the_v1_node_file_still_reads() {
    let file = base::node_file::NodeFile::load(&Path::new(FIXTURES).join("v1/node.json")).unwrap();
    assert_eq!(file.node_name.as_deref(), Some("gpu-0"));
    let state = tempfile::tempdir().unwrap();
    let settings = base::Settings {
        node_config: Path::new(FIXTURES).join("v1/node.json"),
        state_dir: state.path().to_path_buf(),
        ..base::Settings::default()
    };
    let pool = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15"});
    let ipam = railcni_ipam::Ipam::load("rail1", &pool, &settings).unwrap();
    let holder = railcni_ipam::Holder {
        container_id: "c1".into(),
        ifname: "net1".into(),
        ..railcni_ipam::Holder::default()
    };
    let got = ipam.allocate(&holder, &[]).unwrap();
    assert_eq!(got.ips[0].address.to_string(), "172.16.0.0/31");
    assert_eq!(
        got.ips[0].gateway.map(|g| g.to_string()).as_deref(),
        Some("172.16.0.1")
    );
}
