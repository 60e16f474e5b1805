//! Whether the holder of a lease or an attachment record is provably gone.
//!
//! A holder is its pod's network namespace: the path *and* the namespace
//! behind it (nsfs device and inode, since a path can be reused by another
//! pod), in the boot it was made in, confirmed by the namespace's cookie
//! where the kernel gives one (nsfs inodes are reused at once; cookies never
//! are: `netns_cookie`). Kubelet and runtimes lose DELs across restarts and
//! reboots, so railcni reclaims what is provably dead by itself, and never
//! what might be alive.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use cni::env::NsId;

use crate::netns_cookie;

/// A namespace as its taker holds it open: its nsfs identity and its
/// cookie, each `None` when it could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub id: Option<NsId>,
    pub cookie: Option<u64>,
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`, or where the settings
/// point), `None` when it cannot be read.
pub fn boot_id(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// What proves a holder alive, recorded when it took something.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proof {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_id: Option<NsId>,
    /// The namespace's cookie, which the kernel never reuses within a boot:
    /// `None` in what an older railcni wrote, or on a kernel before 5.14.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_cookie: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// `Proof` as version 1 of the attachment record and of the lease file
/// write it, as members `netns`, `netnsId`, `netnsCookie` and `bootId` of
/// the holder (both formats flatten it): a format type, changed only with
/// those formats. `netnsCookie` is optional: what the releases before it
/// wrote reads as a proof without a cookie.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProofV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns_id: Option<NsIdV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns_cookie: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    boot_id: Option<String>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct NsIdV1 {
    dev: u64,
    ino: u64,
}

impl From<&Proof> for ProofV1 {
    fn from(p: &Proof) -> Self {
        ProofV1 {
            netns: p.netns.clone(),
            netns_id: p.netns_id.map(|n| NsIdV1 {
                dev: n.dev,
                ino: n.ino,
            }),
            netns_cookie: p.netns_cookie,
            boot_id: p.boot_id.clone(),
        }
    }
}

impl From<ProofV1> for Proof {
    fn from(p: ProofV1) -> Self {
        Proof {
            netns: p.netns,
            netns_id: p.netns_id.map(|n| NsId {
                dev: n.dev,
                ino: n.ino,
            }),
            netns_cookie: p.netns_cookie,
            boot_id: p.boot_id,
        }
    }
}

/// Why a holder is known to be gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// Made in another boot than this one.
    EarlierBoot,
    /// Its namespace path no longer exists.
    NetnsGone(String),
    /// Its namespace path now names another namespace (another inode, or
    /// the same inode with another cookie: the number was reused).
    NetnsReplaced(String),
}

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gone::EarlierBoot => f.write_str("it was made in an earlier boot"),
            Gone::NetnsGone(p) => write!(f, "its network namespace {p} is gone"),
            Gone::NetnsReplaced(p) => write!(f, "{p} is now another network namespace"),
        }
    }
}

impl Proof {
    /// Taken now for a holder in the namespace at `netns`.
    pub fn now(netns: Option<&Path>, boot_id: Option<String>) -> Self {
        Proof {
            netns: netns.map(|p| p.display().to_string()),
            netns_id: netns.and_then(NsId::of),
            netns_cookie: netns.and_then(netns_cookie::of_path),
            boot_id,
        }
    }

    /// Taken now for a holder in the namespace `held`, which the taker
    /// holds open (`netns` is its path, which may already name nothing).
    pub fn held(netns: Option<&Path>, held: Held, boot_id: Option<String>) -> Self {
        match held.id {
            Some(id) => Proof {
                netns: netns.map(|p| p.display().to_string()),
                netns_id: Some(id),
                netns_cookie: held.cookie,
                boot_id,
            },
            None => Proof::now(netns, boot_id),
        }
    }

    /// Whether the live namespace `cookie` is the one this proof names. A
    /// proof without a cookie cannot tell (`None`): the caller needs
    /// another sign (the pod's VF in it). An unreadable cookie proves
    /// nothing either way.
    pub fn same_cookie(&self, cookie: Option<u64>) -> Option<bool> {
        Some(self.netns_cookie? == cookie?)
    }

    /// `Some(why)` only when the holder is provably gone; a holder whose
    /// proof is missing (an old lease, no netns given) is never judged dead.
    pub fn gone(&self, current_boot: Option<&str>) -> Option<Gone> {
        if let (Some(then), Some(now)) = (self.boot_id.as_deref(), current_boot) {
            if then != now {
                return Some(Gone::EarlierBoot);
            }
        }
        let (Some(path), Some(id)) = (&self.netns, self.netns_id) else {
            return None;
        };
        match NsId::of(Path::new(path)) {
            None => Some(Gone::NetnsGone(path.clone())),
            Some(now) if now != id => Some(Gone::NetnsReplaced(path.clone())),
            // Same inode: the same namespace only if the cookie agrees.
            Some(_) if self.netns_cookie.is_none() => None,
            Some(_) => match self.same_cookie(netns_cookie::of_path(Path::new(path))) {
                Some(false) => Some(Gone::NetnsReplaced(path.clone())),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gone_only_when_provably_so() {
        let t = tempfile::tempdir().unwrap();
        let ns = t.path().join("ns");
        std::fs::write(&ns, "").unwrap();
        let proof = Proof::now(Some(&ns), Some("boot-a".into()));
        assert_eq!(proof.gone(Some("boot-a")), None, "alive");
        assert_eq!(proof.gone(None), None, "unknown boot: judged by the netns");
        assert_eq!(proof.gone(Some("boot-b")), Some(Gone::EarlierBoot));

        // A second link keeps the old inode allocated, so the file made
        // again at the same path cannot reuse its number.
        std::fs::hard_link(&ns, t.path().join("old")).unwrap();
        std::fs::remove_file(&ns).unwrap();
        std::fs::write(&ns, "").unwrap(); // same path, new inode
        let replaced = proof.gone(Some("boot-a"));
        let gone_now = {
            std::fs::remove_file(&ns).unwrap();
            proof.gone(Some("boot-a"))
        };
        assert!(
            matches!(replaced, Some(Gone::NetnsReplaced(_))),
            "{replaced:?}"
        );
        assert!(matches!(gone_now, Some(Gone::NetnsGone(_))), "{gone_now:?}");

        assert_eq!(
            Proof::default().gone(Some("boot-b")),
            None,
            "no proof, never dead"
        );
        let no_ns = Proof::now(Some(Path::new("/nonexistent/ns")), None);
        assert_eq!(
            no_ns.gone(None),
            None,
            "a netns that never existed proves nothing"
        );
    }

    #[test]
    fn reads_the_boot_id() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("boot_id");
        std::fs::write(&p, "1234-abcd\n").unwrap();
        assert_eq!(boot_id(&p).as_deref(), Some("1234-abcd"));
        assert_eq!(boot_id(&t.path().join("missing")), None);
    }
}
