//! `rdmaQoS` and the RoCE v2 GID check on the fake node: the RDMA device's
//! traffic class (`tc/<port>/traffic_class` in the fake sysfs) and
//! rdma_cm's default ToS (a configfs tree under the node's dir), each set
//! by ADD and put back exactly by DEL, rollback and a DEL after a crash.
//! Real configfs (the group made by mkdir, removed on DEL) and the real
//! GID table are proven on the emulated node (tests/vm/scenarios/rdma-qos.sh,
//! gids.sh).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Give `vf` the RoCE device `name` with port 1, a traffic class file
/// holding `tc` (none: not an mlx5 with NVIDIA's stack) and an rdma_cm
/// group holding `tos` (none: rdma_cm is not loaded).
fn roce_device(
    node: &Node,
    vf: &FakeVf,
    name: &str,
    tc: Option<&str>,
    tos: Option<&str>,
) -> PathBuf {
    node.give_rdma_device(vf, name);
    let dir = node
        .sysfs()
        .join(format!("devices/pci0000:00/{}/infiniband/{name}", vf.pci));
    std::fs::create_dir_all(dir.join("ports/1")).unwrap();
    if let Some(tc) = tc {
        std::fs::create_dir_all(dir.join("tc/1")).unwrap();
        std::fs::write(dir.join("tc/1/traffic_class"), tc).unwrap();
    }
    if let Some(tos) = tos {
        let port = node.configfs().join(format!("rdma_cm/{name}/ports/1"));
        std::fs::create_dir_all(&port).unwrap();
        std::fs::write(port.join("default_roce_tos"), tos).unwrap();
    }
    dir
}

/// Write the kernel's RoCE v2 entry for `addr` (IPv4) at `index`, after
/// the link-local pair at 0 and 1.
fn add_gid(dir: &std::path::Path, index: u32, addr: std::net::Ipv4Addr) {
    let port = dir.join("ports/1");
    for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        std::fs::create_dir_all(port.join(d)).unwrap();
    }
    let o = addr.octets();
    let entries = [
        (
            0,
            "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2".to_string(),
            "IB/RoCE v1",
        ),
        (
            1,
            "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2".to_string(),
            "RoCE v2",
        ),
        (
            index,
            format!(
                "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
                o[0], o[1], o[2], o[3]
            ),
            "RoCE v2",
        ),
    ];
    for (i, gid, kind) in entries {
        std::fs::write(port.join(format!("gids/{i}")), format!("{gid}\n")).unwrap();
        std::fs::write(
            port.join(format!("gid_attrs/types/{i}")),
            format!("{kind}\n"),
        )
        .unwrap();
        std::fs::write(port.join(format!("gid_attrs/ndevs/{i}")), "net1\n").unwrap();
    }
}

/// An empty GID table: the port exists, no address has an entry yet.
fn empty_gids(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("ports/1/gids")).unwrap();
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tc_file(dir: &std::path::Path) -> PathBuf {
    dir.join("tc/1/traffic_class")
}

fn tos_file(node: &Node, dev: &str) -> PathBuf {
    node.configfs()
        .join(format!("rdma_cm/{dev}/ports/1/default_roce_tos"))
}

/// One VF with the RoCE device mlx5_2 (its class and ToS as
/// `roce_device` takes them), RDMA in exclusive mode, and a pod.
struct Rig {
    node: Node,
    dir: PathBuf,
    pod: String,
}

impl Rig {
    fn new(tc: Option<&str>, tos: Option<&str>) -> Rig {
        let node = Node::new(1, 1);
        let dir = roce_device(&node, &node.vfs[0], "mlx5_2", tc, tos);
        node.set_hardware(json!({"rdmaMode": "exclusive"}));
        let pod = node.pod("pod");
        Rig { node, dir, pod }
    }

    fn vf(&self) -> &FakeVf {
        &self.node.vfs[0]
    }

    /// The usual ADD: rail1's embedded IPAM, `{"tos": 96, "tc": 96}`.
    fn add_spectrum_x(&self, cid: &str) -> Req {
        qos_add(
            self.vf(),
            cid,
            &self.pod,
            Node::embedded_ipam(1),
            json!({"tos": 96, "tc": 96}),
        )
    }
}

/// ADD of `vf` as net1 of container `cid` in `pod`, with `rdma: required`.
fn qos_add(vf: &FakeVf, cid: &str, pod: &str, ipam: Value, qos: Value) -> Req {
    Req::new("ADD", cid, pod, "net1", qos_conf(vf, ipam, qos))
}

const RAIL1_ADDR: std::net::Ipv4Addr = std::net::Ipv4Addr::new(172, 16, 0, 0);

fn qos_conf(vf: &FakeVf, ipam: Value, qos: Value) -> Value {
    let mut c = conf("1.1.0", "rail1", &vf.pci, ipam);
    c["rdma"] = json!("required");
    c["rdmaQoS"] = qos;
    c
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn unset_then_set_then_del_puts_back_unset_and_the_old_tos() {
    let rig = Rig::new(Some(""), Some("0"));
    let (node, vf, dir, pod) = (&rig.node, rig.vf(), &rig.dir, &rig.pod);
    add_gid(dir, 3, RAIL1_ADDR);
    let mut c = qos_conf(vf, Node::embedded_ipam(1), json!({"tos": 96, "tc": 96}));
    let devinfo = node.dir.path().join("devinfo");
    let info_file = devinfo.join("rail1-c1-net1.json");
    c["runtimeConfig"] = json!({"CNIDeviceInfoFile": info_file.display().to_string()});
    let mut add = Req::new("ADD", "c1", pod, "net1", c);
    add.env
        .push(("RAILCNI_DEVINFO_DIR".into(), devinfo.display().to_string()));
    let r = node.cni(&add).ok();
    let info: Value = serde_json::from_str(&read(info_file)).unwrap();
    assert_eq!(
        (
            &info["pci"]["rdma-gid-index"],
            &info["pci"]["rdma-traffic-class"],
            &info["pci"]["rdma-tos"]
        ),
        (&json!(3), &json!(96), &json!(96)),
        "{info}"
    );
    let iface = &r["interfaces"][0];
    assert_eq!(
        (&iface["trafficClass"], &iface["tos"], &iface["gidIndex"]),
        (&json!(96), &json!(96), &json!(3)),
        "{r}"
    );
    assert_eq!(read(tc_file(dir)), "96");
    assert_eq!(read(tos_file(node, "mlx5_2")), "96");
    let record: Value = serde_json::from_str(&read(
        node.state_dir()
            .join(format!("attachments/{}.json", vf.pci)),
    ))
    .unwrap();
    assert_eq!(
        record["rdmaQos"],
        json!({"device": "mlx5_2", "port": 1,
               "trafficClass": {"value": 96, "before": null},
               "tos": {"value": 96, "before": 0}})
    );
    // Every write went through the hardware layer, the class before the
    // device moved and the ToS after it.
    let roce_calls = |hw: Value| -> Vec<String> {
        let calls = hw["calls"].as_array().cloned().unwrap_or_default();
        (calls.iter().filter_map(Value::as_str))
            .filter(|c| c.starts_with("set_roce") || c.starts_with("move_rdma"))
            .map(|c| c.split(" ns:").next().unwrap_or(c).to_string())
            .collect()
    };
    assert_eq!(
        roce_calls(node.hardware()),
        [
            "set_roce mlx5_2 1 traffic class 96 (DSCP 24, ECN 0)",
            "move_rdma mlx5_2",
            "set_roce mlx5_2 1 rdma_cm group present",
            "set_roce mlx5_2 1 rdma_cm default ToS 96 (DSCP 24, ECN 0)",
        ]
    );
    // CHECK agrees with what is there.
    node.cni(&add.cmd("CHECK").with_conf(with_prev(&add.conf, &r)))
        .ok();

    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(dir)), "-1", "unset again, not 0");
    assert_eq!(read(tos_file(node, "mlx5_2")), "0");
    // Put back once the device is home, newest first, by the same layer.
    assert_eq!(
        roce_calls(node.hardware())[4..],
        [
            "move_rdma mlx5_2",
            "set_roce mlx5_2 1 rdma_cm default ToS 0 (DSCP 0, ECN 0)",
            "set_roce mlx5_2 1 rdma_cm group present",
            "set_roce mlx5_2 1 traffic class unset",
        ]
    );
    assert!(!node.record_exists(&vf.pci));
    // A second DEL has nothing left to detach.
    node.cni(&add.cmd("DEL")).ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_class_that_was_set_comes_back_and_asking_nothing_writes_nothing() {
    let rig = Rig::new(Some("Global tclass=24\n"), Some("32"));
    let (node, vf, dir, pod) = (&rig.node, rig.vf(), &rig.dir, &rig.pod);
    let add = qos_add(vf, "c1", pod, json!({}), json!({"tc": 106}));
    let r = node.cni(&add).ok();
    assert!(
        r["interfaces"][0].get("tos").is_none(),
        "only the class was asked"
    );
    assert_eq!(read(tc_file(dir)), "106");
    assert_eq!(
        read(tos_file(node, "mlx5_2")),
        "32",
        "the ToS was not asked for"
    );
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(dir)), "24");

    // No rdmaQoS: neither file is written (a marker that a write would replace).
    std::fs::write(tc_file(dir), "untouched").unwrap();
    let mut c = qos_conf(vf, json!({}), json!(null));
    c.as_object_mut().unwrap().remove("rdmaQoS");
    let add = Req::new("ADD", "c2", pod, "net1", c);
    let r = node.cni(&add).ok();
    assert!(r["interfaces"][0].get("trafficClass").is_none());
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(dir)), "untouched");
    assert_eq!(read(tos_file(node, "mlx5_2")), "32");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_device_without_a_traffic_class_is_refused_when_required_and_skipped_when_auto() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    // No tc/: not NVIDIA's mlx5 stack.
    roce_device(&node, vf, "mlx5_2", None, Some("0"));
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let pod = node.pod("pod");
    let qos = json!({"tos": 96, "tc": 96});
    let e = node
        .cni(&qos_add(
            vf,
            "c1",
            &pod,
            Node::embedded_ipam(1),
            qos.clone(),
        ))
        .err(103);
    let msg = e["details"].as_str().unwrap();
    assert!(
        msg.contains("no tc/1/traffic_class") && msg.contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(
        node.link(&node.host(), &vf.ifname),
        Some(before),
        "the VF never moved"
    );
    assert_eq!(read(tos_file(&node, "mlx5_2")), "0");
    assert!(!node.record_exists(&vf.pci));

    let mut c = qos_conf(vf, json!({}), qos);
    c["rdma"] = json!("auto");
    let add = Req::new("ADD", "c2", &pod, "net1", c);
    let reply = node.cni(&add);
    assert!(
        reply.stderr.contains("no tc/1/traffic_class"),
        "{}",
        reply.stderr
    );
    let r = reply.ok();
    assert!(r["interfaces"][0].get("trafficClass").is_none());
    assert_eq!(r["interfaces"][0]["tos"], 96);
    assert_eq!(read(tos_file(&node, "mlx5_2")), "96");
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tos_file(&node, "mlx5_2")), "0");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_failed_move_after_the_class_was_written_puts_it_back() {
    let rig = Rig::new(Some(""), Some("8"));
    let (node, vf, dir) = (&rig.node, rig.vf(), &rig.dir);
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    node.set_hardware(json!({"rdmaMode": "exclusive", "refuse": {"moveRdmaOnce": "EBUSY"}}));
    let add = rig.add_spectrum_x("c1");
    let e = node.cni(&add).err_any();
    assert!(e["details"].as_str().unwrap().contains("EBUSY"), "{e}");
    assert_eq!(
        read(tc_file(dir)),
        "-1",
        "the class written before the move is unset again"
    );
    assert_eq!(read(tos_file(node, "mlx5_2")), "8");
    assert_eq!(node.link(&node.host(), &vf.ifname), Some(before));
    assert!(!node.record_exists(&vf.pci));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_crash_after_the_first_write_is_undone_by_del() {
    assert!(
        std::process::Command::new("strace")
            .arg("-V")
            .output()
            .is_ok(),
        "strace is needed (scripts/install-test-deps.sh installs it)"
    );
    let rig = Rig::new(Some("Global tclass=24\n"), Some("0"));
    let (node, vf, dir) = (&rig.node, rig.vf(), &rig.dir);
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let add = rig.add_spectrum_x("c1");
    // Killed as it opens the ToS file to write it (the first open read it,
    // before any change): the class is written, the VF moved.
    let tos = tos_file(node, "mlx5_2");
    let mut crashed = add.clone();
    crashed.wrap = ["strace", "-f", "-qq", "-o", "/dev/null", "-P"]
        .map(String::from)
        .to_vec();
    crashed.wrap.push(tos.display().to_string());
    crashed.wrap.extend(
        [
            "-e",
            "trace=openat",
            "-e",
            "inject=openat:signal=SIGKILL:when=2",
        ]
        .map(String::from),
    );
    let reply = node.cni(&crashed);
    assert!(!reply.success, "the ADD was killed: {}", reply.stdout);
    assert_eq!(read(tc_file(dir)), "96", "the first write happened");
    assert!(node.record_exists(&vf.pci), "and the record saw it coming");

    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(dir)), "24");
    assert_eq!(read(tos), "0");
    assert_eq!(node.link(&node.host(), &vf.ifname), Some(before));
    assert!(!node.record_exists(&vf.pci));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_pods_on_two_vfs_of_one_pf_keep_their_own_classes() {
    let node = Node::new(1, 2);
    let (a, b) = (&node.vfs[0], &node.vfs[1]);
    let dir_a = roce_device(&node, a, "mlx5_2", Some(""), Some("0"));
    let dir_b = roce_device(&node, b, "mlx5_3", Some(""), Some("0"));
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let (pod_a, pod_b) = (node.pod("a"), node.pod("b"));
    let add_a = Req::new(
        "ADD",
        "ca",
        &pod_a,
        "net1",
        qos_conf(a, json!({}), json!({"tc": 96, "tos": 96})),
    );
    let add_b = Req::new(
        "ADD",
        "cb",
        &pod_b,
        "net1",
        qos_conf(b, json!({}), json!({"tc": 106, "tos": 106})),
    );
    node.cni(&add_a).ok();
    node.cni(&add_b).ok();
    assert_eq!(
        (read(tc_file(&dir_a)), read(tc_file(&dir_b))),
        ("96".into(), "106".into())
    );
    assert_eq!(
        (
            read(tos_file(&node, "mlx5_2")),
            read(tos_file(&node, "mlx5_3"))
        ),
        ("96".into(), "106".into())
    );
    let (code, metrics, err) = node.operator(&["metrics"]);
    assert_eq!(code, 0, "{err}");
    let sample = |name: &str, dev: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with(&format!("{name}{{")) && l.contains(&format!("rdma_device=\"{dev}\""))
            })
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    assert_eq!(
        sample("railcni_rdma_traffic_class", "mlx5_2").as_deref(),
        Some("96"),
        "{metrics}"
    );
    assert_eq!(
        sample("railcni_rdma_traffic_class", "mlx5_3").as_deref(),
        Some("106")
    );
    assert_eq!(sample("railcni_rdma_tos", "mlx5_3").as_deref(), Some("106"));
    node.cni(&add_a.cmd("DEL")).ok();
    assert_eq!(
        (read(tc_file(&dir_a)), read(tc_file(&dir_b))),
        ("-1".into(), "106".into())
    );
    assert_eq!(
        read(tos_file(&node, "mlx5_3")),
        "106",
        "the other pod's ToS stays"
    );
    node.cni(&add_b.cmd("DEL")).ok();
    assert_eq!(read(tc_file(&dir_b)), "-1");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn add_waits_for_the_roce_v2_gid_and_fails_naming_it_when_it_never_comes() {
    let rig = Rig::new(Some(""), Some("0"));
    let (node, vf, dir, pod) = (&rig.node, rig.vf(), &rig.dir, &rig.pod);
    empty_gids(dir);
    let mut c = qos_conf(vf, Node::embedded_ipam(1), json!({"tc": 96, "tos": 96}));
    c["checks"] = json!({"roceGidTimeoutMs": 300});
    let add = Req::new("ADD", "c1", pod, "net1", c.clone());
    let e = node.cni(&add).err(108);
    let msg = e["details"].as_str().unwrap();
    assert!(
        msg.contains("no RoCE v2 GID for 172.16.0.0 after 300 ms (its table holds: nothing)")
            && msg.contains("mlx5_2"),
        "{e}"
    );
    // Rolled back: both halves as they were, the VF home, no record.
    assert_eq!(read(tc_file(dir)), "-1");
    assert_eq!(read(tos_file(node, "mlx5_2")), "0");
    assert!(!node.record_exists(&vf.pci));

    // The kernel adds the entry a while after the address: ADD waits for it.
    c["checks"] = json!({"roceGidTimeoutMs": 5000});
    let add = Req::new("ADD", "c2", pod, "net1", c);
    let writer = {
        let dir = dir.clone();
        let pod_ns = Node::ns_of(pod);
        std::thread::spawn(move || {
            let start = Instant::now();
            // Once the address is on net1, as the kernel would.
            while addresses_in(&pod_ns, "net1").is_empty()
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(150));
            add_gid(&dir, 2, RAIL1_ADDR);
        })
    };
    let r = node.cni(&add).ok();
    writer.join().unwrap();
    assert_eq!(r["interfaces"][0]["gidIndex"], 2);
    node.cni(&add.cmd("DEL")).ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rdma_qos_is_refused_on_infiniband_and_without_rdma() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let mut c = qos_conf(vf, json!({}), json!({"tc": 96}));
    c["rdma"] = json!("off");
    let e = node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err(7);
    assert!(
        e["details"].as_str().unwrap().contains("rdma is off"),
        "{e}"
    );
    let c = qos_conf(vf, json!({}), json!({"tos": 300}));
    let e = node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err(7);
    assert!(
        e["msg"].as_str().unwrap_or("").contains("rdmaQoS.tos")
            || e["details"].as_str().unwrap().contains("rdmaQoS.tos"),
        "{e}"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn check_and_inspect_compare_the_classes_and_the_gid_table() {
    let rig = Rig::new(Some(""), Some("0"));
    let (node, dir, pod) = (&rig.node, &rig.dir, &rig.pod);
    add_gid(dir, 3, RAIL1_ADDR);
    let add = rig.add_spectrum_x("c1");
    let r = node.cni(&add).ok();
    let check = add.cmd("CHECK").with_conf(with_prev(&add.conf, &r));
    node.cni(&check).ok();
    let (code, report) = node.operator_json(&["inspect", pod]);
    assert_eq!(code, 0, "{report}");
    let whats: Vec<&str> = report["interfaces"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["what"].as_str().unwrap())
        .collect();
    for line in [
        "rdma mlx5_2 traffic_class",
        "rdma_cm mlx5_2 default_roce_tos",
        "gid 172.16.0.0 RoCE v2 index",
    ] {
        assert!(whats.contains(&line), "{line}: {whats:?}");
    }

    // Someone reset the class and the GID moved: both are named.
    std::fs::write(tc_file(dir), "").unwrap();
    add_gid(dir, 5, RAIL1_ADDR);
    std::fs::remove_file(dir.join("ports/1/gids/3")).unwrap();
    let e = node.cni(&check).err(107);
    let msg = e["details"].as_str().unwrap();
    assert!(
        msg.contains("rdma mlx5_2 traffic_class is unset, expected 96")
            && msg.contains("gid 172.16.0.0 RoCE v2 index is 5, expected 3"),
        "{e}"
    );
    let (code, report) = node.operator_json(&["inspect", pod]);
    assert_eq!((code, &report["drift"]), (1, &json!(true)), "{report}");
    node.cni(&add.cmd("DEL")).ok();
}

/// CHECK and inspect only look (#58): with rdma_cm's group for the device
/// gone, they say its ToS is unknown and why, and make no group to read it
/// (an inotify watch on configfs's rdma_cm/ sees nothing made or removed).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn check_and_inspect_make_and_remove_nothing_in_configfs() {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let rig = Rig::new(Some(""), Some("0"));
    let (node, pod) = (&rig.node, &rig.pod);
    let add = rig.add_spectrum_x("c1");
    let r = node.cni(&add).ok();
    let rdma_cm = node.configfs().join("rdma_cm");
    std::fs::remove_dir_all(rdma_cm.join("mlx5_2")).unwrap();
    let before = out(&format!("find {} | sort", node.configfs().display()));

    let watch = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
    watch
        .add_watch(
            &rdma_cm,
            AddWatchFlags::IN_CREATE | AddWatchFlags::IN_DELETE | AddWatchFlags::IN_MODIFY,
        )
        .unwrap();
    let check = add.cmd("CHECK").with_conf(with_prev(&add.conf, &r));
    let e = node.cni(&check).err(107);
    assert!(
        e["details"]
            .as_str()
            .unwrap()
            .contains("unknown: rdma_cm has no group for mlx5_2"),
        "{e}"
    );
    let (_, report) = node.operator_json(&["inspect", pod]);
    assert!(
        report
            .to_string()
            .contains("reading its ToS would make one"),
        "{report}"
    );
    let events = watch.read_events().unwrap_or_default();
    assert!(
        events.is_empty(),
        "CHECK and inspect changed configfs: {events:?}"
    );
    assert_eq!(
        out(&format!("find {} | sort", node.configfs().display())),
        before
    );
    // What mkdir of the group gives in the real configfs, for DEL's restore.
    std::fs::create_dir_all(rdma_cm.join("mlx5_2/ports/1")).unwrap();
    node.cni(&add.cmd("DEL")).ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn nccl_env_names_the_class_and_gid_when_the_rails_agree_and_the_disagreement_when_not() {
    let node = Node::new(2, 1);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let addrs = [RAIL1_ADDR, std::net::Ipv4Addr::new(172, 18, 0, 0)];
    let dirs: Vec<PathBuf> = node
        .vfs
        .iter()
        .zip(["mlx5_3", "mlx5_7"])
        .zip(addrs)
        .map(|((vf, dev), addr)| {
            let dir = roce_device(&node, vf, dev, Some(""), Some("0"));
            add_gid(&dir, 3, addr);
            dir
        })
        .collect();
    let add = |pod: &str, classes: [u8; 2]| {
        for (vf, class) in node.vfs.iter().zip(classes) {
            let mut c = conf(
                "1.1.0",
                &format!("rail{}", vf.rail),
                &vf.pci,
                Node::embedded_ipam(vf.rail),
            );
            c["rdma"] = json!("required");
            c["rdmaQoS"] = json!({"tc": class, "tos": class});
            node.cni(&Req::new(
                "ADD",
                "trainer",
                pod,
                &format!("net{}", vf.rail),
                c,
            ))
            .ok();
        }
    };
    let pod = node.pod("p");
    add(&pod, [96, 96]);
    let (code, text, err) = node.operator(&["nccl-env", &pod, "--gid-index"]);
    assert_eq!(code, 0, "{text}{err}");
    for line in [
        "NCCL_IB_TC=96",
        "UCX_IB_TRAFFIC_CLASS=96",
        "NCCL_IB_GID_INDEX=3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
    // Without --gid-index NCCL (2.21+) chooses each GID by the family printed.
    let (_, text, _) = node.operator(&["nccl-env", &pod]);
    assert!(!text.contains("NCCL_IB_GID_INDEX"), "{text}");
    assert!(
        text.lines().any(|l| l == "NCCL_IB_ADDR_FAMILY=AF_INET"),
        "{text}"
    );
    assert!(
        !text.contains("NCCL_IB_FIFO_TC"),
        "only where asked: {text}"
    );
    let (_, v) = node.operator_json(&["nccl-env", &pod, "--fifo-tc"]);
    assert!(
        v["env"]
            .as_array()
            .unwrap()
            .contains(&json!(["NCCL_IB_FIFO_TC", "96"])),
        "{v}"
    );
    assert_eq!(v["rails"][1]["trafficClass"], 96);
    assert_eq!(v["rails"][1]["gidIndex"], 3);
    let (_, v) = node.operator_json(&["nccl-env", &pod, "--fifo-tc", "104"]);
    assert!(
        v["env"]
            .as_array()
            .unwrap()
            .contains(&json!(["NCCL_IB_FIFO_TC", "104"])),
        "{v}"
    );
    for vf in &node.vfs {
        let del = Req::new(
            "DEL",
            "trainer",
            &pod,
            &format!("net{}", vf.rail),
            conf(
                "1.1.0",
                &format!("rail{}", vf.rail),
                &vf.pci,
                Node::embedded_ipam(vf.rail),
            ),
        );
        node.cni(&del).ok();
    }

    // Rail 2 on another class, its GID elsewhere: both named, neither printed.
    add_gid(&dirs[1], 4, addrs[1]);
    std::fs::remove_file(dirs[1].join("ports/1/gids/3")).unwrap();
    let pod = node.pod("q");
    add(&pod, [96, 106]);
    let (code, text, err) = node.operator(&["nccl-env", &pod, "--gid-index"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        err.contains("disagree on their traffic class (net1 96, net2 106)"),
        "{err}"
    );
    assert!(err.contains("different indexes (net1 3, net2 4)"), "{err}");
    assert!(
        !text.contains("NCCL_IB_TC=") && !text.contains("NCCL_IB_GID_INDEX="),
        "{text}"
    );
}

/// `railcnictl plan` with per-rail QoS: its NADs carry it, its node file
/// says the same, and the pod's rails then tell NCCL that class.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_plans_rdma_qos_reaches_the_nads_the_node_file_and_nccl_env() {
    let node = Node::new(2, 1);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let plan_file = node.dir.path().join("plan.yaml");
    std::fs::write(
        &plan_file,
        "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, rdmaQoS: {tos: 96, tc: 96}, rdma: required}\n  \
         - {name: rail2, cidr: 172.18.0.0/15, rdmaQoS: {tos: 96, tc: 96}, rdma: required}\nnodes: [gpu-0]\n",
    )
    .unwrap();
    let plan = |args: &[&str]| plan_emit(&plan_file, args);
    let configs = nad_configs(&plan(&["--emit", "nads"]));
    let node_file = node.dir.path().join("node.json");
    std::fs::write(
        &node_file,
        plan(&["--emit", "node-file", "--node", "gpu-0"]),
    )
    .unwrap();
    let file: Value = serde_json::from_str(&read(node_file.clone())).unwrap();
    for (conf, rail) in configs.iter().zip(["rail1", "rail2"]) {
        assert_eq!(conf["rdmaQoS"], json!({"tos": 96, "tc": 96}), "{conf}");
        assert_eq!(file["networks"][rail]["rdmaQoS"], conf["rdmaQoS"], "{file}");
    }
    let pod = node.pod("p");
    let addrs = [RAIL1_ADDR, std::net::Ipv4Addr::new(172, 18, 0, 0)];
    let mut dirs = Vec::new();
    for ((vf, conf), (dev, addr)) in node
        .vfs
        .iter()
        .zip(&configs)
        .zip(["mlx5_3", "mlx5_7"].into_iter().zip(addrs))
    {
        let dir = roce_device(&node, vf, dev, Some(""), Some("0"));
        add_gid(&dir, 3, addr);
        let mut c = conf.clone();
        c["deviceID"] = json!(vf.pci);
        let mut add = Req::new("ADD", "trainer", &pod, &format!("net{}", vf.rail), c);
        add.env.push((
            "RAILCNI_NODE_CONFIG".into(),
            node_file.display().to_string(),
        ));
        let r = node.cni(&add).ok();
        assert_eq!(r["ips"][0]["address"], format!("{addr}/31"));
        assert_eq!(read(tc_file(&dir)), "96");
        dirs.push((add, dir));
    }
    let (code, text, err) = node.operator(&["nccl-env", &pod]);
    assert_eq!(code, 0, "{err}");
    assert!(text.lines().any(|l| l == "NCCL_IB_TC=96"), "{text}");
    for (add, dir) in dirs {
        node.cni(&add.cmd("DEL")).ok();
        assert_eq!(read(tc_file(&dir)), "-1");
    }
}

/// A driver reload gives the VF back to the host with a new RDMA device
/// that holds no QoS; the re-attach (gc here, the agent's link watch on a
/// node) sets both halves again, and DEL then gives back what the new
/// device held.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_reattach_after_a_driver_reload_sets_the_classes_again() {
    let rig = Rig::new(Some("Global tclass=24\n"), Some("8"));
    let (node, vf, dir, pod) = (&rig.node, rig.vf(), &rig.dir, &rig.pod);
    let add = rig.add_spectrum_x("c1");
    node.cni(&add).ok();
    // The reload: a new netdev (a new ifindex: the old one is taken, so the
    // kernel renumbers it) on the host, the device's QoS forgotten.
    node.reload_netdev(pod, "net1", &vf.ifname);
    node.reload_rdma_device("mlx5_2");
    std::fs::write(tc_file(dir), "").unwrap();
    std::fs::write(tos_file(node, "mlx5_2"), "0").unwrap();
    let (code, done) = node.operator_json(&["gc", "--apply"]);
    assert_eq!(code, 0, "{done}");
    assert!(
        link_in(&Node::ns_of(pod), "net1").is_some(),
        "re-attached: {done}"
    );
    assert_eq!(read(tc_file(dir)), "96");
    assert_eq!(read(tos_file(node, "mlx5_2")), "96");
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(
        read(tc_file(dir)),
        "-1",
        "what the new device held, not the old one's 24"
    );
    assert_eq!(read(tos_file(node, "mlx5_2")), "0");
}

/// After a reboot the driver has been reloaded: nothing railcni set is
/// left, and what the new boot set (here an administrator's class) is not
/// overwritten with the old boot's "before".
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_record_of_an_earlier_boot_gives_back_no_qos() {
    let rig = Rig::new(Some("Global tclass=24\n"), Some("8"));
    let (node, vf, dir, pod) = (&rig.node, rig.vf(), &rig.dir, &rig.pod);
    let add = qos_add(vf, "c1", pod, json!({}), json!({"tos": 96, "tc": 96}));
    node.cni(&add).ok();
    node.reboot("boot-2");
    std::fs::write(tc_file(dir), "Global tclass=40\n").unwrap();
    std::fs::write(tos_file(node, "mlx5_2"), "16").unwrap();
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(dir)), "Global tclass=40\n");
    assert_eq!(read(tos_file(node, "mlx5_2")), "16");
    assert!(!node.record_exists(&vf.pci));
}

/// A multi-port RDMA device (ConnectX-8 in multiplane mode: one device, a
/// port per plane netdev) whose third port carries the VF: ADD waits for
/// the GID on port 3, `rdmaQoS` writes port 3's traffic class and rdma_cm
/// ToS, the record keeps the port, and `nccl-env` names `mlx5_10:3`. Ports
/// 1 and 2 belong to other netdevs and are left alone.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_multi_port_device_is_served_on_the_port_that_carries_the_vf() {
    let node = Node::new(1, 1);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let vf = &node.vfs[0];
    node.give_rdma_device(vf, "mlx5_10");
    let dir = node
        .sysfs()
        .join(format!("devices/pci0000:00/{}/infiniband/mlx5_10", vf.pci));
    for port in 1..=3 {
        let p = dir.join(format!("ports/{port}"));
        for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        std::fs::create_dir_all(dir.join(format!("tc/{port}"))).unwrap();
        std::fs::write(dir.join(format!("tc/{port}/traffic_class")), "").unwrap();
        let cm = node
            .configfs()
            .join(format!("rdma_cm/mlx5_10/ports/{port}"));
        std::fs::create_dir_all(&cm).unwrap();
        std::fs::write(cm.join("default_roce_tos"), "0").unwrap();
        // Each port's link-local pair names its own netdev (the VF's: port 3).
        let ndev = if port == 3 {
            vf.ifname.clone()
        } else {
            format!("plane{port}")
        };
        for (i, kind) in [(0, "IB/RoCE v1"), (1, "RoCE v2")] {
            std::fs::write(
                p.join(format!("gids/{i}")),
                "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2\n",
            )
            .unwrap();
            std::fs::write(p.join(format!("gid_attrs/types/{i}")), format!("{kind}\n")).unwrap();
            std::fs::write(p.join(format!("gid_attrs/ndevs/{i}")), format!("{ndev}\n")).unwrap();
        }
    }
    // The kernel adds the address's RoCE v2 entry on port 3 once it is there.
    let port3 = dir.join("ports/3");
    let pod = node.pod("pod");
    let writer = {
        let (port3, pod_ns) = (port3.clone(), Node::ns_of(&pod));
        std::thread::spawn(move || {
            let start = Instant::now();
            while addresses_in(&pod_ns, "net1").is_empty()
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            let gid = "0000:0000:0000:0000:0000:ffff:ac10:0000\n";
            std::fs::write(port3.join("gids/2"), gid).unwrap();
            std::fs::write(port3.join("gid_attrs/types/2"), "RoCE v2\n").unwrap();
            std::fs::write(port3.join("gid_attrs/ndevs/2"), "net1\n").unwrap();
        })
    };
    let mut c = qos_conf(vf, Node::embedded_ipam(1), json!({"tc": 96, "tos": 96}));
    c["checks"] = json!({"roceGid": "require", "roceGidTimeoutMs": 5000});
    let add = Req::new("ADD", "c1", &pod, "net1", c);
    let r = node.cni(&add).ok();
    writer.join().unwrap();
    assert_eq!(r["interfaces"][0]["gidIndex"], 2, "the GID on port 3: {r}");
    assert_eq!(read(dir.join("tc/3/traffic_class")), "96");
    assert_eq!(
        read(
            node.configfs()
                .join("rdma_cm/mlx5_10/ports/3/default_roce_tos")
        ),
        "96"
    );
    for port in [1, 2] {
        assert_eq!(
            read(dir.join(format!("tc/{port}/traffic_class"))),
            "",
            "port {port} untouched"
        );
    }
    let (_, text, _) = node.operator(&["nccl-env", &pod]);
    assert!(
        text.lines().any(|l| l == "NCCL_IB_HCA==mlx5_10:3"),
        "{text}"
    );
    // The metrics carry the VF's port's counters, not the other planes'.
    for port in [1, 3] {
        let counters = dir.join(format!("ports/{port}/counters"));
        std::fs::create_dir_all(&counters).unwrap();
        std::fs::write(counters.join("port_xmit_data"), format!("{port}000\n")).unwrap();
    }
    let (_, metrics, _) = node.operator(&["metrics"]);
    let xmit: Vec<&str> = (metrics.lines())
        .filter(|l| l.starts_with("railcni_rdma_port_xmit_data{"))
        .collect();
    assert!(
        xmit.len() == 1 && xmit[0].contains("port=\"3\"") && xmit[0].ends_with(" 3000"),
        "{xmit:?}"
    );
    assert!(
        text.lines().any(|l| l == "UCX_NET_DEVICES=mlx5_10:3"),
        "{text}"
    );
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(
        read(
            node.configfs()
                .join("rdma_cm/mlx5_10/ports/3/default_roce_tos")
        ),
        "0"
    );
}

/// Shared netns mode: the VF's RDMA device stays on the host and serves the
/// pod from there; the record says so, and `nccl-env` names it with its port
/// (not "no RDMA device" beside an empty list).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_device_serving_the_pod_from_the_host_is_the_rails_hca() {
    let node = Node::new(1, 1);
    node.set_hardware(json!({"rdmaMode": "shared"}));
    let vf = &node.vfs[0];
    let dir = roce_device(&node, vf, "mlx5_3", None, None);
    add_gid(&dir, 3, RAIL1_ADDR);
    let pod = node.pod("pod");
    let mut c = conf("1.1.0", "rail1", &vf.pci, Node::embedded_ipam(1));
    c["rdma"] = json!("auto");
    let add = Req::new("ADD", "c1", &pod, "net1", c);
    node.cni(&add).ok();
    let (code, text, err) = node.operator(&["nccl-env", &pod]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.lines().any(|l| l == "NCCL_IB_HCA==mlx5_3:1"), "{text}");
    assert!(text.contains("mlx5_3 (shared)"), "{text}");
    let (_, v) = node.operator_json(&["inspect", &pod]);
    assert_eq!(v["interfaces"][0]["rdmaShared"], true, "{v}");
    node.cni(&add.cmd("DEL")).ok();
}

/// A whole-NIC rail's RoCE PF takes `rdmaQoS` on its own RDMA device as a
/// VF's does, and DEL gives back what the device held (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_whole_pfs_device_takes_the_classes_and_gives_them_back() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    let dir = roce_device(&node, &pf, "mlx5_0", Some(""), Some("0"));
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let file = node.dir.path().join("node.json");
    let grant = json!({"version": 1, "nodeName": "gpu-0", "networks": {"rail1": {
        "prefix": "172.16.0.0/31", "gateway": "172.16.0.1", "pf": "pf1", "wholeNic": true}}});
    std::fs::write(&file, grant.to_string()).unwrap();
    let pod = node.pod("pod");
    let mut add = qos_add(
        &pf,
        "c1",
        &pod,
        Node::embedded_ipam(1),
        json!({"tos": 96, "tc": 96}),
    );
    add.env
        .push(("RAILCNI_NODE_CONFIG".into(), file.display().to_string()));
    let r = node.cni(&add).ok();
    assert_eq!(r["interfaces"][0]["rdmaDevice"], "mlx5_0", "{r}");
    assert_eq!(
        (read(tc_file(&dir)), read(tos_file(&node, "mlx5_0"))),
        ("96".into(), "96".into())
    );
    assert!(link_in(&Node::ns_of(&pod), "net1").is_some());
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(read(tc_file(&dir)), "-1", "unset again");
    assert_eq!(read(tos_file(&node, "mlx5_0")), "0");
    assert!(link_in(&node.host(), "pf1").is_some());
}
