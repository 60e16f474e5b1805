//! What the node file lets a NAD take (`networks.<name>.pf`, `.allow`): a
//! NAD is a namespaced object any namespace admin can write, the node file
//! the administrator's. Checked before anything on the node changes.

use railcni_ipam::config::{Allow, NodeAllocation, NodeFile};

use crate::error::{Error, Result};
use crate::vf::settings::{VfAttr, VfSettings};
use crate::vf::Vf;

/// Refuse a VF outside the rail's PF(s), or VF settings above the rail's
/// ceiling; each refusal names the node file's rule.
pub fn check(node_file: &NodeFile, network: &str, vf: &Vf, asked: &VfSettings) -> Result<()> {
    let Some(rail) = node_file.networks.get(network) else {
        return Ok(());
    };
    check_pf(rail, network, vf)?;
    match &rail.allow {
        Some(allow) => asked
            .attrs()
            .iter()
            .try_for_each(|a| check_attr(allow, network, a)),
        None => Ok(()),
    }
}

fn refused(field: &str, rule: String, why: String) -> Error {
    Error::config(
        field,
        format!("{why} (node file rule {rule}); nothing was changed"),
    )
}

/// The rail's VFs are those of its PF.
fn check_pf(rail: &NodeAllocation, network: &str, vf: &Vf) -> Result<()> {
    let Some(pf) = rail.pf.as_deref() else {
        return Ok(());
    };
    if vf.pf_netdev.as_deref() == Some(pf) {
        return Ok(());
    }
    Err(refused(
        "deviceID",
        format!("networks.{network}.pf"),
        format!(
            "VF {} is a VF of PF {} ({}), not of {pf}, the PF of network {network}",
            vf.pci,
            vf.pf_netdev.as_deref().unwrap_or("without a netdev"),
            vf.pf_pci
        ),
    ))
}

fn check_attr(allow: &Allow, network: &str, attr: &VfAttr) -> Result<()> {
    let rule = |key: &str| format!("networks.{network}.allow.{key}");
    match *attr {
        VfAttr::Trust(true) if !allow.trust => Err(refused(
            "trust",
            rule("trust"),
            format!("trust on is not allowed on network {network}"),
        )),
        VfAttr::Spoofchk(false) if !allow.spoofchk_off => Err(refused(
            "spoofchk",
            rule("spoofchkOff"),
            format!("spoofchk off is not allowed on network {network}"),
        )),
        VfAttr::Vlan(v) if v.id != 0 && !allow.vlans.contains(&v.id) => Err(refused(
            "vlan",
            rule("vlans"),
            format!(
                "VLAN {} is not one network {network} may use ({:?})",
                v.id, allow.vlans
            ),
        )),
        VfAttr::Rate(r) => match allow.max_tx_rate_mbps {
            Some(most) if r.max_mbps.max(r.min_mbps) > most => Err(refused(
                "max_tx_rate",
                rule("maxTxRateMbps"),
                format!(
                    "a rate of {} Mbps is above network {network}'s ceiling of {most} Mbps",
                    r.max_mbps.max(r.min_mbps)
                ),
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}
