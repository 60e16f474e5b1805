//! VF settings as rtnetlink messages to the PF (pure: build and parse).
//! Each setting is its own request, shaped as iproute2's
//! `ip link set <pf> vf N …` sends it (tests/fixtures/netlink/vf-*.hex).

use netlink_packet_route::link::{
    LinkAttribute, LinkExtentMask, LinkMessage, LinkVfInfo, VfInfo, VfInfoGuid, VfInfoLinkState,
    VfInfoMac, VfInfoRate, VfInfoSpoofCheck, VfInfoTrust, VfInfoVlan, VfLinkState, VfVlan,
    VfVlanInfo, VlanProtocol,
};

use super::{Guid, LinkState, Rate, VfSettings, Vlan, VlanProto};
use crate::net::Mac;

fn vf_message(pf_index: u32, info: Vec<VfInfo>) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = pf_index;
    m.attributes
        .push(LinkAttribute::VfInfoList(vec![LinkVfInfo(info)]));
    m
}

/// One RTM_NEWLINK per attribute the settings name.
pub fn set_messages(pf_index: u32, vf: u32, s: &VfSettings) -> Vec<LinkMessage> {
    let mut out = Vec::new();
    if let Some(mac) = s.mac {
        out.push(vec![VfInfo::Mac(VfInfoMac::new(vf, &mac.0))]);
    }
    if let Some(v) = s.vlan {
        // iproute2: the legacy IFLA_VF_VLAN for 802.1Q, IFLA_VF_VLAN_LIST otherwise.
        out.push(match v.proto {
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
        });
    }
    if let Some(on) = s.spoofchk {
        out.push(vec![VfInfo::SpoofCheck(VfInfoSpoofCheck::new(vf, on))]);
    }
    if let Some(on) = s.trust {
        out.push(vec![VfInfo::Trust(VfInfoTrust::new(vf, on))]);
    }
    if let Some(state) = s.link_state {
        let state = match state {
            LinkState::Auto => VfLinkState::Auto,
            LinkState::Enable => VfLinkState::Enable,
            LinkState::Disable => VfLinkState::Disable,
        };
        out.push(vec![VfInfo::LinkState(VfInfoLinkState::new(vf, state))]);
    }
    if let Some(r) = s.rate {
        out.push(vec![VfInfo::Rate(VfInfoRate::new(
            vf, r.min_mbps, r.max_mbps,
        ))]);
    }
    if let Some(g) = s.ib_guid {
        // iproute2 sends node_guid and port_guid in one message.
        out.push(vec![
            VfInfo::IbNodeGuid(VfInfoGuid::new(vf, g.0)),
            VfInfo::IbPortGuid(VfInfoGuid::new(vf, g.0)),
        ]);
    }
    out.into_iter()
        .map(|info| vf_message(pf_index, info))
        .collect()
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

/// The bytes of a request (`NLM_F_REQUEST|NLM_F_ACK` for changes).
/// VF `vf`'s attributes from the PF's RTM_NEWLINK reply.
pub fn vf_settings(link: &LinkMessage, vf: u32) -> Option<VfSettings> {
    let list = link.attributes.iter().find_map(|a| match a {
        LinkAttribute::VfInfoList(l) => Some(l),
        _ => None,
    })?;
    list.iter().find_map(|LinkVfInfo(infos)| {
        let is_ours = infos
            .iter()
            .any(|i| matches!(i, VfInfo::Mac(m) if m.vf_id == vf));
        is_ours.then(|| settings_of(infos))
    })
}

fn settings_of(infos: &[VfInfo]) -> VfSettings {
    let mut s = VfSettings::default();
    let mut proto = VlanProto::Dot1Q;
    for info in infos {
        match info {
            VfInfo::Mac(m) => {
                s.mac = m.mac.get(..6).and_then(Mac::from_slice);
            }
            VfInfo::Vlan(v) => {
                s.vlan = Some(Vlan {
                    id: v.vlan_id as u16,
                    qos: v.qos as u8,
                    proto: VlanProto::Dot1Q,
                });
            }
            VfInfo::VlanList(list) => {
                let ad = list.iter().any(
                    |v| matches!(v, VfVlan::Info(i) if i.protocol == VlanProtocol::Ieee8021Ad),
                );
                if ad {
                    proto = VlanProto::Dot1Ad;
                }
            }
            VfInfo::SpoofCheck(c) => s.spoofchk = Some(c.enabled),
            VfInfo::Trust(t) => s.trust = Some(t.enabled),
            VfInfo::LinkState(l) => {
                s.link_state = match l.state {
                    VfLinkState::Auto => Some(LinkState::Auto),
                    VfLinkState::Enable => Some(LinkState::Enable),
                    VfLinkState::Disable => Some(LinkState::Disable),
                    _ => None,
                }
            }
            VfInfo::Rate(r) => {
                s.rate = Some(Rate {
                    min_mbps: r.min_tx_rate,
                    max_mbps: r.max_tx_rate,
                })
            }
            VfInfo::IbNodeGuid(g) => s.ib_guid = Some(Guid(g.guid)),
            _ => {}
        }
    }
    if let Some(v) = &mut s.vlan {
        v.proto = proto;
    }
    s
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

    fn ours(s: VfSettings) -> Vec<u8> {
        let msgs = set_messages(3, 3, &s);
        assert_eq!(msgs.len(), 1);
        crate::net::wire::encode(RouteNetlinkMessage::NewLink(msgs[0].clone()), NLM_F_ACK, 1)
    }

    fn vlan(id: u16, qos: u8, proto: VlanProto) -> VfSettings {
        VfSettings {
            vlan: Some(Vlan { id, qos, proto }),
            ..Default::default()
        }
    }

    #[test]
    fn every_vf_setting_matches_iproute2_byte_for_byte() {
        let cases: Vec<(&str, VfSettings)> = vec![
            (
                "vf-mac",
                VfSettings {
                    mac: Some(Mac([2, 0, 0, 0, 0, 1])),
                    ..Default::default()
                },
            ),
            ("vf-vlan", vlan(100, 0, VlanProto::Dot1Q)),
            (
                "vf-ib-guid",
                VfSettings {
                    ib_guid: Some(Guid(0x0011_2233_4455_6677)),
                    ..Default::default()
                },
            ),
            ("vf-vlan-qos", vlan(100, 5, VlanProto::Dot1Q)),
            ("vf-vlan-qos-8021ad", vlan(100, 5, VlanProto::Dot1Ad)),
            (
                "vf-spoofchk-on",
                VfSettings {
                    spoofchk: Some(true),
                    ..Default::default()
                },
            ),
            (
                "vf-spoofchk-off",
                VfSettings {
                    spoofchk: Some(false),
                    ..Default::default()
                },
            ),
            (
                "vf-trust-on",
                VfSettings {
                    trust: Some(true),
                    ..Default::default()
                },
            ),
            (
                "vf-state-enable",
                VfSettings {
                    link_state: Some(LinkState::Enable),
                    ..Default::default()
                },
            ),
            (
                "vf-state-disable",
                VfSettings {
                    link_state: Some(LinkState::Disable),
                    ..Default::default()
                },
            ),
            (
                "vf-state-auto",
                VfSettings {
                    link_state: Some(LinkState::Auto),
                    ..Default::default()
                },
            ),
            (
                "vf-rate",
                VfSettings {
                    rate: Some(Rate {
                        min_mbps: 100,
                        max_mbps: 1000,
                    }),
                    ..Default::default()
                },
            ),
        ];
        for (name, settings) in cases {
            let f = fixture(name);
            assert!(f.command.contains("vf 3"), "{name}: {}", f.command);
            assert_same_message(&ours(settings), &f);
        }
    }

    #[test]
    fn several_settings_become_one_request_each() {
        let s = VfSettings {
            mac: Some(Mac([2, 0, 0, 0, 0, 1])),
            trust: Some(true),
            rate: Some(Rate {
                min_mbps: 0,
                max_mbps: 10,
            }),
            ..Default::default()
        };
        assert_eq!(set_messages(3, 0, &s).len(), 3);
        assert!(set_messages(3, 0, &VfSettings::default()).is_empty());
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
        let s = vf_settings(&link, 201).unwrap();
        assert_eq!(s.mac, Some(Mac([2, 0, 0, 0, 0, 201])));
        assert_eq!(
            s.vlan,
            Some(Vlan {
                id: 201,
                qos: 1,
                proto: VlanProto::Dot1Ad
            })
        );
        assert_eq!((s.spoofchk, s.trust), (Some(true), Some(false)));
        assert_eq!(
            s.rate,
            Some(Rate {
                min_mbps: 201,
                max_mbps: 2010
            })
        );
        assert_eq!(s.link_state, Some(LinkState::Enable));
        let last = vf_settings(&link, 255).unwrap();
        assert_eq!(last.mac, Some(Mac([2, 0, 0, 0, 0, 255])));
        assert!(vf_settings(&link, 256).is_none());
    }
}
