//! VF settings: the attributes a NAD asks for on the PF (MAC, VLAN, spoof
//! check, trust, link state, rates, InfiniBand GUID), all in this module:
//! the type, read from the NAD (`nad`), set on the PF on ADD and restored
//! on detach (`pf`). Their netlink messages are `net::vf_info`'s and
//! their on-disk form `state::record_v1`'s.
//!
//! To add a setting: a `VfAttr` variant with its message (`net::vf_info`),
//! a field here (and in `attrs`, `set` and `nad_name`), its NAD field
//! (`nad`), and its v1 disk field (`state::record_v1`).

pub mod nad;
mod pf;

use serde::{Deserialize, Serialize};

pub use crate::net::vf_info::{LinkState, Rate, VfAttr, Vlan, VlanProto};
use crate::net::{Guid, Mac};
pub use pf::{apply, originals, pf_netdev, rebind, restore, restore_admin_mac};

/// VF attributes on the PF. As a request: only the fields the config sets.
/// As saved state: the original values of exactly those fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VfSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Mac>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<Vlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoofchk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_state: Option<LinkState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// InfiniBand VFs: the node and port GUID (set to the same value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_guid: Option<Guid>,
}

impl VfSettings {
    /// One attribute per field set, in the order they are applied (the
    /// admin MAC first: some drivers check a VF's later settings against it).
    pub fn attrs(&self) -> Vec<VfAttr> {
        [
            self.mac.map(VfAttr::Mac),
            self.vlan.map(VfAttr::Vlan),
            self.spoofchk.map(VfAttr::Spoofchk),
            self.trust.map(VfAttr::Trust),
            self.link_state.map(VfAttr::LinkState),
            self.rate.map(VfAttr::Rate),
            self.ib_guid.map(VfAttr::IbGuid),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Take `attr`'s value for its field.
    pub fn set(&mut self, attr: VfAttr) {
        match attr {
            VfAttr::Mac(v) => self.mac = Some(v),
            VfAttr::Vlan(v) => self.vlan = Some(v),
            VfAttr::Spoofchk(v) => self.spoofchk = Some(v),
            VfAttr::Trust(v) => self.trust = Some(v),
            VfAttr::LinkState(v) => self.link_state = Some(v),
            VfAttr::Rate(v) => self.rate = Some(v),
            VfAttr::IbGuid(v) => self.ib_guid = Some(v),
        }
    }

    pub fn from_attrs(attrs: impl IntoIterator<Item = VfAttr>) -> Self {
        let mut out = VfSettings::default();
        for attr in attrs {
            out.set(attr);
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.attrs().is_empty()
    }

    /// The NAD field names this holds values for (sriov-cni's words).
    pub fn field_names(&self) -> Vec<String> {
        self.attrs()
            .iter()
            .map(|a| nad_name(a).to_string())
            .collect()
    }

    /// Take every field `other` sets (what a PF holds after `other` was set).
    pub fn overlay(&mut self, other: &VfSettings) {
        for attr in other.attrs() {
            self.set(attr);
        }
    }

    /// The settings as `ip link set … vf N` would name them.
    pub fn describe(&self) -> String {
        let words: Vec<String> = self.attrs().iter().map(VfAttr::describe).collect();
        words.join(" ")
    }

    /// The current values (from `state`) of the fields this request sets:
    /// what DEL and ADD rollback put back, and only that.
    pub fn originals(&self, state: &VfSettings) -> VfSettings {
        let asked = self.attrs();
        VfSettings::from_attrs(
            state
                .attrs()
                .into_iter()
                .filter(|a| asked.iter().any(|b| b.same_kind(a))),
        )
    }
}

/// The NAD field that asks for `attr` (sriov-cni's words; `guid` for
/// InfiniBand).
fn nad_name(attr: &VfAttr) -> &'static str {
    match attr {
        VfAttr::Mac(_) => "mac",
        VfAttr::Vlan(_) => "vlan",
        VfAttr::Spoofchk(_) => "spoofchk",
        VfAttr::Trust(_) => "trust",
        VfAttr::LinkState(_) => "link_state",
        VfAttr::Rate(_) => "rate",
        VfAttr::IbGuid(_) => "guid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vlan100() -> Vlan {
        Vlan {
            id: 100,
            qos: 0,
            proto: VlanProto::Dot1Q,
        }
    }

    #[test]
    fn originals_keep_only_what_the_request_sets() {
        let request = VfSettings {
            vlan: Some(vlan100()),
            trust: Some(true),
            ..Default::default()
        };
        let state = VfSettings {
            mac: Some(Mac([0; 6])),
            vlan: Some(Vlan { id: 0, ..vlan100() }),
            trust: Some(false),
            spoofchk: Some(true),
            ..Default::default()
        };
        assert_eq!(
            request.originals(&state),
            VfSettings {
                vlan: state.vlan,
                trust: state.trust,
                ..Default::default()
            }
        );
    }

    #[test]
    fn every_field_round_trips_through_its_attribute() {
        let all = VfSettings {
            mac: Some(Mac([2, 0, 0, 0, 0, 1])),
            vlan: Some(vlan100()),
            spoofchk: Some(false),
            trust: Some(true),
            link_state: Some(LinkState::Enable),
            rate: Some(Rate {
                min_mbps: 1,
                max_mbps: 2,
            }),
            ib_guid: Some(Guid(7)),
        };
        let attrs = all.attrs();
        assert_eq!(attrs.len(), 7, "one attribute per field");
        assert_eq!(VfSettings::from_attrs(attrs), all);
        assert_eq!(
            all.field_names(),
            [
                "mac",
                "vlan",
                "spoofchk",
                "trust",
                "link_state",
                "rate",
                "guid"
            ]
        );
        assert_eq!(
            all.describe(),
            "mac 02:00:00:00:00:01 vlan 100 qos 0 proto 802.1q spoofchk off trust on \
             link_state enable min_tx_rate 1 max_tx_rate 2 guid 00:00:00:00:00:00:00:07"
        );
        let mut overlaid = VfSettings {
            trust: Some(false),
            ..Default::default()
        };
        overlaid.overlay(&all);
        assert_eq!(overlaid, all);
        assert!(VfSettings::default().is_empty() && !all.is_empty());
    }
}
