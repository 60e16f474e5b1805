//! Import nv-ipam CIDRPools (`nv-ipam.nvidia.com/v1alpha1`), so a cluster
//! moves to railcni without renumbering: each pool becomes a rail named
//! after it, and its static allocations are kept as they are.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::Deserialize;

use super::{Nodes, Plan, PlanError, Rail, Role};
use railcni_ipam::config::StaticAllocation;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CidrPool {
    kind: String,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    cidr: IpNet,
    #[serde(default)]
    gateway_index: Option<u32>,
    per_node_network_prefix: u8,
    #[serde(default)]
    static_allocations: Vec<PoolAllocation>,
    #[serde(default)]
    routes: Vec<PoolRoute>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoolAllocation {
    #[serde(default)]
    node_name: Option<String>,
    prefix: IpNet,
    #[serde(default)]
    gateway: Option<IpAddr>,
}

#[derive(Deserialize)]
struct PoolRoute {
    dst: IpNet,
}

/// A plan from one or more CIDRPool documents (YAML, `---`-separated).
pub fn import(text: &str) -> Result<Plan, PlanError> {
    let mut rails = Vec::new();
    let mut namespace = None;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let pool =
            CidrPool::deserialize(doc).map_err(|e| PlanError(format!("not a CIDRPool: {e}")))?;
        if pool.kind != "CIDRPool" {
            return Err(PlanError(format!(
                "{} is a {}, not a CIDRPool",
                pool.metadata.name, pool.kind
            )));
        }
        namespace = namespace.or(pool.metadata.namespace.clone());
        // Prefixes without a node are reservations: nothing to carry over.
        let static_allocations = pool
            .spec
            .static_allocations
            .into_iter()
            .filter_map(|a| {
                Some(StaticAllocation {
                    node_name: a.node_name?,
                    prefix: a.prefix,
                    gateway: a.gateway,
                    prefix6: None,
                    gateway6: None,
                })
            })
            .collect::<Vec<_>>();
        if static_allocations.is_empty() {
            return Err(PlanError(format!(
                "CIDRPool {} has no per-node static allocations; their allocations live in its status, \
                 which only the nv-ipam controller knows: list them as staticAllocations first",
                pool.metadata.name
            )));
        }
        rails.push(Rail {
            name: pool.metadata.name,
            cidr: pool.spec.cidr,
            per_node_prefix: Some(pool.spec.per_node_network_prefix),
            gateway_index: pool.spec.gateway_index,
            routes: pool.spec.routes.into_iter().map(|r| r.dst).collect(),
            role: Role::Compute,
            static_allocations,
            ..Rail::default()
        });
    }
    Ok(Plan {
        rails,
        nodes: Nodes::default(),
        namespace: namespace.unwrap_or_else(|| "default".into()),
        config_map_namespace: "kube-system".into(),
    })
}

#[cfg(test)]
mod tests {
    /// An IPv6 CIDRPool of the reference layout (a /64 per node, the leaf
    /// `::2`) imports with every node's prefix and gateway kept.
    #[test]
    fn an_ipv6_slash_64_cidr_pool_imports() {
        let pool = "apiVersion: nv-ipam.nvidia.com/v1alpha1\nkind: CIDRPool\nmetadata: {name: rail1}\n\
                    spec:\n  cidr: fd02:1:100::/40\n  gatewayIndex: 2\n  perNodeNetworkPrefix: 64\n  \
                    routes: [{dst: \"fd02::/16\"}]\n  staticAllocations:\n  \
                    - {nodeName: worker-gpu-1, prefix: \"fd02:1:100:1::/64\", gateway: \"fd02:1:100:1::2\"}\n";
        let r = super::import(pool).unwrap().resolve().unwrap();
        let f = r.node_file_json("worker-gpu-1");
        assert_eq!(f["networks"]["rail1"]["prefix"], "fd02:1:100:1::/64");
        assert_eq!(f["networks"]["rail1"]["gateway"], "fd02:1:100:1::2");
        assert!(r
            .csv()
            .contains("worker-gpu-1,rail1,fd02:1:100:1::1,fd02:1:100:1::2,fd02:1:100:1::/64\n"));
    }
}
