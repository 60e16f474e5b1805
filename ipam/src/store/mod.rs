//! The lease file of one network on this node: a versioned, checksummed
//! document, rewritten atomically under a separate lock file.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod file_v1;
mod leases;

pub use leases::{Lease, Leases, PoolInfo};

use base::files::{self, FileLock, LockError};
use serde::Deserialize;

use crate::error::IpamError;
use file_v1::{DocumentV1, LeasesV1};

/// The lease file version this build writes (`file_v1`).
pub const STORE_VERSION: u32 = file_v1::VERSION;
/// Lease writes are short: poll the lock often.
const LOCK_POLL: Duration = Duration::from_millis(2);

pub fn checksum(data: &Leases) -> String {
    checksum_v1(&LeasesV1::from(data))
}

fn checksum_v1(data: &LeasesV1) -> String {
    // Over the canonical encoding of the data, so a flipped byte anywhere in it shows.
    let bytes = serde_json::to_vec(data).unwrap_or_default();
    format!("fnv1a64:{:016x}", base::fnv::fnv1a64(&bytes))
}

pub struct LeaseStore {
    pub path: PathBuf,
    lock_path: PathBuf,
    lock_timeout: Duration,
}

/// The store, locked for one read-modify-write.
pub struct Locked<'a> {
    store: &'a LeaseStore,
    _lock: FileLock,
}

/// The command that rebuilds `network`'s lease file from the attachment
/// records: the one fix line every message that advises it prints.
pub fn repair_command(network: &str) -> String {
    format!("railcnictl ipam repair {network}")
}

impl LeaseStore {
    pub fn new(dir: &Path, network: &str, lock_timeout: Duration) -> Self {
        let name = files::file_safe(network);
        LeaseStore {
            path: dir.join(format!("{name}.leases.json")),
            lock_path: dir.join(format!("{name}.lock")),
            lock_timeout,
        }
    }

    pub fn lock(&self) -> Result<Locked<'_>, IpamError> {
        if let Some(dir) = self.path.parent() {
            files::private_dir(dir)
                .map_err(|e| IpamError::io(format!("cannot create {}", dir.display()), &e))?;
        }
        let lock =
            files::lock(&self.lock_path, self.lock_timeout, LOCK_POLL).map_err(|e| match e {
                LockError::Busy(t) => IpamError::Spec(cni::Error::TryAgainLater(format!(
                    "lease store {} stayed locked for {t:?}",
                    self.path.display()
                ))),
                LockError::Io(e) => {
                    IpamError::io(format!("cannot lock {}", self.lock_path.display()), &e)
                }
            })?;
        // Holding the lock: temps a killed writer left are nobody's now.
        files::sweep_temps(&self.path);
        Ok(Locked {
            store: self,
            _lock: lock,
        })
    }

    /// Read and verify the file (no lock: readers see an old or a new file).
    /// A damaged file of an earlier boot reads as empty (see `Locked::read`).
    pub fn read(&self) -> Result<Leases, IpamError> {
        self.read_then(|_| {})
    }

    /// `read`, calling `left_by_crash` with why a damaged file last
    /// written before this boot cannot be read, before it reads as empty.
    fn read_then(&self, left_by_crash: impl FnOnce(&str)) -> Result<Leases, IpamError> {
        let bytes = match files::read(&self.path) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Leases::default()),
            Err(e) => {
                return Err(IpamError::io(
                    format!("cannot read lease file {}", self.path.display()),
                    &e,
                ))
            }
        };
        match decode(&bytes) {
            Ok(leases) => Ok(leases),
            Err(Untrusted::Damaged(why)) if files::written_before_boot(&self.path) => {
                left_by_crash(&why);
                Ok(Leases::default())
            }
            Err(why) => Err(IpamError::Corrupt(format!(
                "lease file {} is corrupt ({why}); nothing was changed. Rebuild it from the attachment records with \
                 `{}` before this network can allocate again",
                self.path.display(),
                repair_command(
                    &(self.path.file_name())
                        .and_then(|n| network_of(&n.to_string_lossy()))
                        .unwrap_or_else(|| "<network>".into())
                )
            ))),
        }
    }
}

/// Why a lease document cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untrusted {
    /// Written by a newer railcni: refused, never read or set aside.
    Newer(String),
    /// It does not parse, or fails its checksum.
    Damaged(String),
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::Newer(why) | Untrusted::Damaged(why) => f.write_str(why),
        }
    }
}

/// The lease document's data, or why it cannot be trusted.
pub fn decode(bytes: &[u8]) -> Result<Leases, Untrusted> {
    // The version first: a newer file is named as such, not as damaged.
    #[derive(Deserialize)]
    struct Versioned {
        version: u32,
    }
    let damaged = |e: serde_json::Error| Untrusted::Damaged(format!("does not parse: {e}"));
    let version = serde_json::from_slice::<Versioned>(bytes)
        .map_err(damaged)?
        .version;
    if version == 0 {
        return Err(Untrusted::Damaged("it has no version".into()));
    }
    if version > file_v1::VERSION {
        return Err(Untrusted::Newer(format!(
            "it is lease file version {version}, written by a newer railcni; this railcni-ipam {} reads up to version \
             {STORE_VERSION}: upgrade railcni on this node, never edit the file",
            env!("CARGO_PKG_VERSION")
        )));
    }
    let doc: DocumentV1 = serde_json::from_slice(bytes).map_err(damaged)?;
    let sum = checksum_v1(&doc.data);
    if doc.checksum != sum {
        return Err(Untrusted::Damaged(format!(
            "checksum {} does not match its data ({sum})",
            doc.checksum
        )));
    }
    Ok(doc.data.into())
}

impl Locked<'_> {
    /// Read and verify the file. A damaged file last written before this
    /// boot is what an OS crash left of a write that never reached the disk
    /// (see `write`): every lease in it died with that boot, so it is kept
    /// aside as `<network>.leases.json.crashed` and the pool starts empty.
    pub fn read(&self) -> Result<Leases, IpamError> {
        let path = &self.store.path;
        self.store.read_then(|why| match files::set_aside(path) {
            Ok(aside) => base::log_warn!(
                "lease file {} is unreadable ({why}) and was written before this boot: an OS crash \
                 left it, and its leases died with that boot; kept as {}",
                path.display(),
                aside.display()
            ),
            Err(e) => base::log_warn!("cannot set aside {}: {e}", path.display()),
        })
    }

    /// Replace the file atomically for every reader and for a killed
    /// writer, without waiting for the disk (`files::replace_atomic`): only
    /// an OS crash can lose the write, and it ends every lease of its boot
    /// (`read` then sets a damaged file aside). No ADD or DEL waits for the
    /// disk.
    pub fn write(&self, data: &Leases) -> Result<(), IpamError> {
        let path = &self.store.path;
        let data = LeasesV1::from(data);
        let doc = DocumentV1 {
            version: file_v1::VERSION,
            checksum: checksum_v1(&data),
            data,
        };
        let bytes = serde_json::to_vec_pretty(&doc)
            .map_err(|e| IpamError::io_plain(format!("encode leases: {e}")))?;
        files::replace_atomic(path, &bytes)
            .map_err(|e| IpamError::io(format!("cannot write lease file {}", path.display()), &e))
    }
}

/// The network a lease file name stands for (the inverse of `file_safe`).
pub fn network_of(file_name: &str) -> Option<String> {
    files::unescape_name(file_name.strip_suffix(".leases.json")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::liveness::Proof;
    use cni::Reply;
    use std::fs;

    const T: Duration = Duration::from_secs(1);

    fn lease(ip: &str) -> Lease {
        Lease {
            container_id: "c1".into(),
            ifname: "net1".into(),
            address: ip.parse().unwrap(),
            address6: None,
            pod_namespace: Some("ml".into()),
            pod_name: None,
            pod_uid: None,
            allocated_unix: 1,
            proof: Proof::default(),
        }
    }

    #[test]
    fn round_trips_and_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let s = LeaseStore::new(&t.path().join("ipam"), "rail1", T);
        let data = Leases {
            last_allocated: Some("172.16.0.0".parse().unwrap()),
            leases: vec![lease("172.16.0.0")],
            pool: None,
            ..Leases::default()
        };
        s.lock().unwrap().write(&data).unwrap();
        assert_eq!(s.read().unwrap(), data);
        let mode = fs::metadata(&s.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(s.path.file_name().unwrap(), "rail1.leases.json");
    }

    #[test]
    fn a_changed_byte_fails_the_checksum_and_names_the_file() {
        let t = tempfile::tempdir().unwrap();
        let s = LeaseStore::new(t.path(), "rail1", T);
        s.lock()
            .unwrap()
            .write(&Leases {
                last_allocated: None,
                leases: vec![lease("172.16.0.0")],
                pool: None,
                ..Leases::default()
            })
            .unwrap();
        let text = fs::read_to_string(&s.path)
            .unwrap()
            .replace("172.16.0.0", "172.16.0.1");
        fs::write(&s.path, text).unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.code(), 111);
        assert!(
            e.to_string().contains("checksum") && e.to_string().contains("rail1.leases.json"),
            "{e}"
        );
        // What to run, named where the error lands (a pod event), not a page.
        assert!(
            e.to_string().contains("`railcnictl ipam repair rail1`"),
            "{e}"
        );
    }

    /// A lease file cut short, as a crash mid-write leaves one.
    const TORN: &str = "{\"version\":1,\"chec";

    /// An empty lease file of a release newer than this one.
    fn newer_release() -> String {
        format!(
            "{{\"version\":2,\"checksum\":\"{}\",\"data\":{{}}}}",
            checksum(&Leases::default())
        )
    }

    #[test]
    fn torn_and_future_files_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let s = LeaseStore::new(t.path(), "rail1", T);
        fs::write(&s.path, TORN).unwrap();
        assert!(s.read().unwrap_err().to_string().contains("does not parse"));
        fs::write(&s.path, newer_release()).unwrap();
        assert!(s.read().unwrap_err().to_string().contains("version 2"));
    }

    /// Date a file before this boot, as one an OS crash left.
    fn written_in_an_earlier_boot(path: &Path) {
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
    }

    #[test]
    fn a_damaged_file_of_an_earlier_boot_is_set_aside_and_the_pool_starts_empty() {
        let t = tempfile::tempdir().unwrap();
        let s = LeaseStore::new(t.path(), "rail1", T);
        fs::write(&s.path, "").unwrap();
        written_in_an_earlier_boot(&s.path);
        assert_eq!(
            s.read().unwrap(),
            Leases::default(),
            "unlocked: reads as empty"
        );
        assert!(s.path.exists(), "an unlocked reader moves nothing");
        assert_eq!(s.lock().unwrap().read().unwrap(), Leases::default());
        assert!(!s.path.exists());
        assert_eq!(
            fs::read(t.path().join("rail1.leases.json.crashed")).unwrap(),
            b"",
            "kept to read"
        );
    }

    #[test]
    fn only_a_damaged_file_of_an_earlier_boot_is_set_aside() {
        let t = tempfile::tempdir().unwrap();
        let s = LeaseStore::new(t.path(), "rail1", T);
        fs::write(&s.path, TORN).unwrap();
        assert_eq!(
            s.lock().unwrap().read().unwrap_err().code(),
            111,
            "this boot's"
        );
        fs::write(&s.path, newer_release()).unwrap();
        written_in_an_earlier_boot(&s.path);
        let e = s.lock().unwrap().read().unwrap_err();
        assert!(
            e.to_string().contains("version 2"),
            "a newer release's: {e}"
        );
        assert!(s.path.exists());
    }

    #[test]
    fn a_missing_file_is_an_empty_store() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            LeaseStore::new(t.path(), "rail1", T).read().unwrap(),
            Leases::default()
        );
    }

    #[test]
    fn network_names_cannot_escape_the_directory() {
        assert_eq!(files::file_safe("rail-1.a_b"), "rail-1.a_b");
        assert_eq!(files::file_safe("../etc/x"), "%2e.%2fetc%2fx");
        for name in ["rail-1.a_b", "../etc/x", "storage rail/2"] {
            let file = format!("{}.leases.json", files::file_safe(name));
            assert_eq!(network_of(&file).as_deref(), Some(name));
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use base::liveness::Proof;
    use proptest::prelude::*;
    use std::net::IpAddr;

    fn arb_lease() -> impl Strategy<Value = Lease> {
        (
            "[a-f0-9]{1,64}",
            "net[0-9]{1,2}",
            any::<u32>(),
            proptest::option::of("[a-z-]{1,20}"),
            any::<u64>(),
        )
            .prop_map(|(container_id, ifname, ip, pod_name, t)| Lease {
                container_id,
                ifname,
                address: IpAddr::V4(ip.into()),
                address6: None,
                pod_namespace: None,
                pod_name,
                pod_uid: None,
                allocated_unix: t,
                proof: Proof::default(),
            })
    }

    proptest! {
        /// Any bytes are a lease document or a reason it cannot be trusted.
        #[test]
        fn any_bytes_decode_or_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
            let _ = decode(&bytes);
        }

        /// Any JSON shaped like a lease file decodes or is refused, never a panic.
        #[test]
        fn any_json_decodes_or_is_refused(v in support::arb_json()) {
            let _ = decode(v.to_string().as_bytes());
        }

        /// What the store writes, it reads back; a flipped byte is caught.
        #[test]
        fn written_documents_read_back_and_flips_are_caught(
            leases in prop::collection::vec(arb_lease(), 0..8),
            flip in any::<prop::sample::Index>(),
        ) {
            let t = tempfile::tempdir().unwrap();
            let s = LeaseStore::new(t.path(), "rail1", Duration::from_secs(1));
            let data = Leases { last_allocated: None, leases, pool: None, ..Leases::default() };
            s.lock().unwrap().write(&data).unwrap();
            prop_assert_eq!(s.read().unwrap(), data.clone());
            let mut bytes = std::fs::read(&s.path).unwrap();
            let i = flip.index(bytes.len());
            bytes[i] ^= 0x01;
            if let Ok(back) = decode(&bytes) {
                // Only a flip that leaves the data equal (whitespace) may pass.
                prop_assert_eq!(back, data);
            }
        }
    }
}
