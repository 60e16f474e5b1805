//! Every file railcni and railcni-ipam leave under the state dir is 0600
//! and every directory 0700: records, leases, locks, call counts and the
//! marks of validated configs alike; no temp file of an atomic replace is
//! left behind. Needs root.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::*;
use serde_json::json;

fn walk(dir: &Path, out: &mut Vec<(String, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        let path = entry.path();
        out.push((
            path.display().to_string(),
            meta.permissions().mode() & 0o7777,
            meta.is_dir(),
        ));
        if meta.is_dir() {
            walk(&path, out);
        }
    }
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn every_state_file_is_0600_and_every_directory_0700() {
    let node = Node::new(1, 2);
    // An inline pool: the first sight of a config leaves a validated mark.
    let pool = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15",
        "staticAllocations": [{"nodeName": "gpu-0", "prefix": "172.16.0.0/31"},
                              {"nodeName": "gpu-1", "prefix": "172.16.0.2/31"}]});
    let pod = node.pod("p");
    let first = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[0].pci, pool.clone()),
    );
    node.cni(&first).ok();
    // A refused ADD and its DEL write too (call counts).
    let second = Req::new(
        "ADD",
        "c2",
        &pod,
        "net2",
        conf("1.1.0", "rail1", &node.vfs[1].pci, pool),
    );
    node.cni(&second).err(110);
    node.cni(&second.cmd("DEL")).ok();
    let mut entries = Vec::new();
    walk(&node.state_dir(), &mut entries);
    let names: Vec<&str> = entries.iter().map(|(p, _, _)| p.as_str()).collect();
    for part in ["/attachments/", "/ipam/", "/validated/", "/stats/"] {
        assert!(
            names.iter().any(|n| n.contains(part)),
            "{part} is written: {names:#?}"
        );
    }
    for (path, mode, is_dir) in &entries {
        let want = if *is_dir { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{path} is {mode:o}");
        assert!(!path.ends_with(".tmp"), "a temp file is left: {path}");
    }
    node.cni(&first.cmd("DEL")).ok();
}
