//! The VF settings a NAD asks for on the PF (sriov-cni's fields) and the
//! InfiniBand ones, checked as sriov-cni checks them.

use serde_json::Value;

use super::RawConf;
use crate::error::{Error, Result};
use crate::hw::{LinkState, Rate, VfSettings, Vlan, VlanProto};
use crate::net::Mac;

pub(super) fn parse_pkey(p: Option<&str>) -> Result<Option<u16>> {
    let Some(p) = p else { return Ok(None) };
    u16::from_str_radix(p.trim_start_matches("0x"), 16)
        .ok()
        .filter(|k| k & 0x7fff != 0)
        .map(Some)
        .ok_or_else(|| Error::config("pkey", format!("{p:?} is not a partition key like 0x8001")))
}

/// The Ethernet-only fields the config sets (refused on InfiniBand VFs).
pub(super) fn ethernet_fields(conf: &RawConf, mac: Option<Mac>) -> Vec<&'static str> {
    [
        ("mac", mac.is_some()),
        ("vlan", conf.vlan.is_some()),
        ("vlanQoS", conf.vlan_qos.is_some()),
        ("vlanProto", conf.vlan_proto.is_some()),
        ("spoofchk", conf.spoofchk.is_some()),
    ]
    .into_iter()
    .filter_map(|(f, set)| set.then_some(f))
    .collect()
}

/// A whole number 0..=`max` of the field's own type.
pub(super) fn whole<T>(v: Option<&Value>, field: &str, max: T) -> Result<Option<T>>
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

pub(super) fn on_off(v: Option<&str>, field: &str) -> Result<Option<bool>> {
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

/// sriov-cni's VF fields, with the combinations it rejects rejected here too.
pub(super) fn vf_settings(conf: &RawConf, mac: Option<Mac>) -> Result<VfSettings> {
    let vlan = whole(conf.vlan.as_ref(), "vlan", 4094u16)?;
    let qos = whole(conf.vlan_qos.as_ref(), "vlanQoS", 7u8)?;
    let proto = match conf
        .vlan_proto
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
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
        spoofchk: on_off(conf.spoofchk.as_deref(), "spoofchk")?,
        trust: on_off(conf.trust.as_deref(), "trust")?,
        link_state: parse_link_state(conf.link_state.as_deref())?,
        rate: parse_rate(conf)?,
        ib_guid: None,
    })
}

pub(super) fn parse_link_state(v: Option<&str>) -> Result<Option<LinkState>> {
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
pub(super) fn parse_rate(conf: &RawConf) -> Result<Option<Rate>> {
    let min = whole(conf.min_tx_rate.as_ref(), "min_tx_rate", u32::MAX)?;
    let max = whole(conf.max_tx_rate.as_ref(), "max_tx_rate", u32::MAX)?;
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

pub(super) fn parse_mac(s: &str, field: &str) -> Result<Mac> {
    let mac: Mac = s.parse().map_err(|e: String| Error::config(field, e))?;
    if !mac.is_unicast() {
        return Err(Error::config(
            field,
            format!("{s} is a multicast or zero MAC; a VF needs a unicast one"),
        ));
    }
    Ok(mac)
}

pub(super) fn parse_guid(s: &str, field: &str) -> Result<crate::hw::Guid> {
    s.parse().map_err(|e: String| Error::config(field, e))
}
