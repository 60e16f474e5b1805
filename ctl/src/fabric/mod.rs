//! The fabric plan the network team and Kubernetes agree on: rails × nodes,
//! one prefix per node per rail, the switch port's address as gateway.
//! `railcnictl plan` reads it (JSON or YAML, or an nv-ipam CIDRPool to migrate
//! from) and emits small NADs, the ConfigMap that carries the plan (each
//! node computes its own node file from it), one node's node file, a pod
//! annotation, dra-driver-sriov's objects, and a CSV for the switch team.
//! Pure: files in, text out; the arithmetic is the IPAM crate's own.

pub mod cidrpool;
pub mod dra;
pub mod emit;
pub mod launch_kit;

mod planes;
mod resolve;
mod schema;

pub use resolve::Resolved;
pub use schema::{Nodes, Pf, Plan, PlanError, Rail, Role, SharedSubnet};

#[cfg(test)]
mod tests {
    use super::schema::Result;
    use super::*;

    fn plan(text: &str) -> Result<Resolved> {
        Plan::parse(text)?.resolve()
    }

    #[test]
    fn plane_cidrs_give_each_plane_its_own_and_are_checked() {
        let base = "rails:\n- {name: r0, cidr: 172.16.0.0/12, planes: 2, perNodePrefix: 31, gatewayIndex: 1, PC}\nnodes: [a, b]\n";
        let r = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18, 172.20.0.0/18]")).unwrap();
        let b1: Vec<String> = (r.allocations.iter())
            .filter(|a| a.node == "b")
            .map(|a| format!("{} {}", a.rail, a.prefix))
            .collect();
        assert_eq!(b1, ["r0-p0 172.16.0.2/31", "r0-p1 172.20.0.2/31"]);
        let e = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18]"))
            .err()
            .unwrap();
        assert!(e.0.contains("1 cidrs for 2 planes"), "{e}");
        let e = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18, 10.0.0.0/18]"))
            .err()
            .unwrap();
        assert!(e.0.contains("10.0.0.0/18 is not in the rail's cidr"), "{e}");
        let e = plan(
            &base
                .replace("planes: 2, ", "")
                .replace("PC", "planeCidrs: [172.16.0.0/18]"),
        )
        .err()
        .unwrap();
        assert!(e.0.contains("planeCidrs without planes"), "{e}");
    }

    #[test]
    fn one_slash_31_per_node_per_rail_with_the_switch_port_as_gateway() {
        let r = plan(
            "rails:\n  - {name: rail1, cidr: 172.16.0.0/15}\n  - {name: rail2, cidr: 172.18.0.0/15}\nnodes: [gpu-0, gpu-1]\n",
        )
        .unwrap();
        let a = |node: &str, rail: &str| {
            r.allocations
                .iter()
                .find(|a| a.node == node && a.rail == rail)
                .map(|a| {
                    (
                        a.prefix.to_string(),
                        a.host.unwrap().to_string(),
                        a.gateway.unwrap().to_string(),
                    )
                })
                .unwrap()
        };
        assert_eq!(
            a("gpu-0", "rail1"),
            (
                "172.16.0.0/31".into(),
                "172.16.0.0".into(),
                "172.16.0.1".into()
            )
        );
        assert_eq!(
            a("gpu-1", "rail2"),
            (
                "172.18.0.2/31".into(),
                "172.18.0.2".into(),
                "172.18.0.3".into()
            )
        );
    }

    #[test]
    fn a_node_map_keeps_prefixes_when_nodes_leave() {
        let r = plan(
            r#"{"rails": [{"name": "rail1", "cidr": "172.16.0.0/15"}], "nodes": {"gpu-2": 2}}"#,
        )
        .unwrap();
        assert_eq!(r.allocations[0].prefix.to_string(), "172.16.0.4/31");
    }

    #[test]
    fn overlapping_rails_duplicate_nodes_and_misfits_are_refused() {
        for (text, words) in [
            ("rails: [{name: a, cidr: 172.16.0.0/15}, {name: b, cidr: 172.17.0.0/16}]\nnodes: [n]", "overlaps"),
            ("rails: [{name: a, cidr: 172.16.0.0/15}]\nnodes: [n, n]", "listed twice"),
            ("rails: [{name: a, cidr: 172.16.0.0/30}]\nnodes: [n0, n1, n2]", "holds 2"),
            ("rails: [{name: A_1, cidr: 172.16.0.0/15}]\nnodes: [n]", "Kubernetes name"),
            ("rails: [{name: a, cidr: 172.16.0.0/15, bogus: 1}]\nnodes: [n]", "bogus"),
            ("rails: []\nnodes: [n]", "no rails"),
        ] {
            let e = plan(text).err().unwrap_or_else(|| panic!("{text} was accepted"));
            assert!(e.0.contains(words), "{text}: {e}");
        }
    }
}
