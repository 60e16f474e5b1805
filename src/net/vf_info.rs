//! A VF's attributes on its PF (`IFLA_VFINFO_LIST`): their values, the
//! requests that set them, shaped as iproute2's `ip link set <pf> vf N …`
//! sends them (tests/fixtures/netlink/vf-*.hex), and the PF's report read
//! back. One attribute, one request: a driver that refuses one is named
//! for exactly that one.

use std::os::fd::AsFd;

use netlink_packet_core::NLM_F_ACK;
use netlink_packet_route::link::{
    LinkAttribute, LinkExtentMask, LinkMessage, LinkVfInfo, VfInfo, VfInfoGuid, VfInfoLinkState,
    VfInfoMac, VfInfoRate, VfInfoSpoofCheck, VfInfoTrust, VfInfoVlan, VfLinkState, VfVlan,
    VfVlanInfo, VlanProtocol,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::protocols::NETLINK_ROUTE;
use serde::{Deserialize, Serialize};

use super::wire::{encode, open, transact};
use super::{Guid, Mac};
use crate::attr_set::Attr as _;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VlanProto {
    #[serde(rename = "802.1q")]
    Dot1Q,
    #[serde(rename = "802.1ad")]
    Dot1Ad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Auto,
    Enable,
    Disable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vlan {
    pub id: u16,
    pub qos: u8,
    pub proto: VlanProto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    pub min_mbps: u32,
    pub max_mbps: u32,
}

/// One VF attribute the PF holds. In JSON a one-key object named as the
/// attribute (`{"linkState": "auto"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum VfAttr {
    /// The admin MAC (00:00:00:00:00:00: none).
    Mac(Mac),
    Vlan(Vlan),
    Spoofchk(bool),
    Trust(bool),
    LinkState(LinkState),
    Rate(Rate),
    /// InfiniBand VFs: the node and port GUID (set to the same value).
    IbGuid(Guid),
}

impl crate::attr_set::Attr for VfAttr {
    /// Same attribute, whatever the value.
    fn same_kind(&self, other: &VfAttr) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// Where it comes when several are set: the admin MAC first (some
    /// drivers check a VF's later settings against it), as declared.
    fn apply_rank(&self) -> u8 {
        match self {
            VfAttr::Mac(_) => 0,
            VfAttr::Vlan(_) => 1,
            VfAttr::Spoofchk(_) => 2,
            VfAttr::Trust(_) => 3,
            VfAttr::LinkState(_) => 4,
            VfAttr::Rate(_) => 5,
            VfAttr::IbGuid(_) => 6,
        }
    }

    /// Its name where users read it (`railcnictl status`; sriov-cni's words,
    /// `guid` for InfiniBand).
    fn name(&self) -> &'static str {
        match self {
            VfAttr::Mac(_) => "mac",
            VfAttr::Vlan(_) => "vlan",
            VfAttr::Spoofchk(_) => "spoofchk",
            VfAttr::Trust(_) => "trust",
            VfAttr::LinkState(_) => "link_state",
            // Both NAD keys: one attribute on the PF carries them.
            VfAttr::Rate(_) => "min_tx_rate/max_tx_rate",
            VfAttr::IbGuid(_) => "guid",
        }
    }

    /// As `ip link set … vf N` names it (`vlan 100 qos 3 proto 802.1ad`).
    fn describe(&self) -> String {
        let on_off = |b: bool| if b { "on" } else { "off" };
        match *self {
            VfAttr::Mac(mac) => format!("mac {mac}"),
            VfAttr::Vlan(v) => {
                let proto = match v.proto {
                    VlanProto::Dot1Q => "802.1q",
                    VlanProto::Dot1Ad => "802.1ad",
                };
                format!("vlan {} qos {} proto {proto}", v.id, v.qos)
            }
            VfAttr::Spoofchk(on) => format!("spoofchk {}", on_off(on)),
            VfAttr::Trust(on) => format!("trust {}", on_off(on)),
            VfAttr::LinkState(state) => format!(
                "link_state {}",
                match state {
                    LinkState::Auto => "auto",
                    LinkState::Enable => "enable",
                    LinkState::Disable => "disable",
                }
            ),
            VfAttr::Rate(r) => format!("min_tx_rate {} max_tx_rate {}", r.min_mbps, r.max_mbps),
            VfAttr::IbGuid(g) => format!("guid {g}"),
        }
    }
}

impl VfAttr {
    /// The VF-info entries of its request.
    fn infos(&self, vf: u32) -> Vec<VfInfo> {
        match *self {
            VfAttr::Mac(mac) => vec![VfInfo::Mac(VfInfoMac::new(vf, &mac.0))],
            // iproute2: the legacy IFLA_VF_VLAN for 802.1Q, IFLA_VF_VLAN_LIST otherwise.
            VfAttr::Vlan(v) => match v.proto {
                VlanProto::Dot1Q => vec![VfInfo::Vlan(VfInfoVlan::new(
                    vf,
                    u32::from(v.id),
                    u32::from(v.qos),
                ))],
                VlanProto::Dot1Ad => vec![VfInfo::VlanList(vec![VfVlan::Info(VfVlanInfo::new(
                    vf,
                    u32::from(v.id),
                    u32::from(v.qos),
                    VlanProtocol::Ieee8021Ad,
                ))])],
            },
            VfAttr::Spoofchk(on) => vec![VfInfo::SpoofCheck(VfInfoSpoofCheck::new(vf, on))],
            VfAttr::Trust(on) => vec![VfInfo::Trust(VfInfoTrust::new(vf, on))],
            VfAttr::LinkState(state) => {
                let state = match state {
                    LinkState::Auto => VfLinkState::Auto,
                    LinkState::Enable => VfLinkState::Enable,
                    LinkState::Disable => VfLinkState::Disable,
                };
                vec![VfInfo::LinkState(VfInfoLinkState::new(vf, state))]
            }
            VfAttr::Rate(r) => vec![VfInfo::Rate(VfInfoRate::new(vf, r.min_mbps, r.max_mbps))],
            // iproute2 sends node_guid and port_guid in one message.
            VfAttr::IbGuid(g) => vec![
                VfInfo::IbNodeGuid(VfInfoGuid::new(vf, g.0)),
                VfInfo::IbPortGuid(VfInfoGuid::new(vf, g.0)),
            ],
        }
    }
}

/// The RTM_NEWLINK that sets `attr` for VF `vf` of the PF at `pf_index`.
pub fn set_message(pf_index: u32, vf: u32, attr: &VfAttr) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = pf_index;
    m.attributes
        .push(LinkAttribute::VfInfoList(vec![LinkVfInfo(attr.infos(vf))]));
    m
}

/// `RTM_GETLINK` for the PF with its VF list and without stats.
pub fn get_request(pf_index: u32) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = pf_index;
    m.attributes.push(LinkAttribute::ExtMask(vec![
        LinkExtentMask::Vf,
        LinkExtentMask::SkipStats,
    ]));
    m
}

/// VF `vf`'s attributes from the PF's RTM_NEWLINK reply.
pub fn vf_attrs(link: &LinkMessage, vf: u32) -> Option<Vec<VfAttr>> {
    let list = link.attributes.iter().find_map(|a| match a {
        LinkAttribute::VfInfoList(l) => Some(l),
        _ => None,
    })?;
    list.iter().find_map(|LinkVfInfo(infos)| {
        let is_ours = infos
            .iter()
            .any(|i| matches!(i, VfInfo::Mac(m) if m.vf_id == vf));
        is_ours.then(|| attrs_of(infos))
    })
}

fn attrs_of(infos: &[VfInfo]) -> Vec<VfAttr> {
    // The VLAN's protocol comes in a list of its own, beside the legacy entry.
    let dot1ad = infos.iter().any(|i| match i {
        VfInfo::VlanList(list) => list
            .iter()
            .any(|v| matches!(v, VfVlan::Info(i) if i.protocol == VlanProtocol::Ieee8021Ad)),
        _ => false,
    });
    infos
        .iter()
        .filter_map(|info| match info {
            VfInfo::Mac(m) => m.mac.get(..6).and_then(Mac::from_slice).map(VfAttr::Mac),
            VfInfo::Vlan(v) => Some(VfAttr::Vlan(Vlan {
                id: v.vlan_id as u16,
                qos: v.qos as u8,
                proto: if dot1ad {
                    VlanProto::Dot1Ad
                } else {
                    VlanProto::Dot1Q
                },
            })),
            VfInfo::SpoofCheck(c) => Some(VfAttr::Spoofchk(c.enabled)),
            VfInfo::Trust(t) => Some(VfAttr::Trust(t.enabled)),
            VfInfo::LinkState(l) => match l.state {
                VfLinkState::Auto => Some(LinkState::Auto),
                VfLinkState::Enable => Some(LinkState::Enable),
                VfLinkState::Disable => Some(LinkState::Disable),
                _ => None,
            }
            .map(VfAttr::LinkState),
            VfInfo::Rate(r) => Some(VfAttr::Rate(Rate {
                min_mbps: r.min_tx_rate,
                max_mbps: r.max_tx_rate,
            })),
            VfInfo::IbNodeGuid(g) => Some(VfAttr::IbGuid(Guid(g.guid))),
            _ => None,
        })
        .collect()
}

fn pf_index(pf: &str) -> Result<u32> {
    nix::net::if_::if_nametoindex(pf)
        .map_err(|e| Error::DeviceNotFound(format!("PF netdev {pf} not found: {e}")))
}

/// Every attribute PF `pf` reports for VF `vf` (a whole reply: a big PF's
/// is above 64 KiB).
pub fn read(pf: &str, vf: u32) -> Result<Vec<VfAttr>> {
    let what = format!("read VF {vf} of PF {pf}");
    let sock = open(NETLINK_ROUTE, &what)?;
    let request = encode(
        RouteNetlinkMessage::GetLink(get_request(pf_index(pf)?)),
        0,
        1,
    );
    let replies: Vec<RouteNetlinkMessage> = transact(sock.as_fd(), &request, 1, false, &what)?;
    replies
        .iter()
        .find_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => vf_attrs(l, vf),
            _ => None,
        })
        .ok_or_else(|| Error::DeviceNotFound(format!("PF {pf} reports no VF {vf}")))
}

/// Set `attr` for VF `vf` on PF `pf`, and wait for the kernel's answer.
pub fn set(pf: &str, vf: u32, attr: &VfAttr) -> Result<()> {
    let what = format!("set VF {vf} {} on PF {pf}", attr.describe());
    let sock = open(NETLINK_ROUTE, &what)?;
    let message = set_message(pf_index(pf)?, vf, attr);
    let request = encode(RouteNetlinkMessage::NewLink(message), NLM_F_ACK, 1);
    transact::<RouteNetlinkMessage>(sock.as_fd(), &request, 1, true, &what)?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use netlink_packet_core::NLM_F_MULTIPART;
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK};
    use netlink_packet_route::link::{VfInfoGuid, VfInfoRssQueryEn, VfInfoTxRate};
    use netlink_packet_route::RouteNetlinkMessage;

    /// A fixture: the command, its header values, and the message bytes.
    pub struct Fixture {
        pub command: String,
        pub bytes: Vec<u8>,
    }

    pub fn fixture(name: &str) -> Fixture {
        let path = format!(
            "{}/tests/fixtures/netlink/{name}.hex",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let command = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("# command: ")
            .to_string();
        let bytes = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(|l| l.split_whitespace())
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect();
        Fixture { command, bytes }
    }

    /// Equal but for the sequence number and port id (bytes 8..16).
    pub fn assert_same_message(ours: &[u8], fixture: &Fixture) {
        let strip = |b: &[u8]| {
            let mut v = b.to_vec();
            v[8..16].fill(0);
            v
        };
        assert_eq!(
            strip(ours),
            strip(&fixture.bytes),
            "differs from `{}`",
            fixture.command
        );
    }

    fn ours(attr: VfAttr) -> Vec<u8> {
        crate::net::wire::encode(
            RouteNetlinkMessage::NewLink(set_message(3, 3, &attr)),
            NLM_F_ACK,
            1,
        )
    }

    fn vlan(id: u16, qos: u8, proto: VlanProto) -> VfAttr {
        VfAttr::Vlan(Vlan { id, qos, proto })
    }

    #[test]
    fn every_vf_attribute_matches_iproute2_byte_for_byte() {
        let cases: Vec<(&str, VfAttr)> = vec![
            ("vf-mac", VfAttr::Mac(Mac([2, 0, 0, 0, 0, 1]))),
            ("vf-vlan", vlan(100, 0, VlanProto::Dot1Q)),
            ("vf-ib-guid", VfAttr::IbGuid(Guid(0x0011_2233_4455_6677))),
            ("vf-vlan-qos", vlan(100, 5, VlanProto::Dot1Q)),
            ("vf-vlan-qos-8021ad", vlan(100, 5, VlanProto::Dot1Ad)),
            ("vf-spoofchk-on", VfAttr::Spoofchk(true)),
            ("vf-spoofchk-off", VfAttr::Spoofchk(false)),
            ("vf-trust-on", VfAttr::Trust(true)),
            ("vf-state-enable", VfAttr::LinkState(LinkState::Enable)),
            ("vf-state-disable", VfAttr::LinkState(LinkState::Disable)),
            ("vf-state-auto", VfAttr::LinkState(LinkState::Auto)),
            (
                "vf-rate",
                VfAttr::Rate(Rate {
                    min_mbps: 100,
                    max_mbps: 1000,
                }),
            ),
        ];
        for (name, attr) in cases {
            let f = fixture(name);
            assert!(f.command.contains("vf 3"), "{name}: {}", f.command);
            assert_same_message(&ours(attr), &f);
        }
    }

    #[test]
    fn an_attribute_is_json_named_as_itself() {
        let attr = VfAttr::LinkState(LinkState::Auto);
        let text = serde_json::to_string(&attr).unwrap();
        assert_eq!(text, r#"{"linkState":"auto"}"#);
        assert_eq!(serde_json::from_str::<VfAttr>(&text).unwrap(), attr);
        assert!(attr.same_kind(&VfAttr::LinkState(LinkState::Enable)));
        assert!(!attr.same_kind(&VfAttr::Trust(true)));
    }

    /// A PF with 256 VFs as the kernel reports it when asked without stats
    /// (each VF's attributes, broadcast address and IB GUIDs), with the
    /// per-VF port profiles some drivers add: over 64 KiB in one message,
    /// while every attribute stays within its 16-bit length.
    pub fn big_pf_reply() -> Vec<u8> {
        use netlink_packet_core::DefaultNla;
        use netlink_packet_route::link::{LinkVfPort, VfInfoBroadcast, VfPort};
        let vfs: Vec<LinkVfInfo> = (0..256u32)
            .map(|vf| {
                LinkVfInfo(vec![
                    VfInfo::Mac(VfInfoMac::new(vf, &[2, 0, 0, 0, (vf >> 8) as u8, vf as u8])),
                    VfInfo::Broadcast(VfInfoBroadcast::new(&[0xff; 6])),
                    VfInfo::Vlan(VfInfoVlan::new(vf, vf % 4095, vf % 8)),
                    VfInfo::VlanList(vec![VfVlan::Info(VfVlanInfo::new(
                        vf,
                        vf % 4095,
                        vf % 8,
                        if vf % 2 == 0 {
                            VlanProtocol::Ieee8021Q
                        } else {
                            VlanProtocol::Ieee8021Ad
                        },
                    ))]),
                    VfInfo::TxRate(VfInfoTxRate::new(vf, vf)),
                    VfInfo::Rate(VfInfoRate::new(vf, vf, vf * 10)),
                    VfInfo::SpoofCheck(VfInfoSpoofCheck::new(vf, vf % 3 == 0)),
                    VfInfo::LinkState(VfInfoLinkState::new(vf, VfLinkState::Enable)),
                    VfInfo::RssQueryEn(VfInfoRssQueryEn::new(vf, false)),
                    VfInfo::Trust(VfInfoTrust::new(vf, vf % 5 == 0)),
                    VfInfo::IbNodeGuid(VfInfoGuid::new(vf, u64::from(vf))),
                    VfInfo::IbPortGuid(VfInfoGuid::new(vf, u64::from(vf))),
                ])
            })
            .collect();
        let ports: Vec<LinkVfPort> = (0..256u32)
            .map(|vf| {
                LinkVfPort(vec![
                    VfPort::Other(DefaultNla::new(1, vf.to_ne_bytes().to_vec())), // IFLA_PORT_VF
                    VfPort::Other(DefaultNla::new(2, b"rail-profile-0001\0".to_vec())), // IFLA_PORT_PROFILE
                    VfPort::Other(DefaultNla::new(4, vec![vf as u8; 16])), // IFLA_PORT_INSTANCE_UUID
                    VfPort::Other(DefaultNla::new(5, vec![7; 16])),        // IFLA_PORT_HOST_UUID
                ])
            })
            .collect();
        let mut m = LinkMessage::default();
        m.header.index = 3;
        m.attributes.push(LinkAttribute::IfName("ens1f0".into()));
        m.attributes.push(LinkAttribute::Mtu(9000));
        m.attributes.push(LinkAttribute::NumVf(256));
        m.attributes.push(LinkAttribute::VfInfoList(vfs));
        m.attributes.push(LinkAttribute::VfPorts(ports));
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_MULTIPART;
        let mut nl = NetlinkMessage::new(
            header,
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(m)),
        );
        nl.finalize();
        let mut buf = vec![0; nl.buffer_len()];
        nl.serialize(&mut buf);
        buf
    }

    #[test]
    fn decodes_a_256_vf_pf_reply_above_64_kib() {
        let bytes = big_pf_reply();
        assert!(bytes.len() > 65536, "reply is {} bytes", bytes.len());
        let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
        let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) = msg.payload else {
            panic!("not a link message")
        };
        let attrs = vf_attrs(&link, 201).unwrap();
        assert_eq!(
            attrs,
            [
                VfAttr::Mac(Mac([2, 0, 0, 0, 0, 201])),
                VfAttr::Vlan(Vlan {
                    id: 201,
                    qos: 1,
                    proto: VlanProto::Dot1Ad
                }),
                VfAttr::Rate(Rate {
                    min_mbps: 201,
                    max_mbps: 2010
                }),
                VfAttr::Spoofchk(true),
                VfAttr::LinkState(LinkState::Enable),
                VfAttr::Trust(false),
                VfAttr::IbGuid(Guid(201)),
            ]
        );
        let last = vf_attrs(&link, 255).unwrap();
        assert_eq!(last[0], VfAttr::Mac(Mac([2, 0, 0, 0, 0, 255])));
        assert!(vf_attrs(&link, 256).is_none());
    }
}
