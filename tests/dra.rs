//! railcni run the way dra-driver-sriov's standalone mode runs it: libcni
//! inside the driver's container, whose only host paths are /opt/cni/bin,
//! /var/lib/cni and /var/run/netns (its /etc, /run, /var/log and the rest
//! of /var/lib are its own), with the NAD's config plus a top-level
//! `deviceID` (no pciBusID, no runtimeConfig), `vfnet0`, `vfnet1`… or the
//! claim's `ifName`, Multus-style CNI_ARGS and NODE_NAME from the downward
//! API. The node file is the installer's copy in /var/lib/cni/railcni/,
//! state and logs stay there, and a replaced container (a fresh mount
//! namespace) gives everything back on DEL. The same on real igb VFs is in
//! tests/vm/scenarios/dra.sh. Needs root.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::{json, Value};

/// The host's /var/lib/cni for this test, and the mount namespace a DRA
/// driver's container would give the plugin.
struct DriverContainer {
    var_lib_cni: PathBuf,
    keep: PathBuf,
}

impl DriverContainer {
    fn new(node: &Node, plan: &str) -> DriverContainer {
        let var_lib_cni = node.dir.path().join("host-var-lib-cni");
        std::fs::create_dir_all(var_lib_cni.join("railcni")).unwrap();
        let plan_file = node.dir.path().join("plan.yaml");
        std::fs::write(&plan_file, plan).unwrap();
        // What `railcnictl install` leaves in the state dir (its node-file copy).
        let (code, text, err) = node.operator(&[
            "plan",
            plan_file.to_str().unwrap(),
            "--emit",
            "node-file",
            "--node",
            "gpu-0",
        ]);
        assert_eq!(code, 0, "{err}");
        std::fs::write(var_lib_cni.join("railcni/node.json"), text).unwrap();
        DriverContainer {
            keep: node.dir.path().join("keep-netns"),
            var_lib_cni,
        }
    }

    /// A fresh "container" around each call: tmpfs over /etc, /run,
    /// /var/log and /var/lib, the three host paths bound back in.
    fn setup(&self) -> String {
        std::fs::create_dir_all(&self.keep).unwrap();
        format!(
            "mount --rbind /run/netns {keep}
             mount -t tmpfs dra-run /run && mkdir /run/netns && mount --move {keep} /run/netns
             mount -t tmpfs dra-etc /etc
             mount -t tmpfs dra-log /var/log
             mount -t tmpfs dra-lib /var/lib && mkdir /var/lib/cni && mount --bind {lib} /var/lib/cni",
            keep = self.keep.display(),
            lib = self.var_lib_cni.display()
        )
    }

    /// The driver's call: NAD config + deviceID, nothing railcni-specific
    /// in the environment but NODE_NAME (the stand-in sysfs and hardware
    /// excepted, which a real node does not need).
    fn call(&self, node: &Node, command: &str, pod: &str, ifname: &str, conf: &Value) -> Reply {
        self.call_from(node, "training", command, pod, ifname, conf)
    }

    /// As `call`, for a pod of `namespace` (the driver passes the NRI pod
    /// sandbox's namespace as K8S_POD_NAMESPACE, pkg/cni/cni.go).
    fn call_from(
        &self,
        node: &Node,
        namespace: &str,
        command: &str,
        pod: &str,
        ifname: &str,
        conf: &Value,
    ) -> Reply {
        let mut req = Req::new(command, "sandbox-0123", pod, ifname, conf.clone());
        req.args = Some(format!(
            "IgnoreUnknown=true;K8S_POD_NAMESPACE={namespace};K8S_POD_NAME=trainer-0;\
             K8S_POD_INFRA_CONTAINER_ID=sandbox-0123;K8S_POD_UID=8d1c5e2a"
        ));
        let mut req = req.in_mount_namespace(&self.setup());
        // Empty is unset: the defaults a driver's container gets.
        for k in [
            "RAILCNI_STATE_DIR",
            "RAILCNI_NODE_CONFIG",
            "RAILCNI_NODE_NAME",
            "RAILCNI_LOG_DIR",
            "RAILCNI_MACHINE_ID_FILE",
        ] {
            req.env.push((k.into(), String::new()));
        }
        req.env.push(("NODE_NAME".into(), "gpu-0".into()));
        node.cni_with_path(&req, &["/opt/cni/bin"])
    }
}

const PLAN: &str = "rails:
- {name: rail1, cidr: 172.16.0.0/15, routes: [172.16.0.0/12], mtu: 9000}
- {name: rail2, cidr: 172.18.0.0/15, routes: [172.16.0.0/12], mtu: 9000}
nodes: {gpu-0: 0, gpu-1: 1}
";

/// The NAD's spec.config as the driver sends it: deviceID added, nothing else.
fn nad_config(rail: u32, pci: &str) -> Value {
    json!({
        "cniVersion": "1.0.0",
        "name": format!("rail{rail}"),
        "type": "railcni",
        "mtu": 9000,
        "logFile": "/var/lib/cni/railcni/log/railcni.log",
        "ipam": {"type": "railcni-ipam", "cidr": format!("172.{}.0.0/15", 14 + 2 * rail),
                 "gatewayIndex": 1, "routes": [{"dst": "172.16.0.0/12"}]},
        "deviceID": pci,
    })
}

fn run_in_driver_container(ifnames: [&str; 2]) {
    let node = Node::new(2, 1);
    let driver = DriverContainer::new(&node, PLAN);
    let state = driver.var_lib_cni.join("railcni");
    let pod = node.pod("pod");
    let ns = Node::ns_of(&pod);
    let before: Vec<_> = (node.vfs.iter())
        .map(|vf| node.link(&node.host(), &vf.ifname).unwrap())
        .collect();
    for (i, vf) in node.vfs.iter().enumerate() {
        // The leaf's end of this node's /31 on the rail.
        sh(&format!(
            "ip -n {} addr add 172.{}.0.1/31 dev r{}v0",
            node.fabric(),
            14 + 2 * vf.rail,
            vf.rail
        ));
        let result = driver
            .call(
                &node,
                "ADD",
                &pod,
                ifnames[i],
                &nad_config(vf.rail, &vf.pci),
            )
            .ok();
        // What the driver copies into the ResourceClaim's networkData.
        let iface = result["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i.get("sandbox").is_some())
            .unwrap_or_else(|| panic!("no sandbox interface: {result:#}"));
        assert_eq!(iface["name"], ifnames[i]);
        assert_eq!(iface["sandbox"], pod.as_str());
        assert_eq!(iface["mac"], before[i].mac.as_str());
        let address = format!("172.{}.0.0/31", 14 + 2 * vf.rail);
        assert_eq!(result["ips"][0]["address"], address.as_str());
        assert_eq!(addresses_in(&ns, ifnames[i]), vec![address]);
        // Jumbo, don't fragment, through this rail's table.
        sh(&format!(
            "ip netns exec {ns} ping -c 1 -W 2 -M do -s 8972 -I {} 172.{}.0.1",
            ifnames[i],
            14 + 2 * vf.rail
        ));
        driver
            .call(
                &node,
                "CHECK",
                &pod,
                ifnames[i],
                &with_prev(&nad_config(vf.rail, &vf.pci), &result),
            )
            .ok();
    }
    // Everything railcni keeps is on the host's /var/lib/cni: the records,
    // the leases, the log.
    assert_eq!(
        std::fs::read_dir(state.join("attachments"))
            .unwrap()
            .count(),
        2
    );
    assert!(state.join("ipam/rail1.leases.json").exists());
    let log = std::fs::read_to_string(state.join("log/railcni.log")).unwrap();
    assert!(log.contains("trainer-0"), "{log}");
    // The container is replaced: DEL from a fresh mount namespace.
    for (i, vf) in node.vfs.iter().enumerate().rev() {
        driver
            .call(
                &node,
                "DEL",
                &pod,
                ifnames[i],
                &nad_config(vf.rail, &vf.pci),
            )
            .ok();
        assert_eq!(
            node.link(&node.host(), &vf.ifname).as_ref(),
            Some(&before[i])
        );
        assert!(link_in(&ns, ifnames[i]).is_none());
    }
    assert_eq!(
        std::fs::read_dir(state.join("attachments"))
            .unwrap()
            .count(),
        0
    );
    let leases: Value =
        serde_json::from_slice(&std::fs::read(state.join("ipam/rail1.leases.json")).unwrap())
            .unwrap();
    assert_eq!(
        leases["leases"].as_array().map_or(0, Vec::len),
        0,
        "{leases:#}"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_rails_as_the_driver_names_them() {
    run_in_driver_container(["vfnet0", "vfnet1"]);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_rails_with_the_claims_interface_names() {
    run_in_driver_container(["rail1", "rail2"]);
}

/// `allow.namespaces` holds for the driver's own call too: it names the
/// pod's namespace in K8S_POD_NAMESPACE as Multus does. A pod of another
/// namespace is refused with nothing changed; the admitted one attaches and
/// is detached. The installer's stamped copy is read in a container whose
/// /etc has no machine id: ADD attaches and says it could not compare.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_rails_namespace_rule_holds_for_the_drivers_own_call() {
    let node = Node::new(1, 1);
    let plan = PLAN.replace(
        "- {name: rail2, cidr: 172.18.0.0/15, routes: [172.16.0.0/12], mtu: 9000}\n",
        "",
    );
    let plan = plan.replace("mtu: 9000}", "mtu: 9000, allow: {namespaces: [training]}}");
    let driver = DriverContainer::new(&node, &plan);
    // The installer's stamp: this machine's id (here the fake node's).
    let copy = driver.var_lib_cni.join("railcni/node.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&copy).unwrap()).unwrap();
    file["machineId"] = json!(Node::MACHINE_ID);
    std::fs::write(&copy, file.to_string()).unwrap();
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let conf = nad_config(vf.rail, &vf.pci);

    let refused = driver.call_from(&node, "batch", "ADD", &pod, "vfnet0", &conf);
    let e = refused.err(7);
    let details = e["details"].as_str().unwrap_or("");
    assert!(
        details.contains("networks.rail1.allow.namespaces") && details.contains("namespace batch"),
        "{e}"
    );
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "the VF left the host"
    );
    assert!(link_in(&Node::ns_of(&pod), "vfnet0").is_none());
    driver
        .call_from(&node, "batch", "DEL", &pod, "vfnet0", &conf)
        .ok();

    let admitted = driver.call(&node, "ADD", &pod, "vfnet0", &conf);
    assert!(
        admitted.stderr.contains("gives no machine id to compare"),
        "{}",
        admitted.stderr
    );
    admitted.ok();
    assert!(link_in(&Node::ns_of(&pod), "vfnet0").is_some());
    driver.call(&node, "DEL", &pod, "vfnet0", &conf).ok();
    assert!(link_in(&node.host(), &vf.ifname).is_some());
}
