//! The netlink wire, for every protocol railcni speaks (rtnetlink, the PF's
//! VF attributes, RDMA, link events): sockets, one encoder for any message,
//! one walker over a datagram's messages, and one request/reply exchange
//! that reads each datagram whole (a PF with ~220+ VFs answers RTM_GETLINK with
//! more than 64 KiB) and ends when the kernel answered (`net::answer`, the
//! rule rtnetlink's exchange follows too).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use netlink_packet_core::{
    DecodeError, NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload,
    NetlinkSerializable, NLM_F_ACK, NLM_F_REQUEST,
};
use nix::errno::Errno;
use nix::sys::socket::{recv, send, MsgFlags};

use netlink_sys::{Socket, SocketAddr};

use crate::error::{Error, Result};

/// A netlink message header's size: no message is shorter.
const NETLINK_HEADER_LEN: usize = 16;

/// How long a request waits for the kernel's answer. The kernel answers
/// within milliseconds; a read with no deadline would hold the caller (and
/// any lock it holds) for ever if it never did.
pub const READ_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// A netlink socket of `protocol` in the calling thread's namespace, bound
/// and connected to the kernel, its reads bounded by `READ_DEADLINE`.
pub fn open(protocol: isize, what: &str) -> Result<Socket> {
    let io = |e: std::io::Error| Error::os(what, &e);
    let mut s = Socket::new(protocol).map_err(io)?;
    ask_for_reasons(&s);
    s.bind_auto().map_err(io)?;
    s.connect(&SocketAddr::new(0, 0)).map_err(io)?;
    with_deadline(s.as_fd(), what)?;
    Ok(s)
}

/// Ask the kernel to say why it refuses a request (`NETLINK_EXT_ACK`, Linux
/// 4.12+): a driver's own words ("VF vlan protocol not supported") reach
/// the error, the log and the CNI reply's details. A kernel without it
/// still answers with the errno alone.
pub fn ask_for_reasons(socket: &Socket) {
    if let Err(e) = socket.set_ext_ack(true) {
        crate::log_debug!("netlink extended acks not available: {e}");
    }
}

/// Bound every read on the request socket `fd` by `READ_DEADLINE`.
pub fn with_deadline(fd: BorrowedFd<'_>, what: &str) -> Result<()> {
    with_deadline_of(fd, READ_DEADLINE, what)
}

fn with_deadline_of(fd: BorrowedFd<'_>, deadline: std::time::Duration, what: &str) -> Result<()> {
    let tv = nix::sys::time::TimeVal::new(deadline.as_secs() as _, deadline.subsec_micros() as _);
    nix::sys::socket::setsockopt(&fd, nix::sys::socket::sockopt::ReceiveTimeout, &tv).map_err(
        |errno| Error::Kernel {
            what: format!("{what}: cannot give the socket a read deadline"),
            errno,
            said: None,
        },
    )
}
use super::answer::{nl_err, Answer, Failure};

/// A request: `NLM_F_REQUEST` plus `flags`, with sequence number `seq`.
pub fn encode<T>(msg: T, flags: u16, seq: u32) -> Vec<u8>
where
    T: NetlinkSerializable,
    NetlinkPayload<T>: From<T>,
{
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | flags;
    header.sequence_number = seq;
    let mut nl = NetlinkMessage::new(header, NetlinkPayload::from(msg));
    nl.finalize();
    let mut buf = vec![0; nl.buffer_len()];
    nl.serialize(&mut buf);
    buf
}

/// One datagram, whole: its size is peeked first (`MSG_PEEK | MSG_TRUNC`).
pub fn recv_datagram(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let raw = fd.as_raw_fd();
    let size = loop {
        match recv(raw, &mut [], MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC) {
            Err(Errno::EINTR) => {}
            other => break other?,
        }
    };
    let mut buf = vec![0; size];
    let got = loop {
        match recv(raw, &mut buf, MsgFlags::empty()) {
            Err(Errno::EINTR) => {}
            other => break other?,
        }
    };
    buf.truncate(got);
    Ok(buf)
}

/// Send `request` (sequence `seq`) and collect its replies until the ACK
/// (`ack`), DONE, or, when no ACK was asked for, a single non-multipart
/// answer. Replies to other sequence numbers are skipped.
pub fn transact<T>(
    fd: BorrowedFd<'_>,
    request: &[u8],
    seq: u32,
    ack: bool,
    what: &str,
) -> Result<Vec<T>>
where
    T: NetlinkDeserializable,
{
    exchange(fd, request, seq, if ack { NLM_F_ACK } else { 0 }, what)?.map_err(|f| nl_err(what, f))
}

/// How often a dump interrupted by a concurrent change is asked for again
/// (many VF operations at once interrupt dumps; bond-cni#158).
const DUMP_TRIES: usize = 5;

/// Send `request` (sent with `flags`, sequence `seq`) and collect its
/// replies until the kernel answered (`Answer`); replies to other sequence
/// numbers are skipped. A dump the kernel marks interrupted is sent again,
/// up to `DUMP_TRIES` times. The inner result is the kernel's answer
/// (`NoAnswer` when the socket closed first); the outer one a socket that
/// failed or a reply that does not decode.
pub fn exchange<T>(
    fd: BorrowedFd<'_>,
    request: &[u8],
    seq: u32,
    flags: u16,
    what: &str,
) -> Result<std::result::Result<Vec<T>, Failure>>
where
    T: NetlinkDeserializable,
{
    let mut tries = 1;
    loop {
        match exchange_once(fd, request, seq, flags, what)? {
            Err(Failure::Interrupted) if tries < DUMP_TRIES => {
                crate::log_debug!("{what}: the dump was interrupted by a change; asking again");
                tries += 1;
            }
            outcome => return Ok(outcome),
        }
    }
}

fn exchange_once<T>(
    fd: BorrowedFd<'_>,
    request: &[u8],
    seq: u32,
    flags: u16,
    what: &str,
) -> Result<std::result::Result<Vec<T>, Failure>>
where
    T: NetlinkDeserializable,
{
    let io = |e: io::Error| Error::os(format!("{what}: the netlink socket failed"), &e);
    send(fd.as_raw_fd(), request, MsgFlags::empty()).map_err(|e| io(e.into()))?;
    let mut answer = Answer::new(flags);
    loop {
        let buf = recv_datagram(fd).map_err(|e| match e.kind() {
            // SO_RCVTIMEO ran out (EAGAIN).
            io::ErrorKind::WouldBlock => Error::Kernel {
                what: format!(
                    "{what}: the kernel did not answer within the read deadline ({} s)",
                    READ_DEADLINE.as_secs()
                ),
                errno: Errno::ETIMEDOUT,
                said: None,
            },
            _ => io(e),
        })?;
        if buf.is_empty() {
            return Ok(Err(Failure::NoAnswer));
        }
        for msg in messages::<T>(&buf) {
            let msg = msg.map_err(|e| Error::Netlink(format!("{what}: undecodable reply: {e}")))?;
            if msg.header.sequence_number == seq {
                if let Some(outcome) = answer.feed(msg) {
                    return Ok(outcome);
                }
            }
        }
    }
}

/// The messages of one datagram, in order. A message that does not decode
/// is yielded as its error and ends the walk (what follows it cannot be
/// found without its length).
pub fn messages<T>(
    datagram: &[u8],
) -> impl Iterator<Item = std::result::Result<NetlinkMessage<T>, DecodeError>> + '_
where
    T: NetlinkDeserializable,
{
    let mut offset = 0;
    std::iter::from_fn(move || {
        if offset >= datagram.len() {
            return None;
        }
        let msg = NetlinkMessage::<T>::deserialize(&datagram[offset..]);
        match &msg {
            // A length below the header's would never move on.
            Ok(m) if m.header.length as usize >= NETLINK_HEADER_LEN => {
                offset += (m.header.length as usize + 3) & !3;
            }
            _ => offset = datagram.len(),
        }
        Some(msg)
    })
}

/// A message's bytes as hex, as the tests pin messages.
#[cfg(test)]
pub(crate) fn hex_of(m: &impl netlink_packet_core::Emitable) -> String {
    let mut b = vec![0; m.buffer_len()];
    m.emit(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use netlink_packet_core::{DoneMessage, NLM_F_MULTIPART};
    use netlink_packet_route::RouteNetlinkMessage;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsFd;

    /// One message's bytes, as the kernel would send it.
    pub fn message(payload: NetlinkPayload<RouteNetlinkMessage>, seq: u32, flags: u16) -> Vec<u8> {
        let mut header = NetlinkHeader::default();
        header.sequence_number = seq;
        header.flags = flags;
        let mut nl = NetlinkMessage::new(header, payload);
        nl.finalize();
        let mut buf = vec![0; nl.buffer_len()];
        nl.serialize(&mut buf);
        buf
    }

    /// A request the other end never answers fails at the read deadline,
    /// saying so, instead of holding its caller (and its locks) for ever.
    #[test]
    fn a_request_never_answered_fails_at_its_deadline() {
        let (ours, _peer) = socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let deadline = std::time::Duration::from_millis(200);
        with_deadline_of(ours.as_fd(), deadline, "test").unwrap();
        let start = std::time::Instant::now();
        let e = transact::<RouteNetlinkMessage>(ours.as_fd(), b"request", 1, true, "dump links")
            .unwrap_err();
        let took = start.elapsed();
        assert!(took >= deadline && took < 10 * deadline, "{took:?}");
        assert!(
            e.details().contains("did not answer within"),
            "{}",
            e.details()
        );
    }

    /// The same read path as the kernel backend, fed through a datagram
    /// socket pair: a stray reply to another request, a 256-VF PF reply
    /// above 64 KiB in one datagram, then DONE.
    #[test]
    fn reads_a_reply_above_64_kib_whole_and_skips_other_sequences() {
        let (ours, peer) = socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let big = crate::net::vf_info::tests::big_pf_reply();
        assert!(big.len() > 65536, "reply is {} bytes", big.len());
        let stray = message(
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(Default::default())),
            7,
            0,
        );
        let done = message(
            NetlinkPayload::Done(DoneMessage::default()),
            0,
            NLM_F_MULTIPART,
        );
        for datagram in [&stray, &big, &done] {
            send(peer.as_fd().as_raw_fd(), datagram, MsgFlags::empty()).unwrap();
        }
        let replies: Vec<RouteNetlinkMessage> =
            transact(ours.as_fd(), b"request", 0, false, "read PF").unwrap();
        assert_eq!(replies.len(), 1, "the stray reply was skipped");
        let RouteNetlinkMessage::NewLink(link) = &replies[0] else {
            panic!("not a link message")
        };
        let vf = crate::net::vf_info::vf_attrs(link, 255).unwrap();
        assert_eq!(
            vf[0],
            crate::net::vf_info::VfAttr::Mac(crate::net::Mac([2, 0, 0, 0, 0, 255]))
        );
        let mut request = [0u8; 16];
        let n = recv(peer.as_fd().as_raw_fd(), &mut request, MsgFlags::empty()).unwrap();
        assert_eq!(&request[..n], b"request");
    }

    /// A dump the kernel marks interrupted (`NLM_F_DUMP_INTR`) is asked for
    /// again, and the answer is the clean dump's, not a mix.
    #[test]
    fn an_interrupted_dump_is_asked_for_again() {
        use netlink_packet_core::NLM_F_DUMP_INTR;
        let (ours, peer) = socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let link = |index: u32, flags: u16| {
            let mut m = netlink_packet_route::link::LinkMessage::default();
            m.header.index = index;
            message(
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(m)),
                3,
                NLM_F_MULTIPART | flags,
            )
        };
        let done = |flags: u16| {
            message(
                NetlinkPayload::Done(DoneMessage::default()),
                3,
                NLM_F_MULTIPART | flags,
            )
        };
        let kernel = std::thread::spawn(move || {
            let fd = peer.as_fd().as_raw_fd();
            let mut requests = 0;
            let mut buf = [0u8; 64];
            // First dump: interrupted, with an entry the second does not hold.
            recv(fd, &mut buf, MsgFlags::empty()).unwrap();
            requests += 1;
            for d in [
                link(1, NLM_F_DUMP_INTR),
                link(9, NLM_F_DUMP_INTR),
                done(NLM_F_DUMP_INTR),
            ] {
                send(fd, &d, MsgFlags::empty()).unwrap();
            }
            recv(fd, &mut buf, MsgFlags::empty()).unwrap();
            requests += 1;
            for d in [link(1, 0), link(2, 0), done(0)] {
                send(fd, &d, MsgFlags::empty()).unwrap();
            }
            requests
        });
        let links: Vec<RouteNetlinkMessage> =
            transact(ours.as_fd(), b"dump", 3, false, "dump links")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kernel.join().unwrap(), 2, "the dump was sent twice");
        let indexes: Vec<u32> = links
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(l) => Some(l.header.index),
                _ => None,
            })
            .collect();
        assert_eq!(indexes, [1, 2], "only the clean dump's entries");
    }

    #[test]
    fn a_closed_peer_is_an_error_not_an_empty_answer() {
        let (ours, peer) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16];
            let _ = recv(peer.as_fd().as_raw_fd(), &mut buf, MsgFlags::empty());
            drop(peer);
        });
        let got = transact::<RouteNetlinkMessage>(ours.as_fd(), b"request", 1, true, "set VF");
        reader.join().unwrap();
        let e = got.unwrap_err();
        assert_eq!(e.code(), 104);
        assert!(e.to_string().contains("closed"), "{e}");
    }

    #[test]
    fn the_walker_yields_each_message_and_stops_at_one_that_does_not_decode() {
        let link =
            || NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(Default::default()));
        let mut datagram = [message(link(), 1, 0), message(link(), 2, 0)].concat();
        let seqs: Vec<u32> = messages::<RouteNetlinkMessage>(&datagram)
            .map(|m| m.unwrap().header.sequence_number)
            .collect();
        assert_eq!(seqs, [1, 2]);
        // A truncated last message is an error, and the walk ends there.
        datagram.truncate(datagram.len() - 3);
        let walked: Vec<_> = messages::<RouteNetlinkMessage>(&datagram).collect();
        assert_eq!(walked.len(), 2);
        assert!(walked[0].is_ok() && walked[1].is_err());
        // A zero length cannot loop.
        let mut zero = message(link(), 3, 0);
        zero[..4].fill(0);
        assert!(messages::<RouteNetlinkMessage>(&zero).count() <= 1);
    }
}
