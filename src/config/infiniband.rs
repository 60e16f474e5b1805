//! What an InfiniBand rail's config may and may not say.

use crate::error::{Error, Result};
use crate::net::Mac;
use crate::vf::settings::nad;

pub(super) fn parse_pkey(p: Option<&str>) -> Result<Option<u16>> {
    let Some(p) = p else { return Ok(None) };
    u16::from_str_radix(p.trim_start_matches("0x"), 16)
        .ok()
        .filter(|k| k & 0x7fff != 0)
        .map(Some)
        .ok_or_else(|| Error::config("pkey", format!("{p:?} is not a partition key like 0x8001")))
}

/// The Ethernet-only fields the config sets (refused on InfiniBand VFs).
pub(super) fn ethernet_fields(conf: &nad::Conf, mac: Option<Mac>) -> Vec<&'static str> {
    (mac.map(|_| "mac").into_iter())
        .chain(nad::ethernet_keys(conf))
        .collect()
}

/// The VF-setting fields the config sets, `mac` and `guid` (whichever way
/// given) first: settings a PF makes for its VF, refused on a whole-NIC
/// rail, which has no parent to make them.
pub(super) fn vf_fields(conf: &nad::Conf, mac: Option<Mac>, guid: bool) -> Vec<&'static str> {
    (mac.map(|_| "mac").into_iter())
        .chain(guid.then_some("guid"))
        .chain(nad::setting_keys(conf))
        .collect()
}
