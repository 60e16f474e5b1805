//! Whole-NIC rails: a PF the node file grants a network (`wholeNic`),
//! moved into the pod itself as a VF would be (the launch kit's Host Device
//! RDMA profile). The node file is the administrator's word; a NAD never
//! grants a PF. What ADD checks before anything changes: the PF has no VFs
//! enabled (they would lose their parent's link), the config asks for no
//! VF setting (they are made through a parent a PF has not), and the host
//! neither addresses nor routes through it (taking it would cut the host
//! off).

use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::net::Netlink;
use crate::vf::home::find_in_host;
use crate::vf::Vf;

/// The granted PF at `pci`, checked.
pub fn resolve(ctx: &Ctx, pci: &str) -> Result<Vf> {
    let pf = ctx.node.sysfs.resolve_whole(pci)?;
    let numvfs = ctx.node.sysfs.numvfs(pci);
    if numvfs > 0 {
        return Err(Error::config(
            "deviceID",
            format!(
                "PF {pci} has {numvfs} VFs enabled (sriov_numvfs); a whole-NIC rail takes the PF \
                 itself: set its sriov_numvfs to 0, or attach its VFs on a VF rail"
            ),
        ));
    }
    if let Some(field) = ctx.conf.vf_fields.first() {
        return Err(Error::config(
            field,
            format!(
                "{pci} is a whole PF on a whole-NIC rail; {field} is a VF setting a PF makes for \
                 its VF, and this device has no parent to make it: remove {field}"
            ),
        ));
    }
    refuse_host_use(ctx, &pf)?;
    Ok(pf)
}

/// The host must not be using the PF: an address on it (other than IPv6
/// link-local, which the kernel gives every link) or a route through it.
fn refuse_host_use(ctx: &Ctx, pf: &Vf) -> Result<()> {
    let nl = Netlink::connect_in(&ctx.node.host)?;
    let Some(link) = find_in_host(&nl, &pf.pci, &pf.netdevs, None)? else {
        return Ok(()); // not on the host: the move's own lookup says so
    };
    let used = |why: String| {
        Error::config(
            "deviceID",
            format!(
                "PF {} ({}) is in use by the host: {why}; a whole-NIC rail must be a PF the host \
                 does not use (remove the address or route, or choose another PF)",
                pf.pci, link.name
            ),
        )
    };
    let addresses = nl.addresses(link.index)?;
    if let Some(a) = addresses.iter().find(|a| !is_link_local(a)) {
        return Err(used(format!("it holds address {a}")));
    }
    let routes = nl.routes()?;
    let through = routes
        .iter()
        .find(|r| r.oif == Some(link.index) && r.dst.is_none_or(|d| !is_link_local(&d)));
    match through {
        Some(r) => Err(used(format!(
            "table {} routes {} through it",
            r.table,
            r.dst.map_or("default".to_string(), |d| d.to_string())
        ))),
        None => Ok(()),
    }
}

/// Link-local unicast or multicast: what the kernel gives every link that
/// is up, which says nothing of the host using it.
fn is_link_local(net: &ipnet::IpNet) -> bool {
    match net.addr() {
        std::net::IpAddr::V6(a) => a.is_unicast_link_local() || a.is_multicast(),
        std::net::IpAddr::V4(a) => a.is_link_local() || a.is_multicast(),
    }
}
