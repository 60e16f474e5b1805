//! The plan-to-ADD table: every layout the planner writes, as a plan, a
//! CIDRPool or a launch-kit config and layout, with the node whose rails a
//! row attaches. `tests/plan_to_add.rs` runs each row on the fake node;
//! `tests/plan.rs` checks that the table holds every layout and every
//! addressing key.

/// Where a row's plan comes from.
pub enum From {
    /// A hand-written plan (YAML), its rails' `pf`s the fake node's.
    Plan(&'static str),
    /// `--from-cidrpool FILE`.
    CidrPool(&'static str),
    /// `--from-launch-kit FILE --layout LAYOUT`.
    LaunchKit(&'static str, &'static str),
}

pub struct Row {
    pub name: &'static str,
    pub from: From,
    /// The node whose rails are attached.
    pub node: &'static str,
}

pub const ROWS: &[Row] = &[
    Row {
        name: "per-node /31",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 172.16.0.0/15, routes: [172.16.0.0/12], resourceName: nvidia.com/rail1, pf: pf1}
  - {name: rail2, cidr: 172.18.0.0/15, routes: [172.16.0.0/12], resourceName: nvidia.com/rail2, pf: pf2}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "per-node /28, gatewayIndex 14",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 172.16.0.0/16, perNodePrefix: 28, gatewayIndex: 14, resourceName: nvidia.com/rail1, pf: pf1}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "IPv6 /127",
        node: "gpu-0",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 'fd00:16::/48', perNodePrefix: 127, resourceName: nvidia.com/rail1, pf: pf1}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "IPv6 /64",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 'fd02::/40', perNodePrefix: 64, resourceName: nvidia.com/rail1, pf: pf1}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "dual stack, IPv6 routes, gatewayIndex6",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - name: rail1
    cidr: 172.16.0.0/15
    cidr6: 'fd02::/40'
    perNodePrefix6: 64
    gatewayIndex6: 3
    routes: [172.16.0.0/12, 'fd02::/16']
    resourceName: nvidia.com/rail1
    pf: pf1
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "shared subnet, IPv4",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 172.16.0.0/16, perNodePrefix: 27, sharedSubnet: {gateway: 172.16.255.254}, resourceName: nvidia.com/rail1, pf: pf1}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "shared subnet, IPv6",
        node: "gpu-0",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 'fd00:16::/64', perNodePrefix: 120, sharedSubnet: {gateway: 'fd00:16::ffff:fffe'}, resourceName: nvidia.com/rail1, pf: pf1}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "two planes",
        node: "gpu-0",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 172.16.0.0/14, planes: 2, resourceName: nvidia.com/rail1, pf: [pf1, pf2]}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "static allocation beside indexes (an indexed node)",
        node: "gpu-0",
        from: From::Plan(STATICS),
    },
    Row {
        name: "static allocation beside indexes (the static node)",
        node: "gpu-9",
        from: From::Plan(STATICS),
    },
    Row {
        name: "allow rules",
        node: "gpu-0",
        from: From::Plan(
            "rails:
  - name: rail1
    cidr: 172.16.0.0/15
    resourceName: nvidia.com/rail1
    pf: pf1
    allow: {namespaces: [training], vlans: [100], trust: true}
nodes: {gpu-0: 0}",
        ),
    },
    Row {
        name: "CIDRPool import",
        node: "worker-gpu-1",
        from: From::CidrPool("cni-conf/nv-ipam-cidrpool.yaml"),
    },
    Row {
        name: "launch kit, nv-ipam",
        node: "cloud-dev-41",
        from: From::LaunchKit("tests/fixtures/launch-kit/cluster-config.yaml", "nv-ipam"),
    },
    Row {
        name: "launch kit, spectrum-x",
        node: "cloud-dev-41",
        from: From::LaunchKit("tests/fixtures/launch-kit/cluster-config.yaml", "spectrum-x"),
    },
    Row {
        name: "launch kit, spectrum-x-ipv6",
        node: "cloud-dev-41",
        from: From::LaunchKit(
            "tests/fixtures/launch-kit/cluster-config.yaml",
            "spectrum-x-ipv6",
        ),
    },
    Row {
        name: "whole-NIC rails (wholeNic)",
        node: "gpu-1",
        from: From::Plan(
            "rails:
  - {name: rail1, cidr: 172.16.0.0/15, routes: [172.16.0.0/12], resourceName: nvidia.com/hostdev_rail_1, pf: pf1, wholeNic: true}
  - {name: rail2, cidr: 172.18.0.0/15, routes: [172.16.0.0/12], resourceName: nvidia.com/hostdev_rail_2, pf: pf2, wholeNic: true}
nodes: {gpu-0: 0, gpu-1: 1}",
        ),
    },
    Row {
        name: "launch kit Host Device RDMA profile (host_device), nv-ipam",
        node: "cloud-dev-41",
        from: From::LaunchKit("tests/fixtures/launch-kit/host-device.378fd36.yaml", "nv-ipam"),
    },
    Row {
        name: "launch kit Spectrum-X swplb, spectrum-x",
        node: SWPLB_NODE,
        from: From::LaunchKit(SWPLB, "spectrum-x"),
    },
    Row {
        name: "launch kit Spectrum-X swplb, spectrum-x-ipv6",
        node: SWPLB_NODE,
        from: From::LaunchKit(SWPLB, "spectrum-x-ipv6"),
    },
];

pub const STATICS: &str = "rails:
  - name: rail1
    cidr: 172.16.0.0/15
    cidr6: 'fd02::/40'
    perNodePrefix6: 64
    resourceName: nvidia.com/rail1
    pf: pf1
    staticAllocations:
      - {nodeName: gpu-9, prefix: 172.16.1.0/31, gateway: 172.16.1.1, prefix6: 'fd02:0:0:ff::/64', gateway6: 'fd02:0:0:ff::2'}
nodes: {gpu-0: 0, gpu-1: 1}";

pub const SWPLB: &str = "tests/fixtures/launch-kit/spectrum-x-swplb.378fd36.yaml";

pub const SWPLB_NODE: &str = "";
