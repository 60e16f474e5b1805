//! A state dir that cannot be written is named for what it is: a read-only
//! file system (EROFS) and a full one (ENOSPC) give different details, each
//! with what to do, in the CNI error and the log; the ADD leaves the VF as
//! it was; STATUS says the plugin cannot take ADDs, naming the errno.
//! Needs root (network and mount namespaces).

mod common;

use common::*;

/// The request run in a mount namespace where the node's state dir is a
/// tmpfs mounted as `mount` says (STATE stands for its path).
fn under(req: &Req, node: &Node, mount: &str) -> Req {
    let state = node.state_dir();
    std::fs::create_dir_all(&state).unwrap();
    req.clone()
        .in_mount_namespace(&mount.replace("STATE", &state.display().to_string()))
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_read_only_and_a_full_state_dir_are_told_apart() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    let ipam = Node::embedded_ipam(1);
    let add = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &vf.pci, ipam),
    );

    let ro = node
        .cni(&under(
            &add,
            &node,
            "mount -t tmpfs -o ro,size=1m rcro STATE",
        ))
        .err(106);
    let details = ro["details"].as_str().unwrap();
    assert!(
        details.contains("(EROFS)") && details.contains("remount it read-write"),
        "{details}"
    );
    assert_eq!(
        node.link(&node.host(), &vf.ifname).as_ref(),
        Some(&before),
        "the VF is as it was"
    );

    // Full: a 64 KiB tmpfs, its directories made, then filled.
    let full = "mount -t tmpfs -o size=64k rcfull STATE && mkdir -p STATE/attachments STATE/locks STATE/ipam \
                && (dd if=/dev/zero of=STATE/fill bs=4k 2>/dev/null || true)";
    let e = node.cni(&under(&add, &node, full)).err_any();
    let details = e["details"].as_str().unwrap();
    assert!(
        details.contains("(ENOSPC)") && details.contains("full"),
        "{e}"
    );
    assert!(!details.contains("EROFS"), "{details}");
    assert_eq!(
        node.link(&node.host(), &vf.ifname).as_ref(),
        Some(&before),
        "the VF is as it was"
    );

    // STATUS names the errno too.
    let status = Req::new(
        "STATUS",
        "",
        &pod,
        "",
        conf("1.1.0", "rail1", &vf.pci, Node::embedded_ipam(1)),
    );
    let s = node
        .cni(&under(
            &status,
            &node,
            "mount -t tmpfs -o ro,size=1m rcro STATE",
        ))
        .err_any();
    assert!(s["details"].as_str().unwrap().contains("(EROFS)"), "{s}");
}
