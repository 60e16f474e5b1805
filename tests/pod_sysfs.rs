//! A pod's own view of sysfs (`net::pod_sysfs`): what the kernel shows
//! only to a sysfs mounted from the namespace holding a device (a netdev
//! here, an RDMA device moved in exclusive mode on a node). Needs root.

mod common;

use std::path::Path;

use common::*;

/// A netdev in a namespace is listed by the sysfs mounted there and not
/// by the host's; the mount never reaches the caller's thread or the
/// host's mount table.
#[test]
#[ignore = "root: network namespace; scripts/test.sh runs it"]
fn a_pods_sysfs_shows_what_only_its_namespace_holds() {
    let ns = format!("ps{}", std::process::id());
    let dev = format!("psv{}", std::process::id() % 100_000);
    sh(&format!("ip netns add {ns}"));
    sh(&format!(
        "ip -n {ns} link add {dev} type veth peer name {dev}p"
    ));
    let pod = railcni::net::NetNs::open(Path::new(&format!("/var/run/netns/{ns}"))).unwrap();
    let mounts_before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let seen = railcni::net::pod_sysfs::with_sysfs_of(&pod, |root| {
        root.join("class/net").join(&dev).exists()
    });
    let mounts_after = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    sh(&format!("ip netns del {ns}"));
    assert!(seen.unwrap(), "the pod's sysfs lists {dev}");
    assert!(
        !Path::new("/sys/class/net").join(&dev).exists(),
        "the host's does not"
    );
    assert_eq!(mounts_before, mounts_after, "nothing mounted here");
}
