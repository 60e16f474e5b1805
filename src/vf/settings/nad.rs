//! The VF settings a NAD asks for on the PF (sriov-cni's fields, and the
//! InfiniBand GUID), checked as sriov-cni checks them: one parser per
//! setting, in a table (`FIELDS`), over the config object as it came, each
//! beside the ceiling the node file's `allow` puts on it.

use base::node_file::Allow;
use serde_json::{Map, Value};

use super::{LinkState, Rate, VfAttr, VfSettings, Vlan, VlanProto};
use crate::error::{Error, Result};
use crate::net::{Guid, Mac};

/// One VF setting as a NAD spells it.
pub struct NadField {
    /// The config's top-level keys it reads.
    pub keys: &'static [&'static str],
    /// Only an Ethernet VF has it (refused on InfiniBand VFs).
    pub ethernet_only: bool,
    /// The setting those keys ask for, if any.
    pub parse: fn(&Conf) -> Result<Option<VfAttr>>,
    /// What a rail's `allow` lets a NAD ask of this setting: `None` when
    /// `attr` (this field's own setting; others pass) is within it.
    pub ceiling: Option<fn(&Allow, &VfAttr) -> Option<OverCeiling>>,
}

/// A setting above its rail's ceiling, in the words of the refusal.
pub struct OverCeiling {
    /// The NAD's key.
    pub field: &'static str,
    /// The `allow` key that does not let it (`networks.<rail>.allow.<key>`).
    pub allow_key: &'static str,
    /// What was asked, as a sentence missing its network: "trust on".
    pub asked: String,
}

impl OverCeiling {
    fn new(field: &'static str, allow_key: &'static str, asked: String) -> Option<Self> {
        Some(OverCeiling {
            field,
            allow_key,
            asked,
        })
    }
}

/// The config object.
pub type Conf = Map<String, Value>;

/// Every VF setting a NAD can ask for, besides the MAC and the GUID (the
/// runtime may override those: `config::runtime`).
pub const FIELDS: &[NadField] = &[
    NadField {
        keys: &["vlan", "vlanQoS", "vlanProto"],
        ethernet_only: true,
        parse: vlan,
        ceiling: Some(|allow, attr| match attr {
            VfAttr::Vlan(v) if v.id != 0 && !allow.vlans.contains(&v.id) => OverCeiling::new(
                "vlan",
                "vlans",
                format!("VLAN {} (it may use {:?})", v.id, allow.vlans),
            ),
            _ => None,
        }),
    },
    NadField {
        keys: &["spoofchk"],
        ethernet_only: true,
        parse: |c| Ok(on_off(c, "spoofchk")?.map(VfAttr::Spoofchk)),
        ceiling: Some(|allow, attr| match attr {
            VfAttr::Spoofchk(false) if !allow.spoofchk_off => {
                OverCeiling::new("spoofchk", "spoofchkOff", "spoofchk off".into())
            }
            _ => None,
        }),
    },
    NadField {
        keys: &["trust"],
        ethernet_only: false,
        parse: |c| Ok(on_off(c, "trust")?.map(VfAttr::Trust)),
        ceiling: Some(|allow, attr| match attr {
            VfAttr::Trust(true) if !allow.trust => {
                OverCeiling::new("trust", "trust", "trust on".into())
            }
            _ => None,
        }),
    },
    NadField {
        keys: &["link_state"],
        ethernet_only: false,
        parse: link_state,
        ceiling: None,
    },
    NadField {
        keys: &["min_tx_rate", "max_tx_rate"],
        ethernet_only: false,
        parse: rate,
        ceiling: Some(|allow, attr| match (attr, allow.max_tx_rate_mbps) {
            (VfAttr::Rate(r), Some(most)) if r.max_mbps.max(r.min_mbps) > most => OverCeiling::new(
                "max_tx_rate",
                "maxTxRateMbps",
                format!(
                    "a rate of {} Mbps (its ceiling is {most} Mbps)",
                    r.max_mbps.max(r.min_mbps)
                ),
            ),
            _ => None,
        }),
    },
];

/// The first of `asked`'s settings above `allow`.
pub fn over_ceiling(allow: &Allow, asked: &VfSettings) -> Option<OverCeiling> {
    let ceilings = FIELDS.iter().filter_map(|f| f.ceiling);
    let attrs = asked.attrs();
    ceilings
        .flat_map(|within| attrs.iter().filter_map(move |a| within(allow, a)))
        .next()
}

/// Every setting the config asks for; `mac` and `guid` as the runtime's
/// overrides left them.
pub fn parse(conf: &Conf, mac: Option<Mac>, guid: Option<Guid>) -> Result<VfSettings> {
    let mut out = VfSettings::from_attrs(
        mac.map(VfAttr::Mac)
            .into_iter()
            .chain(guid.map(VfAttr::IbGuid)),
    );
    for field in FIELDS {
        if let Some(attr) = (field.parse)(conf)? {
            out.set(attr);
        }
    }
    Ok(out)
}

/// Every VF-setting key the config sets (what a PF sets for its VF).
pub fn setting_keys(conf: &Conf) -> impl Iterator<Item = &'static str> + '_ {
    (FIELDS.iter())
        .flat_map(|f| f.keys.iter().copied())
        .filter(|k| given(conf, k).is_some())
}

/// The Ethernet-only keys the config sets.
pub fn ethernet_keys(conf: &Conf) -> impl Iterator<Item = &'static str> + '_ {
    (FIELDS.iter().filter(|f| f.ethernet_only))
        .flat_map(|f| f.keys.iter().copied())
        .filter(|k| given(conf, k).is_some())
}

/// A key's value; `null` is not given.
fn given<'a>(conf: &'a Conf, key: &str) -> Option<&'a Value> {
    conf.get(key).filter(|v| !v.is_null())
}

/// A whole number 0..=`max` of the field's own type.
fn whole<T>(conf: &Conf, field: &str, max: T) -> Result<Option<T>>
where
    T: TryFrom<u64> + Into<u64> + Copy + std::fmt::Display,
{
    let Some(v) = given(conf, field) else {
        return Ok(None);
    };
    match v.as_u64().filter(|n| *n <= max.into()).map(T::try_from) {
        Some(Ok(n)) => Ok(Some(n)),
        _ => Err(Error::config(
            field,
            format!("{v} must be a whole number 0..{max}"),
        )),
    }
}

/// One of `words`, as a string.
fn word<'a>(conf: &'a Conf, field: &str, words: &str) -> Result<Option<&'a str>> {
    match given(conf, field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::config(field, format!("{other} must be {words}"))),
    }
}

fn on_off(conf: &Conf, field: &str) -> Result<Option<bool>> {
    const WORDS: &str = "\"on\" or \"off\"";
    match word(conf, field, WORDS)? {
        None => Ok(None),
        Some("on") => Ok(Some(true)),
        Some("off") => Ok(Some(false)),
        Some(other) => Err(Error::config(field, format!("{other:?} must be {WORDS}"))),
    }
}

/// `vlan`, `vlanQoS`, `vlanProto`, with the combinations sriov-cni rejects
/// rejected here too.
fn vlan(conf: &Conf) -> Result<Option<VfAttr>> {
    let vlan = whole(conf, "vlan", 4094u16)?;
    let qos = whole(conf, "vlanQoS", 7u8)?;
    let words = "802.1q or 802.1ad";
    let proto = match word(conf, "vlanProto", words)?
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None => None,
        Some("802.1q") => Some(VlanProto::Dot1Q),
        Some("802.1ad") => Some(VlanProto::Dot1Ad),
        Some(other) => {
            return Err(Error::config(
                "vlanProto",
                format!("{other:?} must be {words}"),
            ))
        }
    };
    if qos.is_some_and(|q| q > 0) && vlan.unwrap_or(0) == 0 {
        return Err(Error::config("vlanQoS", "needs a non-zero vlan"));
    }
    if proto.is_some() && vlan.unwrap_or(0) == 0 {
        return Err(Error::config("vlanProto", "needs a non-zero vlan"));
    }
    Ok(vlan.map(|id| {
        VfAttr::Vlan(Vlan {
            id,
            qos: qos.unwrap_or(0),
            proto: proto.unwrap_or(VlanProto::Dot1Q),
        })
    }))
}

fn link_state(conf: &Conf) -> Result<Option<VfAttr>> {
    let words = "auto, enable or disable";
    let state = match word(conf, "link_state", words)? {
        None => return Ok(None),
        Some("auto") => LinkState::Auto,
        Some("enable") => LinkState::Enable,
        Some("disable") => LinkState::Disable,
        Some(other) => {
            return Err(Error::config(
                "link_state",
                format!("{other:?} must be {words}"),
            ))
        }
    };
    Ok(Some(VfAttr::LinkState(state)))
}

/// `min_tx_rate` / `max_tx_rate` in Mbps (0: no limit).
fn rate(conf: &Conf) -> Result<Option<VfAttr>> {
    let min = whole(conf, "min_tx_rate", u32::MAX)?;
    let max = whole(conf, "max_tx_rate", u32::MAX)?;
    if let (Some(min), Some(max)) = (min, max) {
        if max != 0 && max < min {
            return Err(Error::config(
                "max_tx_rate",
                format!("{max} is below min_tx_rate {min}"),
            ));
        }
    }
    Ok((min.is_some() || max.is_some()).then(|| {
        VfAttr::Rate(Rate {
            min_mbps: min.unwrap_or(0),
            max_mbps: max.unwrap_or(0),
        })
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
