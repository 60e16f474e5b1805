//! The plan as objects for dra-driver-sriov (standalone mode: its NRI hook
//! runs railcni itself, no Multus), as the driver defines them at HEAD
//! cd9404f (2026-08-19): per rail network a `DeviceAttributes` giving its
//! VFs the resource name `k8s.cni.cncf.io/resourceName`, one
//! `SriovResourcePolicy` selecting each network's VFs by its PF and
//! attaching those attributes, the NADs the driver reads, and per rail a
//! `ResourceClaimTemplate` on the driver's own DeviceClass (one request per
//! plane, the NAD and interface name in each request's `VfConfig`),
//! optionally with a GPU on the same PCIe root; a training pod that claims
//! every rail. docs/dra.md explains them.

use serde_json::{json, Value};

use super::emit::yaml;
use super::{Pf, PlanError, Rail, Resolved};

/// The driver's name, the domain of its device attributes and of its
/// opaque config, and the DeviceClass its Helm chart installs.
pub const DRIVER: &str = "sriovnetwork.k8snetworkplumbingwg.io";
/// Where the driver's Helm release (and the policy it watches) lives by default.
pub const DRIVER_NAMESPACE: &str = "dra-driver-sriov";
/// The attribute a DeviceAttributes gives each rail's VFs: the domain and
/// name Multus' DRA integration and NVIDIA's templates select on.
pub const RESOURCE_NAME: (&str, &str) = ("k8s.cni.cncf.io", "resourceName");
/// The standard attribute a GPU and a VF under one PCIe root share.
pub const PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";
/// The label tying a rail network's DeviceAttributes to its policy config.
const RAIL_LABEL: &str = "railcni.io/rail";
/// Logs where the driver's container keeps them on the host: it mounts the
/// host's /var/lib/cni, not /var/log.
const LOG_DIR: &str = "/var/lib/cni/railcni/log";

/// What `--emit dra` asks besides the plan.
#[derive(Debug, Clone, Default)]
pub struct DraOptions {
    /// Claim each rail's VF(s) together with one GPU of this DeviceClass on
    /// the same PCIe root; `None`: VF-only claims.
    pub gpu_class: Option<String>,
}

/// A rail as its pod claims it: its networks (one, or one per plane).
struct ClaimedRail<'a> {
    name: &'a str,
    networks: Vec<(&'a Rail, String)>,
}

impl Resolved {
    /// Every object dra-driver-sriov needs for the plan's rails, as YAML.
    pub fn dra(&self, options: &DraOptions) -> Result<String, PlanError> {
        let networks = self.pod_rails();
        if let Some(whole) = networks.iter().find(|r| r.whole_nic) {
            // dra-driver-sriov (cd9404f) publishes SR-IOV VFs only.
            return Err(PlanError(format!(
                "rail {}: a whole-NIC rail (wholeNic) hands its PF itself to the pod, and \
                 dra-driver-sriov publishes only SR-IOV VFs as devices: attach whole-NIC rails \
                 through Multus (--emit nads, --emit pod) with the SR-IOV device plugin's PF pool",
                whole.name
            )));
        }
        let mut docs = Vec::new();
        for rail in &networks {
            docs.push(device_attributes(rail));
        }
        docs.push(resource_policy(&networks)?);
        for rail in &networks {
            docs.push(self.dra_nad(rail));
        }
        let claimed = claimed_rails(&networks);
        for rail in &claimed {
            docs.push(self.claim_template(rail, options));
        }
        docs.push(self.dra_pod(&claimed));
        yaml(&docs)
    }

    /// The rail's NAD as for Multus, logging where the driver's container
    /// keeps files on the host.
    fn dra_nad(&self, rail: &Rail) -> Value {
        let mut config = self.cni_config(rail);
        config["logFile"] = json!(format!("{LOG_DIR}/{}.log", rail.name));
        json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": rail.name, "namespace": self.plan.namespace},
            "spec": {"config": config.to_string()},
        })
    }

    /// One VF per network of the rail (each plane's on its own request),
    /// attached by railcni with that network's NAD as its interface; with
    /// a GPU class, one GPU too, all on one PCIe root.
    fn claim_template(&self, rail: &ClaimedRail, options: &DraOptions) -> Value {
        let request_name = |k: usize| {
            if rail.networks.len() == 1 {
                "vf".to_string()
            } else {
                format!("vf-p{k}")
            }
        };
        let mut requests: Vec<Value> = (rail.networks.iter().enumerate())
            .map(|(k, (network, _))| {
                json!({"name": request_name(k), "exactly": {
                    "deviceClassName": DRIVER,
                    "count": 1,
                    "selectors": [{"cel": {"expression": resource_name_is(&resource_name(network))}}],
                }})
            })
            .collect();
        let config: Vec<Value> = (rail.networks.iter().enumerate())
            .map(|(k, (network, ifname))| {
                json!({"requests": [request_name(k)], "opaque": {"driver": DRIVER, "parameters": {
                    "apiVersion": format!("{DRIVER}/v1alpha1"),
                    "kind": "VfConfig",
                    "ifName": ifname,
                    "netAttachDefName": network.name,
                }}})
            })
            .collect();
        let mut devices = json!({"config": config});
        if let Some(class) = &options.gpu_class {
            requests.insert(
                0,
                json!({"name": "gpu", "exactly": {"deviceClassName": class, "count": 1}}),
            );
            let all: Vec<&str> = requests.iter().filter_map(|r| r["name"].as_str()).collect();
            devices["constraints"] = json!([{"requests": all, "matchAttribute": PCIE_ROOT}]);
        }
        devices["requests"] = json!(requests);
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": rail.name, "namespace": self.plan.namespace},
            "spec": {"spec": {"devices": devices}},
        })
    }

    /// A training pod with one claim per rail, in rail order.
    fn dra_pod(&self, rails: &[ClaimedRail]) -> Value {
        let claims: Vec<Value> = (rails.iter())
            .map(|r| json!({"name": r.name, "resourceClaimTemplateName": r.name}))
            .collect();
        let uses: Vec<Value> = rails.iter().map(|r| json!({"name": r.name})).collect();
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "trainer-0", "namespace": self.plan.namespace},
            "spec": {
                "resourceClaims": claims,
                "containers": [{
                    "name": "trainer",
                    "image": super::emit::TRAINER_IMAGE,
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                    "resources": {"claims": uses},
                }],
            },
        })
    }
}

/// The pod's networks grouped by rail (a multi-plane rail's planes
/// together), each network with its interface name (net1, net2, … in pod
/// order).
fn claimed_rails<'a>(networks: &[&'a Rail]) -> Vec<ClaimedRail<'a>> {
    let mut rails: Vec<ClaimedRail> = Vec::new();
    for (i, network) in networks.iter().enumerate() {
        let name = network.plane_of.as_deref().unwrap_or(&network.name);
        let ifname = format!("net{}", i + 1);
        match rails.last_mut() {
            Some(last) if last.name == name => last.networks.push((network, ifname)),
            _ => rails.push(ClaimedRail {
                name,
                networks: vec![(network, ifname)],
            }),
        }
    }
    rails
}

/// The resource name a network's VFs are published under: the rail's
/// `resourceName` (the device plugin's, kept for Multus mode), else its name.
fn resource_name(rail: &Rail) -> String {
    rail.resource_name
        .clone()
        .unwrap_or_else(|| rail.name.clone())
}

fn resource_name_is(name: &str) -> String {
    let (domain, attribute) = RESOURCE_NAME;
    format!("device.attributes[\"{domain}\"].{attribute} == \"{name}\"")
}

/// `railcni-<network>`: the DeviceAttributes that names the network's VFs.
fn device_attributes(rail: &Rail) -> Value {
    let (domain, attribute) = RESOURCE_NAME;
    json!({
        "apiVersion": format!("{DRIVER}/v1alpha1"),
        "kind": "DeviceAttributes",
        "metadata": {
            "name": format!("railcni-{}", rail.name),
            "namespace": DRIVER_NAMESPACE,
            "labels": {RAIL_LABEL: rail.name},
        },
        "spec": {"attributes": {format!("{domain}/{attribute}"): {"string": resource_name(rail)}}},
    })
}

/// Each network's VFs: those of its PF, with its DeviceAttributes. No
/// nodeSelector: every node of the plan has every rail.
fn resource_policy(networks: &[&Rail]) -> Result<Value, PlanError> {
    let configs = (networks.iter())
        .map(|rail| match &rail.pf {
            Some(Pf::One(pf)) => Ok(json!({
                "deviceAttributesSelector": {"matchLabels": {RAIL_LABEL: rail.name}},
                "resourceFilters": [{"pfNames": [pf]}],
            })),
            _ => Err(PlanError(format!(
                "rail {}: --emit dra selects a rail's VFs by its PF: give the rail `pf` (the PF netdev, \
                 the same on every node; one per plane for a multi-plane rail)",
                rail.name
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "apiVersion": format!("{DRIVER}/v1alpha1"),
        "kind": "SriovResourcePolicy",
        "metadata": {"name": "railcni-rails", "namespace": DRIVER_NAMESPACE},
        "spec": {"configs": configs},
    }))
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use super::DraOptions;
    use serde_json::Value;

    fn emitted_with(plan: &str, options: &DraOptions) -> Result<Vec<Value>, String> {
        let r = Plan::parse(plan).and_then(Plan::resolve).map_err(|e| e.0)?;
        let text = r.dra(options).map_err(|e| e.0)?;
        Ok(serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).expect("valid YAML"))
            .collect())
    }

    fn emitted(plan: &str) -> Result<Vec<Value>, String> {
        emitted_with(plan, &DraOptions::default())
    }

    const PLAN: &str = "rails:\n\
        - {name: rail1, cidr: 172.16.0.0/15, pf: ens1f0np0, mtu: 9000}\n\
        - {name: storage1, cidr: 10.200.0.0/16, role: storage, pf: ens9f0np0}\n\
        - {name: rail2, cidr: 172.18.0.0/15, pf: ens2f0np0, mtu: 9000, resourceName: nvidia.com/rail_1}\n\
        nodes: [gpu-0, gpu-1]\n";

    const TWO_PLANES: &str = "rails:\n\
        - {name: rail0, cidr: 172.16.0.0/15, planes: 2, pf: [eth_r0_p0, eth_r0_p1]}\n\
        - {name: rail1, cidr: 172.18.0.0/15, planes: 2, pf: [eth_r1_p0, eth_r1_p1]}\n\
        nodes: [gpu-0]\n";

    fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
        docs.iter().filter(|d| d["kind"] == kind).collect()
    }

    /// What a claim request's CEL selector says the resource name is.
    fn selected(request: &Value) -> String {
        let cel = request["exactly"]["selectors"][0]["cel"]["expression"]
            .as_str()
            .unwrap();
        let prefix = "device.attributes[\"k8s.cni.cncf.io\"].resourceName == \"";
        cel.strip_prefix(prefix)
            .unwrap()
            .trim_end_matches('"')
            .to_string()
    }

    #[test]
    fn each_rail_is_named_by_its_attributes_and_claimed_on_the_drivers_class() {
        let docs = emitted(PLAN).unwrap();
        assert!(
            of_kind(&docs, "DeviceClass").is_empty(),
            "the driver's chart ships the class"
        );
        assert!(of_kind(&docs, "SriovResourceFilter").is_empty());
        // A DeviceAttributes per rail, giving the resource name, labelled
        // for the policy config that selects the rail's PF.
        let attrs = of_kind(&docs, "DeviceAttributes");
        let policy = of_kind(&docs, "SriovResourcePolicy")[0];
        let configs = policy["spec"]["configs"].as_array().unwrap();
        assert_eq!(attrs.len(), 3);
        assert_eq!(configs.len(), 3);
        for (a, c) in attrs.iter().zip(configs) {
            assert_eq!(
                c["deviceAttributesSelector"]["matchLabels"], a["metadata"]["labels"],
                "the config selects its own rail's attributes"
            );
            assert_eq!(a["metadata"]["namespace"], "dra-driver-sriov");
        }
        assert_eq!(configs[2]["resourceFilters"][0]["pfNames"][0], "ens9f0np0");
        let names: Vec<&Value> = attrs
            .iter()
            .map(|a| &a["spec"]["attributes"]["k8s.cni.cncf.io/resourceName"]["string"])
            .collect();
        assert_eq!(names, ["rail1", "nvidia.com/rail_1", "storage1"]);
        // A claim per rail on the driver's DeviceClass, selecting the name
        // its attributes give; the NAD and interface in its VfConfig.
        let templates = of_kind(&docs, "ResourceClaimTemplate");
        let tnames: Vec<&str> = (templates.iter())
            .map(|t| t["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tnames,
            ["rail1", "rail2", "storage1"],
            "compute rails first"
        );
        for (i, t) in templates.iter().enumerate() {
            let devices = &t["spec"]["spec"]["devices"];
            let request = &devices["requests"][0];
            assert_eq!(
                request["exactly"]["deviceClassName"],
                "sriovnetwork.k8snetworkplumbingwg.io"
            );
            assert_eq!(selected(request), names[i].as_str().unwrap());
            let params = &devices["config"][0]["opaque"]["parameters"];
            assert_eq!(params["kind"], "VfConfig");
            assert_eq!(params["netAttachDefName"], tnames[i]);
            assert_eq!(params["ifName"], format!("net{}", i + 1));
            assert!(devices["constraints"].is_null(), "no GPU asked for");
        }
        let nads = of_kind(&docs, "NetworkAttachmentDefinition");
        let config: Value =
            serde_json::from_str(nads[0]["spec"]["config"].as_str().unwrap()).unwrap();
        assert_eq!(config["logFile"], "/var/lib/cni/railcni/log/rail1.log");
        assert_eq!(config["type"], "railcni");
        let pod = of_kind(&docs, "Pod")[0];
        assert_eq!(pod["spec"]["resourceClaims"].as_array().unwrap().len(), 3);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["claims"][1]["name"],
            "rail2"
        );
    }

    #[test]
    fn a_two_plane_rail_is_one_claim_with_a_request_per_plane() {
        let docs = emitted(TWO_PLANES).unwrap();
        assert_eq!(
            of_kind(&docs, "DeviceAttributes").len(),
            4,
            "one per plane network"
        );
        let templates = of_kind(&docs, "ResourceClaimTemplate");
        assert_eq!(templates.len(), 2, "one claim per rail");
        let devices = &templates[1]["spec"]["spec"]["devices"];
        let requests: Vec<&str> = (devices["requests"].as_array().unwrap().iter())
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(requests, ["vf-p0", "vf-p1"]);
        assert_eq!(selected(&devices["requests"][1]), "rail1-p1");
        let params: Vec<(&str, &str)> = (devices["config"].as_array().unwrap().iter())
            .map(|c| {
                let p = &c["opaque"]["parameters"];
                (
                    p["netAttachDefName"].as_str().unwrap(),
                    p["ifName"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(params, [("rail1-p0", "net3"), ("rail1-p1", "net4")]);
        let policy = of_kind(&docs, "SriovResourcePolicy")[0];
        assert_eq!(
            policy["spec"]["configs"][3]["resourceFilters"][0]["pfNames"][0],
            "eth_r1_p1"
        );
        let pod = of_kind(&docs, "Pod")[0];
        assert_eq!(pod["spec"]["resourceClaims"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_paired_claim_asks_for_a_gpu_on_the_vfs_pcie_root() {
        let options = DraOptions {
            gpu_class: Some("gpu.nvidia.com".into()),
        };
        let docs = emitted_with(TWO_PLANES, &options).unwrap();
        for t in of_kind(&docs, "ResourceClaimTemplate") {
            let devices = &t["spec"]["spec"]["devices"];
            assert_eq!(devices["requests"][0]["name"], "gpu");
            assert_eq!(
                devices["requests"][0]["exactly"]["deviceClassName"],
                "gpu.nvidia.com"
            );
            assert_eq!(
                devices["constraints"],
                serde_json::json!([{"requests": ["gpu", "vf-p0", "vf-p1"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}])
            );
            // The GPU gets no VfConfig.
            assert!(devices["config"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["requests"][0] != "gpu"));
        }
    }

    #[test]
    fn a_rail_without_its_pf_is_refused_by_name() {
        let e = emitted(&PLAN.replace(", pf: ens2f0np0", "")).unwrap_err();
        assert!(e.contains("rail rail2") && e.contains("pf"), "{e}");
    }

    /// dra-driver-sriov publishes VFs only: a plan with a whole-NIC rail
    /// is refused for --emit dra, naming the rail and the way that works.
    #[test]
    fn a_whole_nic_rail_is_not_for_dra_driver_sriov() {
        let plan = "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, pf: pf1, wholeNic: true, resourceName: nvidia.com/hostdev_rail_1}\nnodes: {gpu-0: 0}";
        let e = emitted(plan).unwrap_err();
        assert!(
            e.contains("rail rail1") && e.contains("only SR-IOV VFs"),
            "{e}"
        );
    }
}
