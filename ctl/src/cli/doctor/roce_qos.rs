//! The PF's half of a RoCE rail's QoS: `rdmaQoS` marks the rail's RDMA
//! traffic with a DSCP; the fabric keeps it lossless only if the PF trusts
//! that DSCP (maps it to a priority) and has PFC on that priority. Read
//! through DCB netlink, as `dcb app show` and `dcb pfc show` read it; what
//! is wrong is a finding with the command that sets it (the NIC's
//! configuration is its operator's job, never railcni's).

use super::finding::Finding;
use super::rails::Rail;
use base::rdma_policy::RdmaPolicy;
use railcni::hw;
use railcni::rdma_qos::describe;

pub fn findings(rails: &[Rail]) -> Vec<Finding> {
    let hardware = hw::backend();
    rails
        .iter()
        .filter(|r| r.rdma != RdmaPolicy::Off && !r.dpdk)
        .filter_map(|r| Some((r, r.qos_class?)))
        .map(|(rail, class)| finding(hardware.as_ref(), rail, class))
        .collect()
}

fn finding(hardware: &dyn hw::Hardware, rail: &Rail, class: u8) -> Finding {
    let id = format!("{}/roce-qos", rail.name);
    let dscp = class >> 2;
    let expected = format!("DSCP {dscp} trusted, mapped to a priority with PFC on");
    let Some(pf) = &rail.pf else {
        return Finding::skipped(id, "no PF named for this rail", &expected);
    };
    let dcb = match hardware.dcb(pf) {
        Ok(dcb) => dcb,
        Err(e) if e.errno() == Some(nix::errno::Errno::EOPNOTSUPP) => {
            return Finding::broken(
                id,
                format!("PF {pf} has no DCB (its driver answers EOPNOTSUPP)"),
                &expected,
                format!(
                    "class {} needs PFC on the PF: use a NIC whose driver has DCB (mlx5), \
                     or remove rdmaQoS from {}",
                    describe(class),
                    rail.name
                ),
            )
        }
        Err(e) => {
            return Finding::broken(
                id,
                format!("cannot read PF {pf}'s DCB: {}", e.details()),
                &expected,
                format!("dcb app show dev {pf}"),
            )
        }
    };
    match dcb.priority_of(dscp) {
        None => Finding::broken(
            id,
            format!("PF {pf} maps no priority to DSCP {dscp} (it does not trust DSCP for class {class})"),
            &expected,
            format!(
                "dcb app add dev {pf} dscp-prio {dscp}:<the fabric's lossless priority> \
                 (NVIDIA: mlnx_qos -i {pf} --trust dscp)"
            ),
        ),
        Some(prio) if !dcb.pfc_on(prio) => Finding::broken(
            id,
            format!("PF {pf}: DSCP {dscp} → priority {prio}, but PFC is off on priority {prio}"),
            &expected,
            format!("dcb pfc set dev {pf} prio-pfc {prio}:on"),
        ),
        Some(prio) => Finding::ok(
            id,
            format!("PF {pf}: DSCP {dscp} → priority {prio}, PFC on"),
            &expected,
        ),
    }
}
