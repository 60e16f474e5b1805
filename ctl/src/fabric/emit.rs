//! What `railcnictl plan` writes. NADs hold no pool: a node's prefix and
//! gateway reach it through the node file the installer writes from the
//! ConfigMap, so a NAD's size does not grow with the cluster.

use base::node_file::{NodeFile, NodePrefix, RailQos, RailRules};
use railcni::rdma_qos::RoceAttr;
use serde::Serialize;
use serde_json::{json, Value};

use super::{Plan, PlanError, Resolved, Role};

/// The ConfigMap the installer DaemonSet mounts.
pub const CONFIG_MAP: &str = "railcni-plan";
/// The ConfigMap's key holding the plan (JSON).
pub const PLAN_KEY: &str = "plan.json";
/// A ConfigMap holds at most 1 MiB.
const CONFIG_MAP_LIMIT: usize = 1024 * 1024;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Object {
    api_version: &'static str,
    kind: &'static str,
    metadata: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

/// The image of the example training pods.
pub(super) const TRAINER_IMAGE: &str = "nvcr.io/nvidia/pytorch:24.05-py3";

pub(super) fn yaml<T: Serialize>(docs: &[T]) -> Result<String, PlanError> {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(
            &serde_yaml_ng::to_string(d)
                .map_err(|e| PlanError(format!("cannot write YAML: {e}")))?,
        );
    }
    Ok(out)
}

/// What the doctor checks a node against (the rail's PF, MTU, rdma, DPDK,
/// RoCE QoS) and what the plugin holds its NADs to (the PF, the ceiling).
fn rules_of(rail: &super::Rail) -> RailRules {
    // The plugin's own reading of `rdmaQoS` (the plan was checked by it).
    let asked = railcni::rdma_qos::parse(rail.rdma_qos.as_ref()).unwrap_or_default();
    let byte = |kind: RoceAttr| asked.get(&kind).and_then(|a| a.byte());
    let rdma_qos = RailQos {
        tos: byte(RoceAttr::DefaultTos(0)),
        tc: byte(RoceAttr::TrafficClass(None)),
    };
    RailRules {
        pf: match &rail.pf {
            Some(super::Pf::One(pf)) => Some(pf.clone()),
            _ => None,
        },
        mtu: rail.mtu,
        rdma: rail.rdma_policy(),
        dpdk: rail.dpdk,
        allow: rail.allow.clone(),
        rdma_qos: (rdma_qos != RailQos::default()).then_some(rdma_qos),
        whole_nic: rail.whole_nic,
    }
}

impl Resolved {
    /// The CNI config of a rail: the embedded IPAM with no pool inside.
    pub fn cni_config(&self, rail: &super::Rail) -> Value {
        let mut ipam = json!({
            "type": "railcni-ipam",
            "cidr": rail.cidr,
            "gatewayIndex": rail.gateway_index(),
            "routes": rail.route_dsts().iter().map(|d| json!({"dst": d})).collect::<Vec<_>>(),
        });
        if let Some(p) = rail.per_node_prefix {
            ipam["perNodePrefix"] = json!(p);
        }
        if let Some(shared) = &rail.shared_subnet {
            ipam["sharedSubnet"] = json!(shared);
        }
        if let Some(ipv6) = rail.ipv6_json() {
            ipam["ipv6"] = ipv6;
        }
        let mut conf = json!({
            "cniVersion": "1.1.0",
            "name": rail.name,
            "type": "railcni",
            "capabilities": {"deviceID": true, "CNIDeviceInfoFile": true},
            "logFile": format!("{}.log", rail.name),
            "ipam": ipam,
        });
        if let Some(mtu) = rail.mtu {
            conf["mtu"] = json!(mtu);
        }
        if let Some(checks) = &rail.checks {
            conf["checks"] = checks.clone();
        }
        if let Some(rdma) = rail.rdma_policy() {
            conf["rdma"] = json!(rdma);
        }
        if let Some(qos) = rail.rdma_qos.as_ref().filter(|q| !q.is_null()) {
            conf["rdmaQoS"] = qos.clone();
        }
        conf
    }

    /// `k8s.cni.cncf.io/v1` NetworkAttachmentDefinitions, one per rail.
    pub fn nads(&self) -> Result<String, PlanError> {
        let docs: Vec<Object> = self
            .plan
            .rails
            .iter()
            .map(|rail| {
                let mut metadata = json!({"name": rail.name, "namespace": self.plan.namespace});
                if let Some(res) = &rail.resource_name {
                    metadata["annotations"] = json!({"k8s.v1.cni.cncf.io/resourceName": res});
                }
                Object {
                    api_version: "k8s.cni.cncf.io/v1",
                    kind: "NetworkAttachmentDefinition",
                    metadata,
                    spec: Some(json!({"config": self.cni_config(rail).to_string()})),
                    data: None,
                }
            })
            .collect();
        yaml(&docs)
    }

    /// One node's node file (`/etc/cni/railcni/node.json`), unstamped:
    /// the installer stamps it with the machine it writes it on.
    pub fn node_file(&self, node: &str) -> Result<NodeFile, PlanError> {
        if !self.nodes.iter().any(|n| n == node) {
            return Err(PlanError(format!("node {node:?} is not in the plan")));
        }
        let mut file = NodeFile {
            node_name: Some(node.to_string()),
            ..NodeFile::default()
        };
        let ipv4_rail = |name: &str| {
            (self.plan.rails.iter()).any(|r| r.name == name && r.cidr.addr().is_ipv4())
        };
        let ours = || self.allocations.iter().filter(|a| a.node == node);
        // A dual-stack rail's IPv6 prefix sits beside its IPv4 one; an
        // IPv6-only rail's is its `prefix`.
        let (sixes, firsts): (Vec<_>, Vec<_>) =
            ours().partition(|a| a.prefix.addr().is_ipv6() && ipv4_rail(&a.rail));
        for a in firsts {
            let rules = (self.plan.rails.iter())
                .find(|r| r.name == a.rail)
                .map(rules_of)
                .unwrap_or_default();
            file.insert(&a.rail, NodePrefix::new(a.prefix, a.gateway), rules);
        }
        for a in sixes {
            if let Some(entry) = file.networks.get_mut(&a.rail) {
                entry.prefix.prefix6 = Some(a.prefix);
                entry.prefix.gateway6 = a.gateway;
            }
        }
        Ok(file)
    }

    /// The ConfigMap of per-node allocations: one key per node, its node file.
    /// The ConfigMap the installer and the agent read: the plan itself
    /// (its rails' rules, the node → index map, and only the per-node
    /// allocations no rule gives: imported ones), from which each node
    /// computes its own node file. 16,384 nodes take about 300 KB.
    pub fn config_map(plan: &Plan) -> Result<String, PlanError> {
        let text = serde_json::to_string(plan)
            .map_err(|e| PlanError(format!("cannot write the plan: {e}")))?;
        if text.len() > CONFIG_MAP_LIMIT {
            return Err(PlanError(format!(
                "the plan takes {} bytes, above a ConfigMap's 1 MiB: its per-node static allocations \
                 (an import) are most of it; give the nodes indexes instead",
                text.len()
            )));
        }
        yaml(&[Object {
            api_version: "v1",
            kind: "ConfigMap",
            metadata: json!({"name": CONFIG_MAP, "namespace": plan.config_map_namespace}),
            spec: None,
            data: Some(json!({ PLAN_KEY: text })),
        }])
    }

    /// One node's node file as text: `--emit node-file`'s output, and what
    /// a node computing its own from the ConfigMap writes, byte for byte.
    pub fn node_file_text(&self, node: &str) -> Result<String, PlanError> {
        Ok(self.node_file(node)?.to_text())
    }

    /// The node file as its JSON (what the tests read keys from).
    #[cfg(test)]
    pub fn node_file_json(&self, node: &str) -> Value {
        let text = self.node_file_text(node).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or_default()
    }

    /// For the switch team: node, rail, host address, switch-port address, prefix.
    pub fn csv(&self) -> String {
        let mut out = String::from("node,rail,host_address,switch_port_address,prefix\n");
        for a in &self.allocations {
            let opt = |v: Option<std::net::IpAddr>| v.map(|v| v.to_string()).unwrap_or_default();
            out.push_str(&format!(
                "{},{},{},{},{}\n",
                a.node,
                a.rail,
                opt(a.host),
                opt(a.gateway),
                a.prefix
            ));
        }
        out
    }

    /// The pod's rails in the order it lists them: compute rails first,
    /// then storage.
    pub(super) fn pod_rails(&self) -> Vec<&super::Rail> {
        let mut rails: Vec<&super::Rail> = self.plan.rails.iter().collect();
        rails.sort_by_key(|r| r.role == Role::Storage);
        rails
    }

    /// A training pod's networks annotation and resource requests, compute
    /// rails first, each rail naming its interface (net1, net2, … in this
    /// order), so a copied template says which rail is which interface.
    pub fn pod(&self) -> Result<String, PlanError> {
        let rails = self.pod_rails();
        // A struct, so the annotation reads name first.
        #[derive(Serialize)]
        struct Selection<'a> {
            name: &'a str,
            interface: String,
        }
        let networks: Vec<Selection> = (rails.iter().enumerate())
            .map(|(i, r)| Selection {
                name: &r.name,
                interface: format!("net{}", i + 1),
            })
            .collect();
        let mut requests = serde_json::Map::new();
        for r in &rails {
            if let Some(res) = &r.resource_name {
                let n = requests.get(res).and_then(Value::as_u64).unwrap_or(0) + 1;
                requests.insert(res.clone(), json!(n));
            }
        }
        let networks = serde_json::to_string(&networks)
            .map_err(|e| PlanError(format!("cannot write the networks annotation: {e}")))?;
        yaml(&[json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "trainer-0",
                "namespace": self.plan.namespace,
                "annotations": {"k8s.v1.cni.cncf.io/networks": networks},
            },
            "spec": {
                "containers": [{
                    "name": "trainer",
                    "image": TRAINER_IMAGE,
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                    "resources": {"requests": requests.clone(), "limits": requests},
                }],
            },
        })])
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Plan, Resolved};

    #[test]
    fn ipv6_slash_64_rails_host_1_leaf_2() {
        let plan = "rails:\n\
            - {name: rail1, cidr: \"fd02:1:100::/40\", perNodePrefix: 64, routes: [\"fd02::/16\"]}\n\
            - {name: rail2, cidr: 172.18.0.0/15, cidr6: \"fd02:2:100::/40\", perNodePrefix6: 64}\n\
            nodes: {gpu-0: 0, gpu-1: 1}\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let f = r.node_file_json("gpu-1");
        assert_eq!(f["networks"]["rail1"]["prefix"], "fd02:1:100:1::/64");
        assert_eq!(f["networks"]["rail1"]["gateway"], "fd02:1:100:1::2");
        assert_eq!(f["networks"]["rail2"]["prefix"], "172.18.0.2/31");
        assert_eq!(f["networks"]["rail2"]["prefix6"], "fd02:2:100:1::/64");
        assert_eq!(f["networks"]["rail2"]["gateway6"], "fd02:2:100:1::2");
        let csv = r.csv();
        assert!(
            csv.contains("gpu-1,rail1,fd02:1:100:1::1,fd02:1:100:1::2,fd02:1:100:1::/64\n"),
            "{csv}"
        );
        let nads = r.nads().unwrap();
        assert!(nads.contains(r#""gatewayIndex":2"#), "{nads}");
    }

    fn resolved() -> super::Resolved {
        Plan::parse(
            "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, resourceName: nvidia.com/rail1, routes: [172.16.0.0/12]}\n  \
             - {name: storage1, cidr: 10.200.0.0/16, role: storage, resourceName: nvidia.com/storage}\nnodes: [gpu-0, gpu-1]\n",
        )
        .unwrap()
        .resolve()
        .unwrap()
    }

    #[test]
    fn nads_are_small_and_carry_no_pool() {
        let r = resolved();
        let nads = r.nads().unwrap();
        let docs: Vec<serde_json::Value> = nads
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_yaml_ng::from_str(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["kind"], "NetworkAttachmentDefinition");
        assert_eq!(
            docs[0]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"],
            "nvidia.com/rail1"
        );
        let conf: serde_json::Value =
            serde_json::from_str(docs[0]["spec"]["config"].as_str().unwrap()).unwrap();
        assert_eq!(conf["capabilities"]["deviceID"], true);
        assert_eq!(conf["capabilities"]["CNIDeviceInfoFile"], true);
        assert!(
            conf["ipam"].get("nodes").is_none() && conf["ipam"].get("staticAllocations").is_none()
        );
        assert_eq!(conf["ipam"]["routes"][0]["dst"], "172.16.0.0/12");
        let storage: serde_json::Value =
            serde_json::from_str(docs[1]["spec"]["config"].as_str().unwrap()).unwrap();
        assert_eq!(storage["rdma"], "off");
    }

    #[test]
    fn a_shared_subnet_rail_gives_each_node_a_slice_and_the_one_gateway() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/16, perNodePrefix: 27, sharedSubnet: {gateway: 172.16.255.254}}\n\
                    nodes: {gpu-0: 0, gpu-1: 1}\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let conf = r.cni_config(&r.plan.rails[0]);
        assert_eq!(conf["ipam"]["sharedSubnet"]["gateway"], "172.16.255.254");
        let node = r.node_file_json("gpu-1");
        assert_eq!(
            node["networks"]["rail1"],
            serde_json::json!({"prefix": "172.16.0.32/27", "gateway": "172.16.255.254"})
        );
        let csv = r.csv();
        assert!(
            csv.contains("gpu-0,rail1,172.16.0.1,172.16.255.254,172.16.0.0/27\n"),
            "{csv}"
        );
        assert!(
            csv.contains("gpu-1,rail1,172.16.0.32,172.16.255.254,172.16.0.32/27\n"),
            "{csv}"
        );
    }

    #[test]
    fn a_two_plane_rail_is_two_networks_rail_major() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, planes: 2, resourceName: nvidia.com/rail1}\n  \
                    - {name: rail2, cidr: 172.18.0.0/15, resourceName: nvidia.com/rail2}\nnodes: [gpu-0, gpu-1]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let names: Vec<&str> = r.plan.rails.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["rail1-p0", "rail1-p1", "rail2"]);
        assert_eq!(r.plan.rails[1].cidr.to_string(), "172.17.0.0/16");
        assert_eq!(
            r.plan.rails[1].resource_name.as_deref(),
            Some("nvidia.com/rail1-p1")
        );
        let node = r.node_file_json("gpu-1");
        assert_eq!(node["networks"]["rail1-p0"]["prefix"], "172.16.0.2/31");
        assert_eq!(node["networks"]["rail1-p1"]["prefix"], "172.17.0.2/31");
        let csv = r.csv();
        assert!(
            csv.contains("gpu-1,rail1-p1,172.17.0.2,172.17.0.3,172.17.0.2/31\n"),
            "{csv}"
        );
        let pod = r.pod().unwrap();
        assert!(
            pod.contains(
                r#"k8s.v1.cni.cncf.io/networks: '[{"name":"rail1-p0","interface":"net1"},{"name":"rail1-p1","interface":"net2"},{"name":"rail2","interface":"net3"}]'"#
            ),
            "{pod}"
        );
        assert!(
            pod.contains("nvidia.com/rail1-p0: 1") && pod.contains("nvidia.com/rail1-p1: 1"),
            "{pod}"
        );
        let bad = plan.replace("planes: 2", "planes: 3");
        let Err(e) = Plan::parse(&bad).unwrap().resolve() else {
            panic!("3 planes")
        };
        assert!(e.0.contains("planes 3"), "{}", e.0);
    }

    /// The planner writes the node file the last release's planner wrote
    /// from the same plan, byte for byte (the golden fixture).
    #[test]
    fn the_node_file_is_the_one_the_last_release_wrote() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/state/v1");
        let plan = std::fs::read_to_string(format!("{fixtures}/node-full.plan.yaml")).unwrap();
        let written = std::fs::read_to_string(format!("{fixtures}/node-full.json")).unwrap();
        let r = Plan::parse(&plan).unwrap().resolve().unwrap();
        assert_eq!(r.node_file_text("gpu-1").unwrap(), written);
    }

    #[test]
    fn a_rails_ceiling_reaches_each_planes_node_file_entry() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, planes: 2, pf: [ens1f0np0, ens1f1np1], \
                    allow: {vlans: [100, 200], maxTxRateMbps: 25000}}\n  \
                    - {name: rail2, cidr: 172.18.0.0/15, pf: ens2f0np0}\nnodes: [gpu-0]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let node = r.node_file_json("gpu-0");
        let file = base::node_file::NodeFile::parse(node.to_string().as_bytes()).unwrap();
        for plane in ["rail1-p0", "rail1-p1"] {
            let allow = file.networks[plane].rules.allow.clone().unwrap();
            assert_eq!(
                (allow.vlans, allow.max_tx_rate_mbps),
                (vec![100, 200], Some(25000))
            );
            assert!(
                !allow.trust && !allow.spoofchk_off,
                "what the plan does not name is not allowed"
            );
        }
        assert_eq!(
            file.networks["rail2"].rules.allow, None,
            "no ceiling asked, none written"
        );
        // Who may attach a rail reaches its node file entry too.
        let ruled = plan.replace("maxTxRateMbps: 25000", "namespaces: [storage-team]");
        let r = Plan::parse(&ruled).unwrap().resolve().unwrap();
        let file = r.node_file("gpu-0").unwrap();
        let allow = file.networks["rail1-p1"].rules.allow.clone().unwrap();
        assert_eq!(allow.namespaces, Some(vec!["storage-team".to_string()]));
        assert!(allow.admits(Some("storage-team")) && !allow.admits(Some("default")));
        // A ceiling key the planner does not know is a plan error, not silence.
        let typo = plan.replace("maxTxRateMbps", "maxRate");
        assert!(Plan::parse(&typo).and_then(Plan::resolve).is_err());
    }

    #[test]
    fn each_plane_gets_its_own_pf_for_the_doctor() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, planes: 2, pf: [ens1f0np0, ens1f1np1]}\n  \
                    - {name: rail2, cidr: 172.18.0.0/15, pf: ens2f0np0, dpdk: true, rdma: off}\nnodes: [gpu-0]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let node = r.node_file_json("gpu-0");
        assert_eq!(node["networks"]["rail1-p0"]["pf"], "ens1f0np0");
        assert_eq!(node["networks"]["rail1-p1"]["pf"], "ens1f1np1");
        assert_eq!(node["networks"]["rail2"]["pf"], "ens2f0np0");
        assert_eq!(node["networks"]["rail2"]["dpdk"], true);
        assert_eq!(node["networks"]["rail2"]["rdma"], "off");
        // The plugin and the IPAM read the node file as before.
        let file = base::node_file::NodeFile::parse(node.to_string().as_bytes()).unwrap();
        assert_eq!(
            file.networks["rail1-p1"].rules.pf.as_deref(),
            Some("ens1f1np1")
        );
        for (bad, says) in [
            (
                plan.replace("[ens1f0np0, ens1f1np1]", "[ens1f0np0]"),
                "one PF per plane",
            ),
            (
                plan.replace("[ens1f0np0, ens1f1np1]", "ens1f0np0"),
                "one PF per plane",
            ),
            (plan.replace("pf: ens2f0np0", "pf: [a, b]"), "has no planes"),
            (
                plan.replace("rdma: off", "rdma: sometimes"),
                // The NAD's and the node file's words (#62: one parser).
                "\"sometimes\" is not one of auto, required, off",
            ),
        ] {
            let Err(e) = Plan::parse(&bad).and_then(Plan::resolve) else {
                panic!("{bad}")
            };
            assert!(e.0.contains(says), "{}", e.0);
        }
    }

    #[test]
    fn a_dual_stack_rail_plans_both_families() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, cidr6: \"fd00:16::/48\"}\nnodes: [gpu-0, gpu-1]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let conf = r.cni_config(&r.plan.rails[0]);
        assert_eq!(conf["ipam"]["ipv6"]["cidr"], "fd00:16::/48");
        assert_eq!(conf["ipam"]["ipv6"]["perNodePrefix"], 127);
        let node = r.node_file_json("gpu-1");
        assert_eq!(
            node["networks"]["rail1"],
            serde_json::json!({"prefix": "172.16.0.2/31", "gateway": "172.16.0.3",
                               "prefix6": "fd00:16::2/127", "gateway6": "fd00:16::3"})
        );
        let csv = r.csv();
        assert!(
            csv.contains("gpu-1,rail1,fd00:16::2,fd00:16::3,fd00:16::2/127\n"),
            "{csv}"
        );
        assert!(
            csv.contains("gpu-1,rail1,172.16.0.2,172.16.0.3,172.16.0.2/31\n"),
            "{csv}"
        );
    }

    #[test]
    fn a_rails_checks_reach_its_nad_and_bad_ones_name_the_rail() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, checks: {gateway: require, timeoutMs: 200}}\n  \
                    - {name: rail2, cidr: 172.18.0.0/15}\nnodes: [gpu-0]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let conf = r.cni_config(&r.plan.rails[0]);
        assert_eq!(
            conf["checks"],
            serde_json::json!({"gateway": "require", "timeoutMs": 200})
        );
        assert!(
            r.cni_config(&r.plan.rails[1]).get("checks").is_none(),
            "off unless asked"
        );
        let bad = plan.replace("gateway: require", "gateway: sometimes");
        let Err(e) = Plan::parse(&bad).unwrap().resolve() else {
            panic!("a bad checks value must be refused")
        };
        assert!(
            e.0.contains("rail rail1") && e.0.contains("checks.gateway"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_rails_rdma_qos_reaches_its_nads_and_node_files_and_bad_ones_name_the_rail() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, rdmaQoS: {tos: 96, tc: 96}, planes: 2, pf: [a0, a1]}\n  \
                    - {name: rail2, cidr: 172.18.0.0/15}\nnodes: [gpu-0]\n";
        let r = Plan::parse(plan).unwrap().resolve().unwrap();
        let qos = serde_json::json!({"tos": 96, "tc": 96});
        for plane in &r.plan.rails[..2] {
            assert_eq!(r.cni_config(plane)["rdmaQoS"], qos, "{}", plane.name);
        }
        assert!(r.cni_config(&r.plan.rails[2]).get("rdmaQoS").is_none());
        let nads = r.nads().unwrap();
        assert_eq!(
            nads.matches(r#""rdmaQoS":{"tc":96,"tos":96}"#).count(),
            2,
            "{nads}"
        );
        let file = r.node_file_json("gpu-0");
        assert_eq!(file["networks"]["rail1-p1"]["rdmaQoS"], qos);
        // What the plugin reads back from the node file.
        let read = base::node_file::NodeFile::parse(file.to_string().as_bytes()).unwrap();
        assert_eq!(
            read.networks["rail1-p0"].rules.rdma_qos,
            Some(base::node_file::RailQos {
                tos: Some(96),
                tc: Some(96)
            })
        );
        for (bad, words) in [
            ("rdmaQoS: {tos: 96, tc: 96}", "rdmaQoS: {tos: 256}"),
            ("rdmaQoS: {tos: 96, tc: 96}", "rdmaQoS: {dscp: 24}"),
            ("rdmaQoS: {tos: 96, tc: 96}", "rdmaQoS: {tc: 96}, rdma: off"),
            (
                "rdmaQoS: {tos: 96, tc: 96}",
                "rdmaQoS: {tc: 96}, role: storage",
            ),
        ] {
            let Err(e) = Plan::parse(&plan.replace(bad, words)).unwrap().resolve() else {
                panic!("{words} must be refused")
            };
            assert!(
                e.0.contains("rail rail1") && e.0.contains("rdmaQoS"),
                "{words}: {}",
                e.0
            );
        }
    }

    #[test]
    fn node_file_configmap_csv_and_pod() {
        let r = resolved();
        let f = r.node_file_json("gpu-1");
        assert_eq!(f["nodeName"], "gpu-1");
        assert_eq!(f["networks"]["rail1"]["prefix"], "172.16.0.2/31");
        assert_eq!(f["networks"]["rail1"]["gateway"], "172.16.0.3");
        assert!(r.node_file("gpu-9").is_err());
        // The ConfigMap carries the plan; the node's file computed from it is the same.
        let cm: serde_json::Value = serde_yaml_ng::from_str(
            Resolved::config_map(&r.plan)
                .unwrap()
                .trim_start_matches("---\n"),
        )
        .unwrap();
        let carried = Plan::parse(cm["data"]["plan.json"].as_str().unwrap()).unwrap();
        let computed = carried
            .resolve_for(Some("gpu-1"))
            .unwrap()
            .node_file_text("gpu-1")
            .unwrap();
        assert_eq!(computed, r.node_file_text("gpu-1").unwrap());
        let csv = r.csv();
        assert!(csv.starts_with("node,rail,host_address,switch_port_address,prefix\n"));
        assert!(
            csv.contains("gpu-1,rail1,172.16.0.2,172.16.0.3,172.16.0.2/31\n"),
            "{csv}"
        );
        let pod = r.pod().unwrap();
        assert!(
            pod.contains(
                r#"k8s.v1.cni.cncf.io/networks: '[{"name":"rail1","interface":"net1"},{"name":"storage1","interface":"net2"}]'"#
            ),
            "{pod}"
        );
    }
}
