//! A network namespace's cookie: the identity the kernel never reuses.
//!
//! nsfs inode numbers are handed out lowest-free, so a namespace made just
//! after another one died usually gets the dead one's inode (design.md §17).
//! The cookie (`SO_NETNS_COOKIE`, Linux 5.14+) is unique within a boot and
//! never reused; it is read from any socket made in the namespace. On an
//! older kernel every read answers `None`, and callers fall back to the
//! rule that needs no cookie (see `railcni::attachment::identity`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;

use nix::libc;
use nix::sched::{setns, CloneFlags};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

/// `SO_NETNS_COOKIE` (include/uapi/asm-generic/socket.h): the same number on
/// every architecture railcni is built for.
const SO_NETNS_COOKIE: libc::c_int = 71;

/// The cookie of the namespace `socket` was made in.
pub fn of_socket(socket: BorrowedFd<'_>) -> Option<u64> {
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `cookie`, which
    // lives for the call; the descriptor is borrowed and open.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    (rc == 0 && len as usize == std::mem::size_of::<u64>()).then_some(cookie)
}

/// The cookie of the namespace the calling thread is in.
pub fn of_this_thread() -> Option<u64> {
    let s = socket(
        AddressFamily::Unix,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .ok()?;
    of_socket(s.as_fd())
}

/// The cookie of the namespace `ns` is a handle on (an nsfs descriptor),
/// read on a short-lived thread that enters it, so the caller's thread
/// never changes namespace. `None` when it cannot be entered (no
/// CAP_SYS_ADMIN) or the kernel has no cookies.
pub fn of_namespace(ns: BorrowedFd<'_>) -> Option<u64> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                setns(ns, CloneFlags::CLONE_NEWNET).ok()?;
                of_this_thread()
            })
            .join()
            .ok()
            .flatten()
    })
}

/// The cookie of the namespace at `path` (a bind mount or `/proc/<pid>/ns/net`).
pub fn of_path(path: &Path) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    of_namespace(file.as_fd())
}

/// Whether this kernel gives namespaces cookies (Linux 5.14+).
pub fn supported() -> bool {
    of_this_thread().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_namespace_has_one_cookie() {
        // Any user may read its own namespace's cookie; the kernels CI and
        // developers run are all newer than 5.14.
        let a = of_this_thread().expect("SO_NETNS_COOKIE (Linux 5.14+)");
        assert_eq!(of_this_thread(), Some(a), "stable for one namespace");
        assert_ne!(a, 0);
    }
}
