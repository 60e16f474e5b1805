//! When has the kernel answered a netlink request? One rule for both
//! exchanges (rtnetlink's in `net`, the raw PF/RDMA requests of `hw`, both through `wire`):
//! an ACK or the kernel's error ends it, so does DONE; without an ACK or a
//! dump asked for, a single non-multipart reply does too. Anything else,
//! including a socket that closes first, leaves the outcome unknown.

use netlink_packet_core::{
    NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CAPPED, NLM_F_DUMP,
    NLM_F_DUMP_INTR, NLM_F_MULTIPART,
};
use nix::errno::Errno;

use crate::error::Error;

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The kernel refused it, with the reason it (or the driver) gave in
    /// its extended ack (`NETLINK_EXT_ACK`), when it gave one.
    Kernel { errno: Errno, said: Option<String> },
    /// The socket closed (or the request could not be queued, or replies
    /// were lost) before the kernel answered: nothing is known.
    NoAnswer,
    /// The socket itself failed (send or receive), with its errno: the
    /// request may or may not have reached the kernel.
    Socket(Errno),
    /// The kernel's reply would not decode.
    Undecodable,
    /// A dump that a concurrent change interrupted (`NLM_F_DUMP_INTR`): its
    /// replies may miss or repeat entries; the dump is asked for again.
    Interrupted,
}

/// The replies to one request, collected until the kernel's answer.
pub struct Answer<T> {
    replies: Vec<T>,
    /// An ACK or DONE ends the request (ACK or dump asked for).
    until_end: bool,
    /// A reply of the dump carried `NLM_F_DUMP_INTR`.
    interrupted: bool,
}

impl<T> Answer<T> {
    /// For a request sent with `flags`.
    pub fn new(flags: u16) -> Self {
        Answer {
            replies: Vec::new(),
            until_end: flags & NLM_F_ACK != 0 || flags & NLM_F_DUMP == NLM_F_DUMP,
            interrupted: false,
        }
    }

    /// Take one reply to the request; the outcome once it is answered.
    pub fn feed(&mut self, msg: NetlinkMessage<T>) -> Option<Result<Vec<T>, Failure>> {
        let multipart = msg.header.flags & NLM_F_MULTIPART != 0;
        self.interrupted |= msg.header.flags & NLM_F_DUMP_INTR != 0;
        match msg.payload {
            NetlinkPayload::Error(e) if e.code.is_none() => Some(Ok(self.take())),
            NetlinkPayload::Error(e) => Some(Err(Failure::Kernel {
                errno: Errno::from_raw(e.raw_code().abs()),
                said: ext_ack_message(msg.header.flags, &e.header),
            })),
            NetlinkPayload::Done(_) if self.interrupted => Some(Err(Failure::Interrupted)),
            NetlinkPayload::Done(_) => Some(Ok(self.take())),
            NetlinkPayload::InnerMessage(m) => {
                self.replies.push(m);
                (!multipart && !self.until_end).then(|| Ok(self.take()))
            }
            NetlinkPayload::Overrun(_) => Some(Err(Failure::NoAnswer)),
            _ => None,
        }
    }

    fn take(&mut self) -> Vec<T> {
        std::mem::take(&mut self.replies)
    }
}

/// `NLMSGERR_ATTR_MSG`: the extended ack's human-readable reason.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// A netlink message header's size.
const HEADER_LEN: usize = 16;

/// The reason an error reply's extended ack gives (the kernel's or the
/// driver's own words), from the reply's payload after its error code:
/// the request echoed back (only its header when `NLM_F_CAPPED`), then
/// attributes when `NLM_F_ACK_TLVS`.
fn ext_ack_message(flags: u16, payload: &[u8]) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let echoed = match flags & NLM_F_CAPPED {
        0 => u32::from_ne_bytes(payload.get(..4)?.try_into().ok()?) as usize,
        _ => HEADER_LEN,
    };
    let mut at = echoed;
    while let Some(head) = payload.get(at..at + 4) {
        let len = usize::from(u16::from_ne_bytes([head[0], head[1]]));
        let kind = u16::from_ne_bytes([head[2], head[3]]) & 0x3fff;
        let value = payload.get(at + 4..at + len.max(4))?;
        if kind == NLMSGERR_ATTR_MSG {
            let text = value.split(|b| *b == 0).next().unwrap_or_default();
            let text = String::from_utf8_lossy(text).trim().to_string();
            return (!text.is_empty()).then_some(text);
        }
        at += len.max(4).next_multiple_of(4);
    }
    None
}

/// A failed request as the typed error that names it (`what`) and keeps
/// what the kernel said: its errno, and its reason in words when it gave one.
pub(crate) fn nl_err(what: impl std::fmt::Display, f: Failure) -> Error {
    match f {
        Failure::Kernel { errno, said } => Error::Kernel {
            what: what.to_string(),
            errno,
            said,
        },
        Failure::NoAnswer => Error::Netlink(format!(
            "{what}: the netlink socket closed before the kernel answered; the outcome is unknown"
        )),
        Failure::Socket(errno) => Error::Kernel {
            what: format!("{what}: the netlink socket failed"),
            errno,
            said: None,
        },
        Failure::Undecodable => Error::Netlink(format!(
            "{what}: the kernel's reply would not decode; the outcome is unknown"
        )),
        Failure::Interrupted => Error::try_again_later(format!(
            "{what}: every dump was interrupted by concurrent changes; retry"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{DoneMessage, ErrorMessage, NetlinkHeader};
    use netlink_packet_route::RouteNetlinkMessage;

    fn msg(
        payload: NetlinkPayload<RouteNetlinkMessage>,
        flags: u16,
    ) -> NetlinkMessage<RouteNetlinkMessage> {
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        NetlinkMessage::new(header, payload)
    }

    fn link() -> NetlinkPayload<RouteNetlinkMessage> {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(Default::default()))
    }

    /// An error reply as the kernel lays it out with `NETLINK_EXT_ACK`: the
    /// request's header echoed (capped), then `NLMSGERR_ATTR_MSG`.
    #[test]
    fn an_extended_ack_gives_the_reason_in_words() {
        let mut payload = vec![0u8; HEADER_LEN];
        let text = b"VF vlan protocol not supported\0";
        let len = (4 + text.len()) as u16;
        payload.extend_from_slice(&len.to_ne_bytes());
        payload.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        payload.extend_from_slice(text);
        let flags = NLM_F_ACK_TLVS | NLM_F_CAPPED;
        assert_eq!(
            ext_ack_message(flags, &payload).as_deref(),
            Some("VF vlan protocol not supported")
        );
        assert_eq!(
            ext_ack_message(NLM_F_CAPPED, &payload),
            None,
            "no TLVs flagged"
        );
        assert_eq!(
            ext_ack_message(flags, &payload[..HEADER_LEN + 2]),
            None,
            "cut short"
        );
        let e = nl_err(
            "set VF 3 on PF eth1",
            Failure::Kernel {
                errno: Errno::EPROTONOSUPPORT,
                said: Some("VF vlan protocol not supported".into()),
            },
        );
        assert_eq!(e.errno(), Some(Errno::EPROTONOSUPPORT));
        assert!(
            e.details()
                .ends_with("(EPROTONOSUPPORT): the kernel said: VF vlan protocol not supported"),
            "{}",
            e.details()
        );
    }

    #[test]
    fn a_dump_ends_at_done_with_every_reply() {
        let mut a = Answer::new(NLM_F_DUMP);
        assert!(a.feed(msg(link(), NLM_F_MULTIPART)).is_none());
        assert!(a.feed(msg(link(), NLM_F_MULTIPART)).is_none());
        let done = a.feed(msg(
            NetlinkPayload::Done(DoneMessage::default()),
            NLM_F_MULTIPART,
        ));
        assert_eq!(done.map(|r| r.map(|v| v.len())), Some(Ok(2)));
    }

    #[test]
    fn a_request_with_ack_waits_for_it_and_errors_carry_the_errno() {
        let mut a = Answer::new(NLM_F_ACK);
        assert!(a.feed(msg(link(), 0)).is_none(), "a reply is not the ACK");
        let mut err = ErrorMessage::default();
        err.code = std::num::NonZeroI32::new(-17);
        let refused = a.feed(msg(NetlinkPayload::Error(err), 0));
        assert_eq!(
            refused,
            Some(Err(Failure::Kernel {
                errno: Errno::EEXIST,
                said: None
            }))
        );
        let mut a = Answer::<RouteNetlinkMessage>::new(NLM_F_ACK);
        let acked = a.feed(msg(NetlinkPayload::Error(ErrorMessage::default()), 0));
        assert_eq!(acked.map(|r| r.map(|v| v.len())), Some(Ok(0)));
    }

    #[test]
    fn a_plain_get_ends_at_its_single_reply() {
        let mut a = Answer::new(0);
        assert_eq!(
            a.feed(msg(link(), 0)).map(|r| r.map(|v| v.len())),
            Some(Ok(1))
        );
    }
}
