//! Network namespace handles, and running work inside one.

use std::cell::Cell;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use cni::env::NsId;
use nix::sched::{setns, CloneFlags};
use nix::sys::statfs::{fstatfs, NSFS_MAGIC};

use crate::error::{Error, Result};

pub struct NetNs {
    file: File,
    label: String,
    /// The namespace this process runs in: work for it needs no thread.
    current: bool,
}

impl NetNs {
    /// The pod namespace at `path`; a missing one, or a path that is no
    /// longer a namespace (its bind mount gone, a plain file left), is CNI
    /// code 3: both mean the runtime's handle on the pod is gone.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::container_unknown(format!(
                "network namespace {} does not exist",
                path.display()
            )),
            _ => Error::os(
                format!("cannot open network namespace {}", path.display()),
                &e,
            ),
        })?;
        if !is_netns(&file) {
            return Err(Error::container_unknown(format!(
                "{} is not a network namespace (its bind mount is gone; a plain file is left)",
                path.display()
            )));
        }
        Ok(NetNs {
            file,
            label: path.display().to_string(),
            current: false,
        })
    }

    /// The live namespace with inode `id`, through a process that is in it
    /// (`/proc/<pid>/ns/net`), and that process: `None` when no process is
    /// in such a namespace. Inodes are reused at once, so this is a
    /// candidate, never proof: `attachment::identity` confirms it.
    pub fn by_inode_through_process(id: NsId) -> Option<(Self, u32)> {
        let procs = std::fs::read_dir("/proc").ok()?;
        let pids = procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
        for pid in pids {
            let path = format!("/proc/{pid}/ns/net");
            if NsId::of(Path::new(&path)) != Some(id) {
                continue;
            }
            // The process may end between the stat and the open.
            if let Ok(file) = File::open(&path) {
                let label = format!("{path} (the pod's namespace, held by process {pid})");
                let ns = NetNs {
                    file,
                    label,
                    current: false,
                };
                return Some((ns, pid));
            }
        }
        None
    }

    /// The namespace the plugin was started in: "the host" for every return.
    pub fn current() -> Result<Self> {
        let path = Path::new("/proc/thread-self/ns/net");
        let file = File::open(path)
            .map_err(|e| Error::os(format!("cannot open {}", path.display()), &e))?;
        Ok(NetNs {
            file,
            label: "host".into(),
            current: true,
        })
    }

    /// Its identity (nsfs device and inode), read from the open handle:
    /// what it is, whatever its path names by now.
    pub fn id(&self) -> Option<NsId> {
        let m = self.file.metadata().ok()?;
        Some(NsId {
            dev: std::os::unix::fs::MetadataExt::dev(&m),
            ino: std::os::unix::fs::MetadataExt::ino(&m),
        })
    }

    /// Its cookie (Linux 5.14+), which the kernel never reuses within a
    /// boot: read from a socket made inside it.
    pub fn cookie(&self) -> Option<u64> {
        self.run(|| Ok(base::netns_cookie::of_this_thread()))
            .ok()
            .flatten()
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Run `f` inside this namespace, on the caller's thread: enter, work,
    /// come back. A thread of its own would cost more than the work (a
    /// socket, a few sysctls), and a thread ending just before the move
    /// measurably slows the kernel's move. If coming back ever fails, the
    /// caller's thread is marked stranded, and from then on its namespace
    /// work, the host's included, runs on a short-lived thread that enters
    /// its namespace by descriptor: nothing is done in the wrong place and
    /// nothing aborts.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        if STRANDED.get() {
            return self.run_on_thread(f);
        }
        if self.current {
            return f();
        }
        self.run_here(f)
    }

    fn run_here<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let home = File::open("/proc/thread-self/ns/net")
            .map_err(|e| Error::os("cannot open this thread's network namespace", &e))?;
        self.enter()?;
        // Comes back when dropped, after `f` returns or unwinds.
        let _back = ComeBack {
            home,
            from: &self.label,
        };
        f()
    }

    /// Run `f` on a short-lived thread of its own that enters this
    /// namespace: for work that changes its thread in other ways too (a
    /// private mount namespace), which must never reach the caller's.
    pub fn run_on_thread<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter()?;
                    f()
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(Error::internal(format!(
                        "work inside network namespace {} panicked",
                        self.label
                    )))
                })
        })
    }

    fn enter(&self) -> Result<()> {
        setns(self.file.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|errno| Error::Kernel {
            what: format!("cannot enter network namespace {}", self.label),
            errno,
            said: None,
        })
    }
}

/// Is `file` a namespace (nsfs)? A path whose bind mount is gone opens as
/// the plain file beneath it, and entering that fails with EINVAL.
fn is_netns(file: &File) -> bool {
    fstatfs(file).is_ok_and(|s| s.filesystem_type() == NSFS_MAGIC)
}

thread_local! {
    /// Set once this thread failed to return to its namespace.
    static STRANDED: Cell<bool> = const { Cell::new(false) };
}

/// Returns the caller's thread to its namespace when dropped.
struct ComeBack<'a> {
    home: File,
    from: &'a str,
}

impl Drop for ComeBack<'_> {
    fn drop(&mut self) {
        if let Err(e) = setns(self.home.as_fd(), CloneFlags::CLONE_NEWNET) {
            STRANDED.set(true);
            crate::log_error!(
                "cannot return from network namespace {} ({e}); namespace work now runs on its own threads",
                self.from
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` in a fresh thread so a namespace switch cannot leak into
    /// other tests; needs root (unshare).
    fn in_fresh_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().expect("test thread");
    }

    fn inode(path: &str) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).expect("ns link"))
    }

    #[test]
    #[ignore = "root: network namespace; scripts/test.sh runs it"]
    fn work_runs_inside_and_the_caller_comes_back() {
        support::require_root();
        in_fresh_thread(|| {
            let host = inode("/proc/thread-self/ns/net");
            // A second namespace, held open by a thread parked inside it.
            let (tx, rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let holder = std::thread::spawn(move || {
                nix::sched::unshare(CloneFlags::CLONE_NEWNET).expect("unshare");
                tx.send(File::open("/proc/thread-self/ns/net").expect("open"))
                    .expect("send");
                done_rx.recv().ok();
            });
            let other = NetNs {
                file: rx.recv().expect("ns"),
                label: "test".into(),
                current: false,
            };
            let seen = other
                .run(|| Ok(inode("/proc/thread-self/ns/net")))
                .expect("run");
            assert_ne!(seen, host, "the work ran inside the other namespace");
            assert_eq!(
                inode("/proc/thread-self/ns/net"),
                host,
                "and the caller came back"
            );
            assert!(!STRANDED.get());
            done_tx.send(()).ok();
            holder.join().expect("holder");
        });
    }

    #[test]
    #[ignore = "root: network namespace; scripts/test.sh runs it"]
    fn a_stranded_caller_still_does_host_work_in_the_host() {
        support::require_root();
        in_fresh_thread(|| {
            let host = NetNs::current().expect("host");
            let host_inode = inode("/proc/thread-self/ns/net");
            // What a failed return leaves: the caller's thread elsewhere.
            nix::sched::unshare(CloneFlags::CLONE_NEWNET).expect("unshare");
            STRANDED.set(true);
            let seen = host
                .run(|| Ok(inode("/proc/thread-self/ns/net")))
                .expect("run");
            assert_eq!(
                seen, host_inode,
                "host work ran in the host, not where the caller is"
            );
        });
    }
}
