//! The plan as objects for dra-driver-sriov (standalone mode: its NRI hook
//! runs railcni itself, no Multus): which PF's VFs make up each rail (a
//! SriovResourceFilter), the NADs the driver reads, a DeviceClass and a
//! ResourceClaimTemplate per rail (the VF picked by the rail's resource
//! attribute, the NAD and the interface name in the claim's config), and a
//! training pod that claims every rail. docs/dra.md explains them.

use serde_json::{json, Value};

use super::emit::yaml;
use super::{Pf, PlanError, Rail, Resolved};

/// The driver's name, the domain of its device attributes and of its
/// opaque config (and the DeviceClass its Helm chart installs).
pub const DRIVER: &str = "sriovnetwork.k8snetworkplumbingwg.io";
/// Where the driver's Helm release (and its SriovResourceFilter) lives by default.
pub const DRIVER_NAMESPACE: &str = "dra-sriov-driver";
/// Logs where the driver's container keeps them on the host: it mounts the
/// host's /var/lib/cni, not /var/log.
const LOG_DIR: &str = "/var/lib/cni/railcni/log";

impl Resolved {
    /// Every object dra-driver-sriov needs for the plan's rails, as YAML.
    pub fn dra(&self) -> Result<String, PlanError> {
        let rails = self.pod_rails();
        let mut docs = vec![self.resource_filter(&rails)?];
        for (i, rail) in rails.iter().enumerate() {
            docs.push(self.dra_nad(rail));
            docs.push(device_class(rail));
            docs.push(self.claim_template(rail, &format!("net{}", i + 1)));
        }
        docs.push(self.dra_pod(&rails));
        yaml(&docs)
    }

    /// Each rail's VFs: those of its PF, published under the rail's name.
    fn resource_filter(&self, rails: &[&Rail]) -> Result<Value, PlanError> {
        let configs = (rails.iter())
            .map(|rail| match &rail.pf {
                Some(Pf::One(pf)) => Ok(json!({
                    "resourceName": rail.name,
                    "resourceFilters": [{"pfNames": [pf]}],
                })),
                _ => Err(PlanError(format!(
                    "rail {}: --emit dra selects a rail's VFs by its PF: give the rail `pf` (the PF netdev, \
                     the same on every node)",
                    rail.name
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(json!({
            "apiVersion": format!("{DRIVER}/v1alpha1"),
            "kind": "SriovResourceFilter",
            "metadata": {"name": "railcni-rails", "namespace": DRIVER_NAMESPACE},
            "spec": {"nodeSelector": {}, "configs": configs},
        }))
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

    /// One VF of the rail, attached by railcni with the rail's NAD as `ifname`.
    fn claim_template(&self, rail: &Rail, ifname: &str) -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": rail.name, "namespace": self.plan.namespace},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "vf", "exactly": {"deviceClassName": class_name(rail), "count": 1}}],
                "config": [{"requests": ["vf"], "opaque": {"driver": DRIVER, "parameters": {
                    "apiVersion": format!("{DRIVER}/v1alpha1"),
                    "kind": "VfConfig",
                    "ifName": ifname,
                    "netAttachDefName": rail.name,
                }}}],
            }}},
        })
    }

    /// A training pod with one claim per rail, in rail order.
    fn dra_pod(&self, rails: &[&Rail]) -> Value {
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

/// `railcni-<rail>`: cluster-wide, so prefixed.
fn class_name(rail: &Rail) -> String {
    format!("railcni-{}", rail.name)
}

/// The driver's VFs that carry the rail's resource name.
fn device_class(rail: &Rail) -> Value {
    let expression = format!(
        "device.driver == \"{DRIVER}\" && device.attributes[\"{DRIVER}\"].resourceName == \"{}\"",
        rail.name
    );
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": class_name(rail)},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    })
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use serde_json::Value;

    fn emitted(plan: &str) -> Result<Vec<Value>, String> {
        let r = Plan::parse(plan).and_then(Plan::resolve).map_err(|e| e.0)?;
        let text = r.dra().map_err(|e| e.0)?;
        Ok(serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).expect("valid YAML"))
            .collect())
    }

    const PLAN: &str = "rails:\n\
        - {name: rail1, cidr: 172.16.0.0/15, pf: ens1f0np0, mtu: 9000}\n\
        - {name: storage1, cidr: 10.200.0.0/16, role: storage, pf: ens9f0np0}\n\
        - {name: rail2, cidr: 172.18.0.0/15, pf: ens2f0np0, mtu: 9000}\n\
        nodes: [gpu-0, gpu-1]\n";

    fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
        docs.iter().filter(|d| d["kind"] == kind).collect()
    }

    #[test]
    fn one_claim_template_per_rail_with_its_nad_and_interface() {
        let docs = emitted(PLAN).unwrap();
        let templates = of_kind(&docs, "ResourceClaimTemplate");
        let names: Vec<&str> = templates
            .iter()
            .map(|t| t["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["rail1", "rail2", "storage1"], "compute rails first");
        for (i, t) in templates.iter().enumerate() {
            let params = &t["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"];
            assert_eq!(params["kind"], "VfConfig");
            assert_eq!(params["netAttachDefName"], names[i]);
            assert_eq!(params["ifName"], format!("net{}", i + 1));
            let class = &t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"];
            assert_eq!(class, &format!("railcni-{}", names[i]));
        }
        let classes = of_kind(&docs, "DeviceClass");
        assert_eq!(classes.len(), 3);
        assert!(classes[0]["spec"]["selectors"][0]["cel"]["expression"]
            .as_str()
            .unwrap()
            .ends_with("resourceName == \"rail1\""));
        let filter = of_kind(&docs, "SriovResourceFilter")[0];
        assert_eq!(
            filter["spec"]["configs"][2]["resourceFilters"][0]["pfNames"][0],
            "ens9f0np0"
        );
        // The NADs log where the driver's container keeps files on the host.
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
    fn a_rail_without_its_pf_is_refused_by_name() {
        let e = emitted(&PLAN.replace(", pf: ens2f0np0", "")).unwrap_err();
        assert!(e.contains("rail rail2") && e.contains("pf"), "{e}");
    }
}
