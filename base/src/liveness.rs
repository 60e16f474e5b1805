//! Whether the holder of a lease or an attachment record is provably gone.
//!
//! A holder is its pod's network namespace: the path *and* the namespace
//! behind it (nsfs device and inode, since a path can be reused by another
//! pod), in the boot it was made in. Kubelet and runtimes lose DELs across
//! restarts and reboots, so railcni reclaims what is provably dead by
//! itself, and never what might be alive.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use cni::env::NsId;

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// `Proof` as version 1 of the attachment record and of the lease file
/// write it, as members `netns`, `netnsId` and `bootId` of the holder (both
/// formats flatten it): a format type, changed only with those formats.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProofV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns_id: Option<NsIdV1>,
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
    /// Its namespace path now names another namespace.
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
            boot_id,
        }
    }

    /// Taken now for a holder in the namespace `id`, which the taker holds
    /// open (`netns` is its path, which may already name nothing).
    pub fn held(netns: Option<&Path>, id: Option<NsId>, boot_id: Option<String>) -> Self {
        Proof {
            netns: netns.map(|p| p.display().to_string()),
            netns_id: id.or_else(|| netns.and_then(NsId::of)),
            boot_id,
        }
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
            Some(_) => None,
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
