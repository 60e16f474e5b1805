//! The shipped manifests hold what they say (#46): no container is
//! privileged or can gain privileges, every one drops ALL capabilities and
//! runs on a read-only root with the runtime's seccomp profile (that the
//! agent listens on loopback only, kube-rbac-proxy serves it over TLS and
//! the ServiceMonitor scrapes https with a token is checked here too;
//! tests/prometheus.rs runs them). Claims select only attributes that
//! exist. That every object validates against its consumer's schema is
//! tests/manifest_schemas.rs's (it needs kubernetes-validate). Needs
//! nothing but the tree.

mod common;

use common::deploy::{deploy, emit, ONE_PLANE, TWO_PLANES};
use serde_json::{json, Value};

fn objects(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy(name)).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn daemonset_pod() -> Value {
    objects("daemonset.yaml")
        .into_iter()
        .find(|o| o["kind"] == "DaemonSet")
        .unwrap()["spec"]["template"]["spec"]
        .clone()
}

#[test]
fn no_container_is_privileged_and_each_drops_every_capability() {
    let pod = daemonset_pod();
    let containers: Vec<&Value> = pod["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pod["containers"].as_array().unwrap())
        .collect();
    assert_eq!(containers.len(), 3, "install, agent, kube-rbac-proxy");
    for c in containers {
        let name = c["name"].as_str().unwrap();
        let sc = &c["securityContext"];
        assert_ne!(sc["privileged"], true, "{name} is privileged");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{name}");
        assert_eq!(
            sc["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{name}"
        );
        let added: Vec<&str> = sc["capabilities"]["add"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let allowed: &[&str] = match name {
            "agent" => &["NET_ADMIN", "SYS_ADMIN", "NET_RAW"],
            _ => &[],
        };
        assert_eq!(
            added, allowed,
            "{name} adds back more than it was shown to use"
        );
    }
}

#[test]
fn host_paths_are_read_only_where_nothing_writes_them() {
    let pod = daemonset_pod();
    let agent = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent")
        .unwrap();
    // What the agent writes: state (records, leases, logs, counts), the
    // node file, a re-attached rail's sysctls, rdma_cm's ToS (configfs).
    // The pods' namespaces it only opens (setns needs no write).
    let written = ["state", "railcni-etc", "proc-sys-net", "configfs"];
    for m in agent["volumeMounts"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        if !written.contains(&name) {
            assert_eq!(m["readOnly"], true, "the agent mounts {name} writable");
        }
    }
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(
        volumes
            .iter()
            .all(|v| v["hostPath"]["path"] != "/sys" && v["hostPath"]["path"] != "/dev"),
        "a host /sys or /dev is mounted: {volumes:?}"
    );
    assert_ne!(pod["hostPID"], true);
    assert_ne!(pod["hostIPC"], true);
}

/// The CEL of every emitted claim names only attributes that exist: those
/// dra-driver-sriov publishes itself (HEAD cd9404f, pkg/consts/consts.go) or that an
/// emitted DeviceAttributes gives.
#[test]
fn claims_select_only_attributes_the_driver_or_the_emitted_attributes_give() {
    const PUBLISHED: [&str; 14] = [
        "sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
        "sriovnetwork.k8snetworkplumbingwg.io/PFName",
        "sriovnetwork.k8snetworkplumbingwg.io/EswitchMode",
        "sriovnetwork.k8snetworkplumbingwg.io/vendor",
        "sriovnetwork.k8snetworkplumbingwg.io/deviceID",
        "sriovnetwork.k8snetworkplumbingwg.io/pfDeviceID",
        "sriovnetwork.k8snetworkplumbingwg.io/vfID",
        "sriovnetwork.k8snetworkplumbingwg.io/linkType",
        "sriovnetwork.k8snetworkplumbingwg.io/rdmaCapable",
        "sriovnetwork.k8snetworkplumbingwg.io/pfPciAddress",
        "k8s.cni.cncf.io/deviceID",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "dra.net/numaNode",
    ];
    let dir = tempfile::Builder::new()
        .prefix("railcni-cel-")
        .tempdir()
        .unwrap();
    for plan in [ONE_PLANE, TWO_PLANES] {
        let path = emit(dir.path(), "dra", plan, &["--emit", "dra", "--pair-gpus"]);
        let text = std::fs::read_to_string(path).unwrap();
        let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let given: Vec<String> = (docs.iter())
            .filter(|d| d["kind"] == "DeviceAttributes")
            .flat_map(|d| {
                d["spec"]["attributes"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut named = 0;
        for claim in docs.iter().filter(|d| d["kind"] == "ResourceClaimTemplate") {
            let devices = &claim["spec"]["spec"]["devices"];
            for request in devices["requests"].as_array().unwrap() {
                for selector in request["exactly"]["selectors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let cel = selector["cel"]["expression"].as_str().unwrap();
                    // device.attributes["DOMAIN"].NAME
                    for part in cel.split("device.attributes[\"").skip(1) {
                        let (domain, rest) = part.split_once("\"].").unwrap();
                        let name: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric())
                            .collect();
                        let attribute = format!("{domain}/{name}");
                        assert!(
                            PUBLISHED.contains(&attribute.as_str()) || given.contains(&attribute),
                            "{cel} names {attribute}, which nothing publishes"
                        );
                        named += 1;
                    }
                }
            }
            for c in devices["constraints"].as_array().into_iter().flatten() {
                let attribute = c["matchAttribute"].as_str().unwrap();
                assert!(PUBLISHED.contains(&attribute), "{attribute}");
            }
        }
        assert!(named > 0, "no claim selected anything");
    }
}

/// The DaemonSet runs the agent after installing, on loopback only, with
/// kube-rbac-proxy serving its /metrics over TLS on the node's address to
/// scrapers the API authorizes; the ServiceMonitor scrapes the proxy with
/// its token; deploy/rbac.yaml gives the proxy what it asks the API.
#[test]
fn the_manifests_run_and_expose_the_agent() {
    let root = env!("CARGO_MANIFEST_DIR");
    let ds: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(format!("{root}/deploy/daemonset.yaml")).unwrap(),
    )
    .unwrap();
    let spec = &ds["spec"]["template"]["spec"];
    assert_eq!(spec["initContainers"][0]["name"], "install");
    let agent = &spec["containers"][0];
    assert_eq!(agent["command"], json!(["/railcnictl", "agent"]));
    assert_eq!(agent["args"][0], "--listen");
    let listen: std::net::SocketAddr = agent["args"][1].as_str().unwrap().parse().unwrap();
    assert!(listen.ip().is_loopback(), "the agent listens on {listen}");
    assert!(
        agent["ports"].is_null(),
        "the agent exposes no port of its own"
    );
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(agent[probe]["httpGet"]["host"], "127.0.0.1", "{probe}");
        assert_eq!(agent[probe]["httpGet"]["port"], listen.port(), "{probe}");
    }
    // The doctor's checks read the host's CNI dirs and modprobe.d at their own paths.
    for path in ["/opt/cni/bin", "/etc/cni/net.d", "/etc/modprobe.d"] {
        let mount = agent["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("the agent does not mount {path}"));
        assert_eq!(mount["readOnly"], true, "{path}");
        let volume = spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        assert_eq!(volume["hostPath"]["path"], path);
    }
    // The proxy: TLS on the node's address, upstream the agent's loopback.
    let proxy = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "kube-rbac-proxy")
        .expect("a kube-rbac-proxy container");
    let args: Vec<&str> = proxy["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.contains(&"--secure-listen-address=[$(NODE_IP)]:9476"),
        "{args:?}"
    );
    assert!(
        args.contains(&format!("--upstream=http://{listen}/").as_str()),
        "{args:?}"
    );
    assert_eq!(
        proxy["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "status.podIP"
    );
    let sc = &proxy["securityContext"];
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(
        (
            sc["allowPrivilegeEscalation"].clone(),
            sc["readOnlyRootFilesystem"].clone()
        ),
        (json!(false), json!(true))
    );
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(proxy["ports"][0]["name"], "https");
    assert!(
        ds["spec"]["template"]["metadata"]["annotations"]
            .get("prometheus.io/scrape")
            .is_none(),
        "no unauthenticated scrape is advertised"
    );
    // Its ServiceAccount may create TokenReviews and SubjectAccessReviews.
    let text = std::fs::read_to_string(format!("{root}/deploy/rbac.yaml")).unwrap();
    let rbac: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let account = rbac.iter().find(|d| d["kind"] == "ServiceAccount").unwrap();
    assert_eq!(spec["serviceAccountName"], account["metadata"]["name"]);
    let binding = rbac
        .iter()
        .find(|d| {
            d["kind"] == "ClusterRoleBinding"
                && d["subjects"][0]["name"] == account["metadata"]["name"]
        })
        .unwrap();
    let role = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == binding["roleRef"]["name"])
        .unwrap();
    let rules = role["rules"].to_string();
    assert!(
        rules.contains("tokenreviews") && rules.contains("subjectaccessreviews"),
        "{rules}"
    );
    let reader = rbac.iter().find(|d| {
        d["kind"] == "ClusterRole" && d["rules"][0]["nonResourceURLs"] == json!(["/metrics"])
    });
    assert!(reader.is_some(), "a role a scraper needs: get /metrics");
    let text = std::fs::read_to_string(format!("{root}/deploy/servicemonitor.yaml")).unwrap();
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let monitor = docs.iter().find(|d| d["kind"] == "ServiceMonitor").unwrap();
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "https");
    assert_eq!(endpoint["scheme"], "https");
    assert!(endpoint["bearerTokenFile"]
        .as_str()
        .unwrap()
        .ends_with("serviceaccount/token"));
    let service = docs.iter().find(|d| d["kind"] == "Service").unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "https");
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        ds["spec"]["selector"]["matchLabels"]
    );
}
