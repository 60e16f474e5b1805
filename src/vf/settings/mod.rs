//! VF settings: the attributes a NAD asks for on the PF (MAC, VLAN, spoof
//! check, trust, link state, rates, InfiniBand GUID), all in one shape from
//! the NAD to the wire to the disk: a keyed set of `VfAttr`s, one per kind,
//! in the order they are applied. Read from the NAD by `nad`, set on the PF
//! on ADD and restored on detach by `pf`; their netlink messages are
//! `net::vf_info`'s and their on-disk tags `state::record_v1`'s.
//!
//! To add a setting: a `VfAttr` variant with its request, report, rank and
//! name (`net::vf_info`), its NAD parser (`nad::FIELDS`), and its record tag
//! (`state::record_v1::VfAttrV1`). Nothing here changes.

pub mod nad;
mod pf;

use crate::attr_set::AttrSet;
pub use crate::net::vf_info::{LinkState, Rate, VfAttr, Vlan, VlanProto};
use crate::net::{Guid, Mac};
pub use pf::{apply, originals, pf_netdev, rebind, restore, restore_admin_mac};

/// VF attributes on the PF, at most one of each kind, in apply order. As a
/// request: only those the config sets. As saved state: the original values
/// of exactly those (see `attr_set`).
pub type VfSettings = AttrSet<VfAttr>;

impl AttrSet<VfAttr> {
    /// The admin MAC, when held (it is restored on its own, first).
    pub fn mac(&self) -> Option<Mac> {
        self.attrs().iter().find_map(|a| match a {
            VfAttr::Mac(m) => Some(*m),
            _ => None,
        })
    }

    /// The InfiniBand GUID, when held (it takes a driver rebind).
    pub fn ib_guid(&self) -> Option<Guid> {
        self.attrs().iter().find_map(|a| match a {
            VfAttr::IbGuid(g) => Some(*g),
            _ => None,
        })
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
        let request = VfSettings::from_attrs([VfAttr::Trust(true), VfAttr::Vlan(vlan100())]);
        let state = VfSettings::from_attrs([
            VfAttr::Mac(Mac([0; 6])),
            VfAttr::Vlan(Vlan { id: 0, ..vlan100() }),
            VfAttr::Trust(false),
            VfAttr::Spoofchk(true),
        ]);
        assert_eq!(
            request.originals(&state).attrs(),
            [
                VfAttr::Vlan(Vlan { id: 0, ..vlan100() }),
                VfAttr::Trust(false)
            ]
        );
    }

    #[test]
    fn every_field_round_trips_through_its_attribute() {
        // Given in any order, held in apply order, one per kind.
        let all = VfSettings::from_attrs([
            VfAttr::IbGuid(Guid(7)),
            VfAttr::Rate(Rate {
                min_mbps: 1,
                max_mbps: 2,
            }),
            VfAttr::Trust(false),
            VfAttr::LinkState(LinkState::Enable),
            VfAttr::Trust(true),
            VfAttr::Spoofchk(false),
            VfAttr::Vlan(vlan100()),
            VfAttr::Mac(Mac([2, 0, 0, 0, 0, 1])),
        ]);
        let attrs = all.attrs();
        assert_eq!(attrs.len(), 7, "one attribute per kind");
        assert_eq!(
            attrs[0],
            VfAttr::Mac(Mac([2, 0, 0, 0, 0, 1])),
            "the admin MAC first"
        );
        assert_eq!(
            attrs[3],
            VfAttr::Trust(true),
            "the later value of a kind wins"
        );
        assert_eq!(VfSettings::from_attrs(attrs.iter().rev().copied()), all);
        assert_eq!(all.mac(), Some(Mac([2, 0, 0, 0, 0, 1])));
        assert_eq!(all.ib_guid(), Some(Guid(7)));
        assert_eq!(
            all.field_names(),
            [
                "mac",
                "vlan",
                "spoofchk",
                "trust",
                "link_state",
                "min_tx_rate/max_tx_rate",
                "guid"
            ]
        );
        assert_eq!(
            all.describe(),
            "mac 02:00:00:00:00:01 vlan 100 qos 0 proto 802.1q spoofchk off trust on \
             link_state enable min_tx_rate 1 max_tx_rate 2 guid 00:00:00:00:00:00:00:07"
        );
        let mut overlaid = VfSettings::from_attrs([VfAttr::Trust(false)]);
        overlaid.overlay(&all);
        assert_eq!(overlaid, all);
        assert!(VfSettings::default().is_empty() && !all.is_empty());
    }
}
