//! The VF settings a NAD asks for on the PF (sriov-cni's fields, and the
//! InfiniBand GUID), checked as sriov-cni checks them.

use serde_json::Value;

use super::{LinkState, Rate, VfSettings, Vlan, VlanProto};
use crate::error::{Error, Result};
use crate::net::{Guid, Mac};

/// The NAD's VF-settings fields as the config gave them.
#[derive(Debug, Default, Clone, Copy)]
pub struct NadFields<'a> {
    pub vlan: Option<&'a Value>,
    /// `vlanQoS`
    pub vlan_qos: Option<&'a Value>,
    /// `vlanProto`
    pub vlan_proto: Option<&'a str>,
    pub spoofchk: Option<&'a str>,
    pub trust: Option<&'a str>,
    pub link_state: Option<&'a str>,
    pub min_tx_rate: Option<&'a Value>,
    pub max_tx_rate: Option<&'a Value>,
}

/// A whole number 0..=`max` of the field's own type.
fn whole<T>(v: Option<&Value>, field: &str, max: T) -> Result<Option<T>>
where
    T: TryFrom<u64> + Into<u64> + Copy + std::fmt::Display,
{
    let Some(v) = v else { return Ok(None) };
    match v.as_u64().filter(|n| *n <= max.into()).map(T::try_from) {
        Some(Ok(n)) => Ok(Some(n)),
        _ => Err(Error::config(
            field,
            format!("{v} must be a whole number 0..{max}"),
        )),
    }
}

fn on_off(v: Option<&str>, field: &str) -> Result<Option<bool>> {
    match v {
        None => Ok(None),
        Some("on") => Ok(Some(true)),
        Some("off") => Ok(Some(false)),
        Some(other) => Err(Error::config(
            field,
            format!("{other:?} must be \"on\" or \"off\""),
        )),
    }
}

/// sriov-cni's VF fields, with the combinations it rejects rejected here
/// too; `mac` and `guid` as the runtime's overrides left them.
pub fn parse(conf: &NadFields, mac: Option<Mac>, guid: Option<Guid>) -> Result<VfSettings> {
    let vlan = whole(conf.vlan, "vlan", 4094u16)?;
    let qos = whole(conf.vlan_qos, "vlanQoS", 7u8)?;
    let proto = match conf.vlan_proto.map(str::to_ascii_lowercase).as_deref() {
        None => None,
        Some("802.1q") => Some(VlanProto::Dot1Q),
        Some("802.1ad") => Some(VlanProto::Dot1Ad),
        Some(other) => {
            return Err(Error::config(
                "vlanProto",
                format!("{other:?} must be 802.1q or 802.1ad"),
            ))
        }
    };
    if qos.is_some_and(|q| q > 0) && vlan.unwrap_or(0) == 0 {
        return Err(Error::config("vlanQoS", "needs a non-zero vlan"));
    }
    if proto.is_some() && vlan.unwrap_or(0) == 0 {
        return Err(Error::config("vlanProto", "needs a non-zero vlan"));
    }
    Ok(VfSettings {
        mac,
        vlan: vlan.map(|id| Vlan {
            id,
            qos: qos.unwrap_or(0),
            proto: proto.unwrap_or(VlanProto::Dot1Q),
        }),
        spoofchk: on_off(conf.spoofchk, "spoofchk")?,
        trust: on_off(conf.trust, "trust")?,
        link_state: parse_link_state(conf.link_state)?,
        rate: parse_rate(conf)?,
        ib_guid: guid,
    })
}

fn parse_link_state(v: Option<&str>) -> Result<Option<LinkState>> {
    match v {
        None => Ok(None),
        Some("auto") => Ok(Some(LinkState::Auto)),
        Some("enable") => Ok(Some(LinkState::Enable)),
        Some("disable") => Ok(Some(LinkState::Disable)),
        Some(other) => Err(Error::config(
            "link_state",
            format!("{other:?} must be auto, enable or disable"),
        )),
    }
}

/// `min_tx_rate` / `max_tx_rate` in Mbps (0: no limit).
fn parse_rate(conf: &NadFields) -> Result<Option<Rate>> {
    let min = whole(conf.min_tx_rate, "min_tx_rate", u32::MAX)?;
    let max = whole(conf.max_tx_rate, "max_tx_rate", u32::MAX)?;
    if let (Some(min), Some(max)) = (min, max) {
        if max != 0 && max < min {
            return Err(Error::config(
                "max_tx_rate",
                format!("{max} is below min_tx_rate {min}"),
            ));
        }
    }
    Ok((min.is_some() || max.is_some()).then(|| Rate {
        min_mbps: min.unwrap_or(0),
        max_mbps: max.unwrap_or(0),
    }))
}

/// A MAC a VF can take (unicast, not zero).
pub fn parse_mac(s: &str, field: &str) -> Result<Mac> {
    let mac: Mac = s.parse().map_err(|e: String| Error::config(field, e))?;
    if !mac.is_unicast() {
        return Err(Error::config(
            field,
            format!("{s} is a multicast or zero MAC; a VF needs a unicast one"),
        ));
    }
    Ok(mac)
}

pub fn parse_guid(s: &str, field: &str) -> Result<Guid> {
    s.parse().map_err(|e: String| Error::config(field, e))
}
