//! What the node file lets a NAD take (`networks.<name>.pf`, `.allow`): a
//! NAD is a namespaced object any namespace admin can write, the node file
//! the administrator's. Enforced on ADD before anything on the node
//! changes; DEL, CHECK and GC never consult it (a rule added later must not
//! strand a running pod).

use base::node_file::{NodeFile, RailRules};

use crate::error::{Error, Result};
use crate::vf::settings::{nad, VfSettings};
use crate::vf::Vf;

/// Refuse a pod of a namespace the rail does not admit (`K8S_POD_NAMESPACE`;
/// none given counts as not admitted where the rail names namespaces).
pub fn admit_namespace(node_file: &NodeFile, network: &str, namespace: Option<&str>) -> Result<()> {
    match node_file.namespace_refusal(network, namespace) {
        Some(why) => Err(Error::config("K8S_POD_NAMESPACE", why)),
        None => Ok(()),
    }
}

/// An attachment of `pod` (`namespace/name`, as records keep it) that the
/// rail's namespace rule, as it is now, would refuse: the sentence saying
/// so, for `status` and `doctor` (a rule added later strands no pod: DEL,
/// CHECK and GC never consult it).
pub fn outside_namespace_rule(
    node_file: &NodeFile,
    network: &str,
    pod: Option<&str>,
) -> Option<String> {
    let namespace = pod.and_then(|p| p.split_once('/')).map(|(ns, _)| ns);
    let listed = node_file.refusing_namespace(network, namespace)?;
    Some(format!(
        "{} is not of a namespace networks.{network}.allow.namespaces admits ({listed}); a new ADD of it \
         would be refused",
        pod.map_or("a pod the runtime did not name".to_string(), |p| format!("pod {p}"))
    ))
}

/// Refuse a VF outside the rail's PF(s), or VF settings above the rail's
/// ceiling; each refusal names the node file's rule.
pub fn enforce_ceiling(
    node_file: &NodeFile,
    network: &str,
    vf: &Vf,
    asked: &VfSettings,
) -> Result<()> {
    let Some(rail) = node_file.rules(network) else {
        return Ok(());
    };
    require_rail_pf(rail, network, vf)?;
    let over = (rail.allow.as_ref()).and_then(|allow| nad::over_ceiling(allow, asked));
    match over {
        Some(over) => Err(refused(
            over.field,
            format!("networks.{network}.allow.{}", over.allow_key),
            format!("{} is not allowed on network {network}", over.asked),
        )),
        None => Ok(()),
    }
}

fn refused(field: &str, rule: String, why: String) -> Error {
    Error::config(
        field,
        format!("{why} (node file rule {rule}); nothing was changed"),
    )
}

/// The PCI address of the whole PF the node file grants `network`, when
/// `device_id` is that PF (`networks.<name>.wholeNic` with its `pf`): the
/// only way a device that is not a VF is attached. Any other device goes
/// the VF way (and a PF there is refused, as ever). A PF in a pod already
/// is not on the host to be named: it is the grant's while a record of
/// this network holds it (`recorded`), for ADD to replay or refuse as busy.
pub fn granted_whole_nic(
    node_file: &NodeFile,
    network: &str,
    sysfs: &crate::vf::Sysfs,
    device_id: &str,
    recorded: impl Fn(&str) -> bool,
) -> Result<Option<String>> {
    let Some(rail) = node_file.rules(network).filter(|r| r.whole_nic) else {
        return Ok(None);
    };
    let asked = crate::pci::normalize(device_id)?;
    let Some(pf) = rail.pf.as_deref() else {
        return Err(refused(
            "deviceID",
            format!("networks.{network}.wholeNic"),
            format!("network {network} is a whole-NIC rail but names no pf"),
        ));
    };
    // `pf` is the PF's netdev, or its PCI address: a PF bound to vfio-pci
    // (DPDK) has no netdev to name it by.
    let granted = crate::pci::normalize(pf)
        .ok()
        .or_else(|| sysfs.pci_of_netdev(pf));
    match granted {
        Some(pci) if pci == asked => Ok(Some(pci)),
        Some(pci) => Err(refused(
            "deviceID",
            format!("networks.{network}.pf"),
            format!("{asked} is not {pf} ({pci}), the PF network {network} is granted whole"),
        )),
        None if recorded(&asked) => Ok(Some(asked)),
        None => Err(Error::DeviceNotFound(format!(
            "PF {pf}, which the node file grants network {network} whole, is not on this host \
             (no /sys/class/net/{pf}/device); it is in a pod already, or gone"
        ))),
    }
}

/// The rail's VFs are those of its PF (a whole-NIC rail's device is its
/// PF itself, checked by `granted_whole_nic`).
fn require_rail_pf(rail: &RailRules, network: &str, vf: &Vf) -> Result<()> {
    let Some(pf) = rail.pf.as_deref().filter(|_| !vf.whole) else {
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
