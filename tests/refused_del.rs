//! DEL after a refused ADD: a runtime tears a sandbox down with the same
//! input ADD refused (containerd 1.6 does, then retries forever), so for
//! every environment and config ADD refuses, DEL with that input answers 0
//! and changes nothing: not another container's attachment, not an
//! interface the pod had before. Needs root.

mod common;

use common::*;
use serde_json::{json, Value};

/// Everything a DEL could touch: the host's links, the pod's links,
/// addresses and rules, the state directory's files and contents (but the
/// call counts of `railcnictl metrics`, which count refused calls too), and
/// the PF-side VF settings.
fn snapshot(node: &Node, pod: &str) -> String {
    let ns = Node::ns_of(pod);
    let host = node.host();
    let out = |c: &str| String::from_utf8_lossy(&sh(c).stdout).into_owned();
    let state = out(&format!(
        "cd {} && find . -type f ! -name '*.lock' ! -path './stats/*' -print0 | sort -z | xargs -0 -r sha256sum",
        node.state_dir().display()
    ));
    [
        out(&format!("ip -n {host} -br link")),
        out(&format!("ip -n {ns} -br link")),
        out(&format!("ip -n {ns} -br addr")),
        out(&format!("ip -n {ns} rule")),
        state,
        node.hardware()["vfs"].to_string(),
    ]
    .join("\n")
}

/// One input ADD refuses: how to make it from a good request.
struct Refused {
    what: &'static str,
    make: fn(&Node, Req) -> Req,
}

fn with(req: Req, key: &str, value: Value) -> Req {
    let mut conf = req.conf.clone();
    conf[key] = value;
    req.with_conf(conf)
}

fn env(req: Req, key: &str, value: &str) -> Req {
    let mut r = req;
    r.env.push((key.into(), value.into()));
    r
}

const CASES: &[Refused] = &[
    Refused {
        what: "no CNI_CONTAINERID",
        make: |_, r| env(r, "CNI_CONTAINERID", ""),
    },
    Refused {
        what: "a CNI_CONTAINERID with a slash",
        make: |_, r| env(r, "CNI_CONTAINERID", "bad/id"),
    },
    Refused {
        what: "no CNI_IFNAME",
        make: |_, r| env(r, "CNI_IFNAME", ""),
    },
    Refused {
        what: "a CNI_IFNAME too long",
        make: |_, r| env(r, "CNI_IFNAME", "a-much-too-long-ifname"),
    },
    Refused {
        what: "malformed CNI_ARGS",
        make: |_, r| env(r, "CNI_ARGS", "K8S_POD_NAME"),
    },
    Refused {
        what: "CNI_NETNS naming the plugin's own namespace",
        make: |_, r| env(r, "CNI_NETNS", "/proc/self/ns/net"),
    },
    Refused {
        what: "stdin not a JSON object",
        make: |_, r| r.with_conf(json!("{not json")),
    },
    Refused {
        what: "an unsupported cniVersion",
        make: |_, r| with(r, "cniVersion", json!("9.9.9")),
    },
    Refused {
        what: "an unknown logLevel",
        make: |_, r| with(r, "logLevel", json!("loud")),
    },
    Refused {
        what: "no name",
        make: |_, r| with(r, "name", json!("")),
    },
    Refused {
        what: "a deviceID that is no PCI address",
        make: |_, r| with(r, "deviceID", json!("garbage")),
    },
    Refused {
        what: "an mtu out of range",
        make: |_, r| with(r, "mtu", json!(70000)),
    },
    Refused {
        what: "a multicast mac",
        make: |_, r| with(r, "mac", json!("01:00:5e:00:00:01")),
    },
    Refused {
        what: "a vlan out of range",
        make: |_, r| with(r, "vlan", json!(5000)),
    },
    Refused {
        what: "an unknown rdma policy",
        make: |_, r| with(r, "rdma", json!("sometimes")),
    },
    Refused {
        what: "a malformed railcni.io/device-id pod annotation",
        make: |_, r| {
            let mut r = with(r, "deviceID", Value::Null);
            r.conf["runtimeConfig"] =
                json!({"io.kubernetes.cri.pod-annotations": {"railcni.io/device-id": "not-a-pci"}});
            r
        },
    },
    Refused {
        what: "a static allocation outside the cidr",
        make: |_, r| {
            with(
                r,
                "ipam",
                json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15",
                "staticAllocations": [{"nodeName": "gpu-0", "prefix": "10.0.0.0/31"}]}),
            )
        },
    },
    Refused {
        what: "an ipam cidr that is no prefix",
        make: |_, r| {
            with(
                r,
                "ipam",
                json!({"type": "railcni-ipam", "cidr": "172.16.0.0/99"}),
            )
        },
    },
    Refused {
        what: "an interface name the pod already has",
        make: |_, r| r,
    },
];

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn del_after_every_refused_add_answers_0_and_changes_nothing() {
    let node = Node::new(1, 2);
    let ipam = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
    // Another container's live attachment, which no DEL here may touch.
    let live = node.pod("live");
    let live_add = Req::new(
        "ADD",
        "c-live",
        &live,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[1].pci, ipam.clone()),
    );
    node.cni(&live_add).ok();
    // The pod's own interface net1, there before any ADD.
    let pod = node.pod("p");
    let ns = Node::ns_of(&pod);
    sh(&format!(
        "ip -n {ns} link add net1 type veth peer name own-peer"
    ));
    let good = Req::new(
        "ADD",
        "c-refused",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[0].pci, ipam),
    );
    for case in CASES {
        let add = (case.make)(&node, good.clone());
        let before = snapshot(&node, &pod);
        let refused = node.cni(&add);
        assert!(
            !refused.success && refused.code().is_some(),
            "{}: ADD must be refused: {}",
            case.what,
            refused.stdout
        );
        assert_eq!(
            snapshot(&node, &pod),
            before,
            "{}: a refused ADD changes nothing",
            case.what
        );
        let del = node.cni(&add.cmd("DEL"));
        assert!(
            del.success && del.stdout.trim().is_empty(),
            "{}: DEL after the refused ADD must answer 0 and print nothing: {}\n{}",
            case.what,
            del.stdout,
            del.stderr
        );
        assert_eq!(
            snapshot(&node, &pod),
            before,
            "{}: that DEL changes nothing",
            case.what
        );
    }
    assert!(
        node.link(&Node::ns_of(&live), "net1").is_some(),
        "the live attachment is untouched"
    );
    node.cni(&live_add.cmd("DEL")).ok();
}

/// With a record, DEL detaches what the record says even when today's
/// config no longer validates (the NAD was edited, or a newer field is
/// unknown): the record holds all teardown needs.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn del_with_a_record_and_a_config_that_no_longer_validates_gives_everything_back() {
    let node = Node::new(1, 1);
    let before = node.link(&node.host(), &node.vfs[0].ifname).unwrap();
    let pod = node.pod("p");
    let ipam = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
    let add = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[0].pci, ipam),
    );
    node.cni(&add).ok();
    for (what, edit) in [
        ("an mtu the NAD now has wrong", json!({"mtu": 70000})),
        (
            "a pool that no longer validates",
            json!({"ipam": {"type": "railcni-ipam", "cidr": "nonsense"}}),
        ),
    ] {
        let mut conf = add.conf.clone();
        for (k, v) in edit.as_object().unwrap() {
            conf[k] = v.clone();
        }
        let del = node.cni(&add.cmd("DEL").with_conf(conf));
        assert!(del.success, "{what}: {}\n{}", del.stdout, del.stderr);
    }
    assert_eq!(
        node.link(&node.host(), &node.vfs[0].ifname),
        Some(before),
        "the VF is home"
    );
    assert!(!node.record_exists(&node.vfs[0].pci), "the record is gone");
    let leases = std::fs::read_to_string(node.state_dir().join("ipam/rail1.leases.json"))
        .unwrap_or_default();
    assert!(!leases.contains("c1"), "the lease is released: {leases}");
}
