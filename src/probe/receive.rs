//! Waiting for the one datagram a probe wants, until a deadline.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Instant;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, MsgFlags};

/// Read datagrams from `fd` into `buf` until one is `accept`ed (true) or
/// `deadline` passes (false).
pub(super) fn receive_until(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    deadline: Instant,
    mut accept: impl FnMut(&[u8]) -> bool,
) -> bool {
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        let ms = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
        if poll(&mut fds, PollTimeout::from(ms)).unwrap_or(0) == 0 {
            return false;
        }
        let n = recv(fd.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT).unwrap_or(0);
        if accept(&buf[..n]) {
            return true;
        }
    }
    false
}
