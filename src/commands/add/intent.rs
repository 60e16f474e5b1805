//! ADD's first phase: the VF and what the config asks of it, resolved and
//! checked before anything is touched.

use std::path::Path;

use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::log_info;
use crate::vf::Vf;

/// The VF and the MTU it gets, for one ADD.
pub struct Intent<'a> {
    pub vf: Vf,
    /// The pod's namespace path (CNI_NETNS).
    pub netns: &'a Path,
    /// The MTU the VF gets in the pod: `mtu`, or for an InfiniBand VF
    /// without one the PF's (IPoIB MTUs are 2044/4092/65520, never 9000).
    pub mtu: u32,
    /// The PF's MTU (read once), the ceiling for the VF's.
    pub pf_mtu: Option<u32>,
}

impl<'a> Intent<'a> {
    pub fn resolve(ctx: &'a Ctx) -> Result<Self> {
        // The administrator's node file: this machine's, and who may attach.
        let node_file = ctx.node_file()?;
        (node_file.ensure_ours(&ctx.node.settings)).map_err(railcni_ipam::IpamError::from)?;
        let namespace = ctx.env.args.pod_namespace.as_deref();
        crate::policy::admit_namespace(node_file, &ctx.conf.name, namespace)?;
        let device_id = ctx.conf.require_device_id()?;
        let sysfs = &ctx.node.sysfs;
        let network = &ctx.conf.name;
        let recorded = |pci: &str| {
            (ctx.node.store.load(pci).ok().flatten()).is_some_and(|r| r.network == *network)
        };
        let vf =
            match crate::policy::granted_whole_nic(node_file, network, sysfs, device_id, recorded)?
            {
                Some(pci) => super::whole_nic::resolve(ctx, &pci)?,
                None => ctx.node.sysfs.resolve(device_id)?,
            };
        validate_link_type(ctx, &vf)?;
        // What the administrator's node file lets this NAD take.
        crate::policy::enforce_ceiling(node_file, &ctx.conf.name, &vf, &ctx.conf.vf)?;
        let netns = ctx
            .env
            .netns
            .as_deref()
            .ok_or_else(|| Error::invalid_env("CNI_NETNS is required for ADD"))?;
        let pf_mtu = ctx.node.sysfs.pf_mtu(&vf);
        let mtu = match (vf.infiniband && !ctx.conf.mtu_given, pf_mtu) {
            (true, Some(pf)) => pf,
            _ => ctx.conf.mtu,
        };
        Ok(Intent {
            vf,
            netns,
            mtu,
            pf_mtu,
        })
    }

    /// The VF's MTU must fit under its PF's.
    pub fn validate_mtu(&self) -> Result<()> {
        match self.pf_mtu {
            Some(pf_mtu) if self.mtu > pf_mtu => Err(Error::config(
                "mtu",
                format!(
                    "{} is above the MTU {pf_mtu} of PF {} ({}); lower mtu or raise the PF's",
                    self.mtu,
                    self.vf.pf_netdev.as_deref().unwrap_or("?"),
                    self.vf.pf_pci
                ),
            )),
            _ => Ok(()),
        }
    }

    /// An InfiniBand VF whose GUID ADD sets: its driver is rebound, and its
    /// netdev comes back under a new name and ifindex.
    pub fn rebinds(&self, ctx: &Ctx) -> bool {
        self.vf.infiniband && ctx.conf.vf.ib_guid().is_some()
    }
}

/// An InfiniBand VF given no GUID keeps its own. All zeros (what a VF has
/// until something assigns one) or all ones is a GUID the subnet manager
/// never activates a port for: refused before anything changes. A PF that
/// does not report its VFs' GUIDs leaves nothing to judge.
fn require_usable_guid(ctx: &Ctx, vf: &Vf) -> Result<()> {
    let reported = crate::vf::settings::pf_netdev(vf)
        .and_then(|pf| ctx.node.hw.vf_state(pf, vf.index))
        .map(|attrs| {
            attrs.into_iter().find_map(|a| match a {
                crate::net::vf_info::VfAttr::IbGuid(g) => Some(g),
                _ => None,
            })
        });
    let guid = match reported {
        Ok(Some(g)) => g,
        Ok(None) => {
            log_info!(
                "no GUID given, and PF of InfiniBand VF {} reports none: leaving it as it is",
                vf.pci
            );
            return Ok(());
        }
        Err(e) => {
            crate::log_warn!(
                "cannot read InfiniBand VF {}'s GUID ({}): leaving it as it is",
                vf.pci,
                e.details()
            );
            return Ok(());
        }
    };
    if guid.0 != 0 && guid.0 != u64::MAX {
        log_info!(
            "no GUID given: InfiniBand VF {} keeps its GUID {guid}",
            vf.pci
        );
        return Ok(());
    }
    Err(Error::config(
        "infinibandGUID",
        format!(
            "InfiniBand VF {} has GUID {guid} and the pod was given none: the subnet manager never \
             activates a port without a GUID. Give it one: runtimeConfig.infinibandGUID (Multus \
             passes it when the NAD declares the infinibandGUID capability and ib-kubernetes or the \
             pod's annotation assigns one), the NAD's guid, or a GUID the SR-IOV operator assigns \
             to the VF; nothing was changed",
            vf.pci
        ),
    ))
}

/// Fields that do not apply to the VF's link type are refused, naming them.
fn validate_link_type(ctx: &Ctx, vf: &Vf) -> Result<()> {
    if vf.infiniband && !ctx.conf.rdma_qos.is_empty() {
        return Err(Error::config(
            "rdmaQoS",
            format!(
                "VF {} is an InfiniBand VF: there the subnet manager's service levels decide its \
                 traffic's class, not the host; remove rdmaQoS",
                vf.pci
            ),
        ));
    }
    if vf.infiniband {
        if let Some(field) = ctx.conf.ethernet_fields.first() {
            return Err(Error::config(
                field,
                format!(
                    "VF {} is an InfiniBand VF, which has no Ethernet MAC, VLAN or spoof check; remove {field}",
                    vf.pci
                ),
            ));
        }
        match ctx.conf.vf.ib_guid() {
            Some(g) => log_info!("setting GUID {g} on InfiniBand VF {}", vf.pci),
            // A whole PF's GUID is its firmware's, not a parent's to set.
            None if vf.whole => {}
            None => require_usable_guid(ctx, vf)?,
        }
    } else if ctx.conf.vf.ib_guid().is_some() {
        return Err(Error::config(
            "guid",
            format!(
                "VF {} is an Ethernet VF; a GUID applies to InfiniBand VFs only",
                vf.pci
            ),
        ));
    }
    Ok(())
}
