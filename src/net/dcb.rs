//! DCB netlink (`RTM_GETDCB`, `DCB_CMD_IEEE_GET`): the PF's half of a RoCE
//! rail's QoS, the same data `dcb app show` / `dcb pfc show` and
//! `mlnx_qos` print: which priority each DSCP maps to (the PF trusts DSCP
//! where it maps one) and which priorities PFC keeps lossless. The request
//! is iproute2's, byte for byte (tests/fixtures/netlink/dcb-ieee-get.hex).

use std::os::fd::AsFd;

use netlink_packet_core::{
    DecodeError, NetlinkDeserializable, NetlinkHeader, NetlinkPayload, NetlinkSerializable,
    NlasIterator, NLM_F_ACK,
};

use super::wire::{open, transact};
use crate::error::{Error, Result};

const RTM_GETDCB: u16 = 78;
const DCB_CMD_IEEE_GET: u8 = 21;
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_IEEE_PFC: u16 = 2;
const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;
const DCB_ATTR_IEEE_APP: u16 = 1;
/// `IEEE_8021QAZ_APP_SEL_DSCP`: an APP entry whose protocol is a DSCP.
const APP_SEL_DSCP: u8 = 5;
/// `struct dcbmsg`: family, command, two bytes of padding.
const DCBMSG_LEN: usize = 4;

/// What the PF's DCB says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dcb {
    /// `pfc_en`: bit P set keeps priority P lossless.
    pub pfc_enabled: u8,
    /// (DSCP, priority) of each DSCP APP entry.
    pub dscp_prio: Vec<(u8, u8)>,
}

impl Dcb {
    /// The priority `dscp` maps to, if the PF maps it (trusts it).
    pub fn priority_of(&self, dscp: u8) -> Option<u8> {
        self.dscp_prio
            .iter()
            .find(|(d, _)| *d == dscp)
            .map(|(_, p)| *p)
    }

    pub fn pfc_on(&self, priority: u8) -> bool {
        priority < 8 && self.pfc_enabled & (1 << priority) != 0
    }
}

/// One RTM_GETDCB message: the command and its attributes, raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcbMessage {
    pub cmd: u8,
    /// The attributes after `struct dcbmsg`, as the wire holds them.
    pub attributes: Vec<u8>,
}

impl NetlinkSerializable for DcbMessage {
    fn message_type(&self) -> u16 {
        RTM_GETDCB
    }

    fn buffer_len(&self) -> usize {
        DCBMSG_LEN + self.attributes.len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        // dcb_family AF_UNSPEC, cmd, padding.
        buffer[..DCBMSG_LEN].copy_from_slice(&[0, self.cmd, 0, 0]);
        buffer[DCBMSG_LEN..].copy_from_slice(&self.attributes);
    }
}

impl NetlinkDeserializable for DcbMessage {
    type Error = DecodeError;

    fn deserialize(
        header: &NetlinkHeader,
        payload: &[u8],
    ) -> std::result::Result<Self, DecodeError> {
        if header.message_type != RTM_GETDCB || payload.len() < DCBMSG_LEN {
            return Err(DecodeError::from(format!(
                "not a DCB reply: type {}, {} bytes",
                header.message_type,
                payload.len()
            )));
        }
        Ok(DcbMessage {
            cmd: payload[1],
            attributes: payload[DCBMSG_LEN..].to_vec(),
        })
    }
}

impl From<DcbMessage> for NetlinkPayload<DcbMessage> {
    fn from(m: DcbMessage) -> Self {
        NetlinkPayload::InnerMessage(m)
    }
}

/// `dcb app show dev <ifname>`'s request.
pub fn ieee_get(ifname: &str, seq: u32) -> Vec<u8> {
    // DCB_ATTR_IFNAME: a NUL-terminated string, padded to 4 bytes.
    let value_len = ifname.len() + 1;
    let nla_len = 4 + value_len;
    let mut attr = Vec::with_capacity((nla_len + 3) & !3);
    attr.extend_from_slice(&(nla_len as u16).to_ne_bytes());
    attr.extend_from_slice(&DCB_ATTR_IFNAME.to_ne_bytes());
    attr.extend_from_slice(ifname.as_bytes());
    attr.push(0);
    attr.resize((nla_len + 3) & !3, 0);
    crate::net::wire::encode(
        DcbMessage {
            cmd: DCB_CMD_IEEE_GET,
            attributes: attr,
        },
        NLM_F_ACK,
        seq,
    )
}

/// The PFC and DSCP APP entries of an IEEE_GET reply's attributes.
pub fn parse_ieee(attributes: &[u8]) -> std::result::Result<Dcb, DecodeError> {
    let mut dcb = Dcb::default();
    for nla in NlasIterator::new(attributes) {
        let nla = nla?;
        if nla.kind() != DCB_ATTR_IEEE {
            continue;
        }
        for inner in NlasIterator::new(nla.value()) {
            let inner = inner?;
            match inner.kind() {
                // struct ieee_pfc: pfc_cap, pfc_en, ...
                DCB_ATTR_IEEE_PFC => {
                    dcb.pfc_enabled = *inner
                        .value()
                        .get(1)
                        .ok_or_else(|| DecodeError::from("short ieee_pfc"))?;
                }
                DCB_ATTR_IEEE_APP_TABLE => {
                    for app in NlasIterator::new(inner.value()) {
                        let app = app?;
                        // struct dcb_app: selector, priority, protocol (u16).
                        let v = app.value();
                        if app.kind() != DCB_ATTR_IEEE_APP || v.len() < 4 {
                            continue;
                        }
                        let protocol = u16::from_ne_bytes([v[2], v[3]]);
                        if v[0] == APP_SEL_DSCP {
                            if let Ok(dscp) = u8::try_from(protocol) {
                                dcb.dscp_prio.push((dscp, v[1]));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(dcb)
}

/// The PF's DCB; a driver without DCB answers EOPNOTSUPP.
pub fn read(ifname: &str) -> Result<Dcb> {
    let what = format!("read the DCB of {ifname}");
    let sock = open(netlink_sys::protocols::NETLINK_ROUTE, &what)?;
    let replies: Vec<DcbMessage> = transact(sock.as_fd(), &ieee_get(ifname, 1), 1, true, &what)?;
    let reply = replies
        .first()
        .ok_or_else(|| Error::Netlink(format!("{what}: no reply")))?;
    parse_ieee(&reply.attributes).map_err(|e| Error::Netlink(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::vf_info::tests::{assert_same_message, fixture};

    #[test]
    fn the_request_is_dcb_app_shows() {
        let f = fixture("dcb-ieee-get");
        assert!(f.command.ends_with("dcb app show dev pf0"), "{}", f.command);
        assert_same_message(&ieee_get("pf0", 1), &f);
    }

    /// A reply as the kernel's dcbnl_ieee_fill builds it: the ifname, then
    /// DCB_ATTR_IEEE with the PFC struct and the APP table.
    fn reply(pfc_en: u8, apps: &[(u8, u8, u16)]) -> Vec<u8> {
        let nla = |kind: u16, value: &[u8]| {
            let mut v = Vec::new();
            v.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
            v.extend_from_slice(&kind.to_ne_bytes());
            v.extend_from_slice(value);
            v.resize((v.len() + 3) & !3, 0);
            v
        };
        // struct ieee_pfc: 3 bytes, pad, u16 delay, pad to 8, 2 × 8 u64.
        let mut pfc = vec![8, pfc_en, 0, 0, 0, 0, 0, 0];
        pfc.resize(8 + 128, 0);
        let table: Vec<u8> = apps
            .iter()
            .flat_map(|(sel, prio, proto)| {
                let mut app = vec![*sel, *prio];
                app.extend_from_slice(&proto.to_ne_bytes());
                nla(DCB_ATTR_IEEE_APP, &app)
            })
            .collect();
        let ieee = [
            nla(1, &[0; 4]),
            nla(DCB_ATTR_IEEE_PFC, &pfc),
            nla(DCB_ATTR_IEEE_APP_TABLE, &table),
        ]
        .concat();
        [nla(DCB_ATTR_IFNAME, b"pf0\0"), nla(DCB_ATTR_IEEE, &ieee)].concat()
    }

    #[test]
    fn pfc_and_the_dscp_map_are_read_other_selectors_passed_over() {
        // PFC on priority 3; DSCP 24 → 3, DSCP 48 → 6, an ethertype entry.
        let dcb = parse_ieee(&reply(
            0b0000_1000,
            &[(5, 3, 24), (5, 6, 48), (1, 4, 0x8915)],
        ))
        .unwrap();
        assert_eq!(dcb.dscp_prio, [(24, 3), (48, 6)]);
        assert_eq!(dcb.priority_of(24), Some(3));
        assert_eq!(dcb.priority_of(26), None);
        assert!(dcb.pfc_on(3) && !dcb.pfc_on(6));
        let mut header = NetlinkHeader::default();
        header.message_type = RTM_GETDCB;
        let mut payload = vec![0, DCB_CMD_IEEE_GET, 0, 0];
        payload.extend(reply(0, &[]));
        let m = DcbMessage::deserialize(&header, &payload).unwrap();
        assert_eq!(parse_ieee(&m.attributes).unwrap(), Dcb::default());
    }
}
