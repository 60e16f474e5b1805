//! What an InfiniBand rail's config may and may not say.

use super::RawConf;
use crate::error::{Error, Result};
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
