//! RDMA netlink (`NETLINK_RDMA`, the nldev client): the few messages railcni
//! needs, on netlink-packet-core. No crate speaks this protocol.
//! Shapes follow iproute2's `rdma` (tests/fixtures/netlink/rdma-*.hex).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, NetlinkDeserializable, NetlinkHeader, NetlinkPayload,
    NetlinkSerializable, Nla, NlaBuffer, NlasIterator, Parseable, NLM_F_ACK, NLM_F_DUMP,
};

use super::wire::{open, transact};
use crate::error::{Error, Result as NlResult};

/// Whether RDMA devices follow network namespaces (`rdma system`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaNetnsMode {
    Shared,
    Exclusive,
}

pub const NETLINK_RDMA: isize = 20;
const RDMA_NL_NLDEV: u16 = 5;
pub const CMD_GET: u16 = 1;
pub const CMD_SET: u16 = 2;
pub const CMD_SYS_GET: u16 = 6;
const ATTR_DEV_INDEX: u16 = 1;
const ATTR_DEV_NAME: u16 = 2;
const SYS_ATTR_NETNS_MODE: u16 = 66;
const ATTR_NET_NS_FD: u16 = 68;

/// `RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op)`.
fn message_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaAttr {
    DevIndex(u32),
    DevName(String),
    /// 1: shared, 0: exclusive.
    NetnsMode(u8),
    NetNsFd(u32),
    Other(DefaultNla),
}

impl Nla for RdmaAttr {
    fn value_len(&self) -> usize {
        match self {
            RdmaAttr::DevIndex(_) | RdmaAttr::NetNsFd(_) => 4,
            RdmaAttr::DevName(s) => s.len() + 1,
            RdmaAttr::NetnsMode(_) => 1,
            RdmaAttr::Other(n) => n.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            RdmaAttr::DevIndex(_) => ATTR_DEV_INDEX,
            RdmaAttr::DevName(_) => ATTR_DEV_NAME,
            RdmaAttr::NetnsMode(_) => SYS_ATTR_NETNS_MODE,
            RdmaAttr::NetNsFd(_) => ATTR_NET_NS_FD,
            RdmaAttr::Other(n) => n.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            RdmaAttr::DevIndex(v) | RdmaAttr::NetNsFd(v) => {
                buffer[..4].copy_from_slice(&v.to_ne_bytes())
            }
            RdmaAttr::DevName(s) => {
                buffer[..s.len()].copy_from_slice(s.as_bytes());
                buffer[s.len()] = 0;
            }
            RdmaAttr::NetnsMode(m) => buffer[0] = *m,
            RdmaAttr::Other(n) => n.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for RdmaAttr {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let v = buf.value();
        let u32_of = |v: &[u8]| -> Result<u32, DecodeError> {
            let b: [u8; 4] = v
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(|| DecodeError::from("short u32 attribute"))?;
            Ok(u32::from_ne_bytes(b))
        };
        Ok(match buf.kind() {
            ATTR_DEV_INDEX => RdmaAttr::DevIndex(u32_of(v)?),
            ATTR_NET_NS_FD => RdmaAttr::NetNsFd(u32_of(v)?),
            ATTR_DEV_NAME => RdmaAttr::DevName(
                String::from_utf8_lossy(v)
                    .trim_end_matches('\0')
                    .to_string(),
            ),
            SYS_ATTR_NETNS_MODE => RdmaAttr::NetnsMode(
                *v.first()
                    .ok_or_else(|| DecodeError::from("empty netns mode"))?,
            ),
            _ => RdmaAttr::Other(DefaultNla::parse(buf)?),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaMessage {
    pub op: u16,
    pub attributes: Vec<RdmaAttr>,
}

impl NetlinkSerializable for RdmaMessage {
    fn message_type(&self) -> u16 {
        message_type(self.op)
    }

    fn buffer_len(&self) -> usize {
        self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        self.attributes.as_slice().emit(buffer)
    }
}

impl NetlinkDeserializable for RdmaMessage {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, DecodeError> {
        let op = header
            .message_type
            .checked_sub(RDMA_NL_NLDEV << 10)
            .ok_or_else(|| {
                DecodeError::from(format!(
                    "not an nldev message: type {}",
                    header.message_type
                ))
            })?;
        let attributes = NlasIterator::new(payload)
            .map(|nla| nla.and_then(|n| RdmaAttr::parse(&n)))
            .collect::<Result<_, _>>()?;
        Ok(RdmaMessage { op, attributes })
    }
}

impl From<RdmaMessage> for NetlinkPayload<RdmaMessage> {
    fn from(m: RdmaMessage) -> Self {
        NetlinkPayload::InnerMessage(m)
    }
}

fn encode(op: u16, attributes: Vec<RdmaAttr>, flags: u16, seq: u32) -> Vec<u8> {
    crate::net::wire::encode(RdmaMessage { op, attributes }, flags, seq)
}

/// `rdma system`: ask for the netns mode.
pub fn sys_get(seq: u32) -> Vec<u8> {
    encode(CMD_SYS_GET, vec![], NLM_F_ACK, seq)
}

/// The device list, to turn a device name into its index.
pub fn dump_devices(seq: u32) -> Vec<u8> {
    encode(CMD_GET, vec![], NLM_F_ACK | NLM_F_DUMP, seq)
}

/// `rdma dev set <dev> netns <ns>`.
pub fn set_netns(dev_index: u32, netns_fd: u32, seq: u32) -> Vec<u8> {
    encode(
        CMD_SET,
        vec![RdmaAttr::DevIndex(dev_index), RdmaAttr::NetNsFd(netns_fd)],
        NLM_F_ACK,
        seq,
    )
}

pub fn netns_mode(m: &RdmaMessage) -> Option<RdmaNetnsMode> {
    m.attributes.iter().find_map(|a| match a {
        RdmaAttr::NetnsMode(0) => Some(RdmaNetnsMode::Exclusive),
        RdmaAttr::NetnsMode(_) => Some(RdmaNetnsMode::Shared),
        _ => None,
    })
}

/// (index, name) of a device in a GET reply.
pub fn device(m: &RdmaMessage) -> Option<(u32, String)> {
    let index = m.attributes.iter().find_map(|a| {
        if let RdmaAttr::DevIndex(i) = a {
            Some(*i)
        } else {
            None
        }
    })?;
    let name = m.attributes.iter().find_map(|a| {
        if let RdmaAttr::DevName(n) = a {
            Some(n.clone())
        } else {
            None
        }
    })?;
    Some((index, name))
}

/// The kernel's RDMA netns mode.
pub fn read_netns_mode() -> NlResult<RdmaNetnsMode> {
    let what = "query the RDMA netns mode (is ib_core loaded?)";
    let sock = open(NETLINK_RDMA, what)?;
    let replies: Vec<RdmaMessage> = transact(sock.as_fd(), &sys_get(1), 1, true, what)?;
    replies
        .iter()
        .find_map(netns_mode)
        .ok_or_else(|| Error::Netlink(format!("{what}: no netns mode in the reply")))
}

/// Move the RDMA device `name` into the namespace behind `netns`.
pub fn move_device(name: &str, netns: BorrowedFd<'_>) -> NlResult<()> {
    let what = format!("move RDMA device {name}");
    let sock = open(NETLINK_RDMA, &what)?;
    let devices: Vec<RdmaMessage> = transact(sock.as_fd(), &dump_devices(1), 1, true, &what)?;
    let index = devices
        .iter()
        .filter_map(device)
        .find(|(_, n)| n == name)
        .map(|(i, _)| i)
        .ok_or_else(|| {
            Error::DeviceNotFound(format!("{what}: the RDMA subsystem has no device {name}"))
        })?;
    let fd = u32::try_from(netns.as_raw_fd())
        .map_err(|_| Error::internal(format!("{what}: bad netns fd")))?;
    transact::<RdmaMessage>(sock.as_fd(), &set_netns(index, fd, 2), 2, true, &what)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::vf_info::tests::{assert_same_message, fixture};

    #[test]
    fn sys_get_matches_rdma_system() {
        let f = fixture("rdma-system");
        assert!(f.command.ends_with("rdma system"));
        assert_same_message(&sys_get(1), &f);
    }

    #[test]
    fn set_netns_matches_rdma_dev_set_netns() {
        let f = fixture("rdma-dev-set-netns");
        assert!(f.command.contains("rdma dev set mlx5_0 netns"));
        // The fd number is whatever `rdma` got when it opened the netns; take it from the capture.
        let fd = u32::from_ne_bytes(f.bytes[28..32].try_into().unwrap());
        assert_same_message(&set_netns(7, fd, 1), &f);
    }

    #[test]
    fn decodes_replies() {
        let mut header = NetlinkHeader::default();
        header.message_type = message_type(CMD_SYS_GET);
        let mut payload = vec![0u8; RdmaAttr::NetnsMode(0).buffer_len()];
        [RdmaAttr::NetnsMode(0)].as_slice().emit(&mut payload);
        let m = RdmaMessage::deserialize(&header, &payload).unwrap();
        assert_eq!(netns_mode(&m), Some(RdmaNetnsMode::Exclusive));

        header.message_type = message_type(CMD_GET);
        let attrs = [RdmaAttr::DevIndex(7), RdmaAttr::DevName("mlx5_0".into())];
        let mut payload = vec![0u8; attrs.as_slice().buffer_len()];
        attrs.as_slice().emit(&mut payload);
        let m = RdmaMessage::deserialize(&header, &payload).unwrap();
        assert_eq!(device(&m), Some((7, "mlx5_0".to_string())));
        header.message_type = 16;
        assert!(RdmaMessage::deserialize(&header, &payload).is_err());
    }
}
