//! The attachment store: one record per VF, written before the first host
//! change so that a DEL after a crash can finish the job, plus per-VF locks.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

mod record;
mod record_v1;

pub use record::{Phase, Record};

use base::files::{self, LockError};
use base::Settings;
use serde::Deserialize;

use crate::error::{Error, Result};
use record_v1::RecordV1;

pub use crate::vf::home::HostLink;

/// An unreadable record last written in an earlier boot is what an OS crash
/// left of a write that never reached the disk: its pod died with that boot
/// and the reboot gave its VF back, so it is renamed `<pci>.json.crashed`
/// (kept to read, no longer listed) and the VF is treated as unattached.
fn set_aside(path: &std::path::Path, why: &str) {
    match files::set_aside(path) {
        Ok(aside) => crate::log_warn!(
            "attachment record {} is unreadable ({why}) and was written before this boot: \
             an OS crash left it; kept as {} and the VF treated as unattached",
            path.display(),
            aside.display()
        ),
        Err(e) => crate::log_warn!("cannot set aside {}: {e}", path.display()),
    }
}

pub struct AttachmentStore {
    root: PathBuf,
    lock_timeout: Duration,
    /// Directories already made private in this process (one mkdir each).
    made: std::sync::Mutex<Vec<&'static str>>,
}

/// Holds a VF's lock until dropped.
pub struct VfLock {
    _lock: files::FileLock,
}

/// VF locks are held for a whole ADD or DEL: poll them gently.
const LOCK_POLL: Duration = Duration::from_millis(20);

impl AttachmentStore {
    pub fn new(settings: &Settings) -> Self {
        AttachmentStore {
            root: settings.state_dir.clone(),
            lock_timeout: settings.lock_timeout,
            made: std::sync::Mutex::default(),
        }
    }

    /// The subdirectory `name`, made (0700) when missing: for writers only,
    /// so a read-only command on a node without state changes nothing.
    fn dir(&self, name: &'static str) -> Result<PathBuf> {
        let dir = self.root.join(name);
        let mut made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !made.contains(&name) {
            files::private_dir(&dir)
                .map_err(|e| Error::state(format!("cannot create {}", dir.display()), &e))?;
            made.push(name);
        }
        Ok(dir)
    }

    fn record_path(&self, pci: &str) -> PathBuf {
        self.root.join("attachments").join(format!("{pci}.json"))
    }

    /// Take the VF's lock, waiting up to the lock timeout (then code 11).
    pub fn lock_vf(&self, pci: &str) -> Result<VfLock> {
        let lock = self.lock_named(&format!("{pci}.lock"), || {
            format!("VF {pci} is locked by another railcni invocation")
        })?;
        // Holding the lock: temps a killed writer left are nobody's now.
        files::sweep_temps(&self.record_path(pci));
        Ok(lock)
    }

    /// The node-wide lock around an InfiniBand VF's driver rebind and what
    /// must be found after it: a rebind registers the VF's RDMA device again
    /// under the first free `mlx5_%d`, so two at once can swap names, and the
    /// device is named (by PCI address) and moved before another rebind
    /// starts (ib-sriov-cni serializes the same for this reason).
    pub fn lock_rebinds(&self) -> Result<VfLock> {
        self.lock_named("infiniband-rebind.lock", || {
            "another InfiniBand VF's driver rebind on this node held its lock".to_string()
        })
    }

    /// The lock file `name` under `locks/`, waiting up to the lock timeout;
    /// busy past it is code 11, saying `who` holds it.
    fn lock_named(&self, name: &str, who: impl Fn() -> String) -> Result<VfLock> {
        let path = self.dir("locks")?.join(name);
        match files::lock(&path, self.lock_timeout, LOCK_POLL) {
            Ok(lock) => Ok(VfLock { _lock: lock }),
            Err(LockError::Busy(t)) => Err(Error::try_again_later(format!(
                "{} for more than {t:?}",
                who()
            ))),
            Err(LockError::Io(e)) => {
                Err(Error::state(format!("cannot lock {}", path.display()), &e))
            }
        }
    }

    pub fn load(&self, pci: &str) -> Result<Option<Record>> {
        let path = self.record_path(pci);
        let bytes = match files::read(&path) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(None),
            Err(e) => return Err(Error::state(format!("cannot read {}", path.display()), &e)),
        };
        let unreadable = |why: String| {
            Error::State(cni::IoFailure::plain(format!(
                "attachment record {} is unreadable ({why}); inspect it, move the VF home by hand and remove the file",
                path.display()
            )))
        };
        // The version first: a newer record is named as such, not as torn.
        #[derive(Deserialize)]
        struct Versioned {
            version: u32,
        }
        let decoded = serde_json::from_slice::<Versioned>(&bytes).and_then(|v| match v.version {
            record_v1::VERSION => serde_json::from_slice::<RecordV1>(&bytes)
                .and_then(Record::try_from)
                .map(Ok),
            newer => Ok(Err(newer)),
        });
        match decoded {
            Ok(Ok(record)) => Ok(Some(record)),
            Ok(Err(newer)) => Err(unreadable(format!(
                "it is record version {newer}, written by a newer railcni; this railcni {} reads up to \
                 version {}: upgrade railcni on this node before it touches the attachment",
                env!("CARGO_PKG_VERSION"),
                record_v1::VERSION
            ))),
            Err(e) if files::written_before_boot(&path) => {
                set_aside(&path, &e.to_string());
                Ok(None)
            }
            Err(e) => Err(unreadable(e.to_string())),
        }
    }

    /// Every readable record (unreadable ones are skipped with a log line).
    pub fn list(&self) -> Result<Vec<Record>> {
        let dir = self.root.join("attachments");
        let mut out = Vec::new();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // Nothing was ever attached here.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::state(format!("cannot list {}", dir.display()), &e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pci) = name.strip_suffix(".json") else {
                continue;
            };
            match self.load(pci) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {}
                Err(e) => crate::log_warn!("{e}"),
            }
        }
        out.sort_by(|a, b| a.pci.cmp(&b.pci));
        Ok(out)
    }

    /// `find`, reading the record of `likely` (the config's deviceID) first:
    /// one file read in the usual case instead of every record's.
    pub fn find_likely(
        &self,
        container_id: &str,
        ifname: &str,
        likely: Option<&str>,
    ) -> Result<Option<Record>> {
        let first = likely.and_then(|pci| self.load(pci).ok().flatten());
        match first.filter(|r| r.is_for(container_id, ifname)) {
            Some(record) => Ok(Some(record)),
            None => self.find(container_id, ifname),
        }
    }

    /// Find the record of an attachment by its CNI key.
    pub fn find(&self, container_id: &str, ifname: &str) -> Result<Option<Record>> {
        Ok(self
            .list()?
            .into_iter()
            .find(|r| r.is_for(container_id, ifname)))
    }

    /// Atomically (readers and a killed railcni see the old or the new
    /// record) but not crash-safe: the record only matters while its pod
    /// lives, and an OS crash ends every pod of the boot (see `load` for what
    /// such a crash may leave). No state write waits for the disk.
    pub fn save(&self, record: &Record) -> Result<()> {
        self.dir("attachments")?;
        let path = self.record_path(&record.pci);
        let bytes = RecordV1::try_from(record)
            .and_then(|r| serde_json::to_vec_pretty(&r))
            .map_err(|e| Error::internal(format!("encode record: {e}")))?;
        files::replace_atomic(&path, &bytes)
            .map_err(|e| Error::state(format!("cannot write {}", path.display()), &e))
    }

    pub fn remove(&self, pci: &str) -> Result<()> {
        let path = self.record_path(pci);
        files::remove(&path)
            .map_err(|e| Error::state(format!("cannot remove {}", path.display()), &e))
    }

    /// STATUS: can this node take an ADD (state dir writable)?
    pub fn probe_writable(&self) -> Result<()> {
        let dir = self.dir("attachments")?;
        let probe = dir.join(".status-probe");
        files::replace_atomic(&probe, b"ok").map_err(|e| {
            let why =
                cni::IoFailure::new(format!("state dir {} is not writable", dir.display()), &e);
            Error::unavailable(why.to_string())
        })?;
        let _ = fs::remove_file(probe);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Mac;
    use base::liveness::Proof;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn store(dir: &Path) -> AttachmentStore {
        AttachmentStore::new(&Settings {
            state_dir: dir.to_path_buf(),
            ..Settings::default()
        })
    }

    fn host() -> HostLink {
        HostLink {
            name: "ens1f0v0".into(),
            mac: Some(Mac([2, 0, 0, 0, 0, 1])),
            mtu: 1500,
            ifindex: 7,
            up: None,
        }
    }

    /// A record of VF `pci` attached as `container`/net1 on rail1.
    fn record(pci: &str, container: &str) -> Record {
        Record::new(pci, "rail1", container, "net1", Proof::default(), host())
    }

    #[test]
    fn records_round_trip_with_private_permissions() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t.path().join("state"));
        let r = record("0000:3b:00.2", "c1");
        s.save(&r).unwrap();
        assert_eq!(s.load("0000:3b:00.2").unwrap(), Some(r.clone()));
        assert_eq!(s.find("c1", "net1").unwrap(), Some(r));
        assert_eq!(s.find("c1", "net2").unwrap(), None);
        let dir_mode = fs::metadata(t.path().join("state/attachments"))
            .unwrap()
            .permissions()
            .mode();
        let file_mode = fs::metadata(t.path().join("state/attachments/0000:3b:00.2.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!((dir_mode & 0o777, file_mode & 0o777), (0o700, 0o600));
        s.remove("0000:3b:00.2").unwrap();
        s.remove("0000:3b:00.2").unwrap();
        assert_eq!(s.load("0000:3b:00.2").unwrap(), None);
    }

    #[test]
    fn find_likely_reads_the_hinted_vf_first_and_falls_back_to_every_record() {
        let t = tempfile::tempdir().unwrap();
        let s = store(t.path());
        s.save(&record("0000:3b:00.2", "c1")).unwrap();
        s.save(&record("0000:3b:00.3", "c2")).unwrap();
        let found = |hint| s.find_likely("c2", "net1", hint).unwrap().map(|r| r.pci);
        assert_eq!(found(Some("0000:3b:00.3")).as_deref(), Some("0000:3b:00.3"));
        assert_eq!(
            found(Some("0000:3b:00.2")).as_deref(),
            Some("0000:3b:00.3"),
            "the hinted VF holds another attachment: every record is searched"
        );
        assert_eq!(found(Some("0000:3b:00.7")).as_deref(), Some("0000:3b:00.3"));
        assert_eq!(
            s.find_likely("c3", "net1", Some("0000:3b:00.2")).unwrap(),
            None
        );
    }

    #[test]
    fn a_corrupt_record_is_a_clear_state_error() {
        let t = tempfile::tempdir().unwrap();
        let s = store(t.path());
        fs::create_dir_all(t.path().join("attachments")).unwrap();
        fs::write(t.path().join("attachments/0000:3b:00.2.json"), "{torn").unwrap();
        let e = s.load("0000:3b:00.2").unwrap_err();
        assert_eq!(e.code(), 106);
        assert!(e.details().contains("0000:3b:00.2.json"));
    }

    #[test]
    fn a_torn_record_of_an_earlier_boot_is_set_aside_not_an_error() {
        let t = tempfile::tempdir().unwrap();
        let s = store(t.path());
        fs::create_dir_all(t.path().join("attachments")).unwrap();
        let path = t.path().join("attachments/0000:3b:00.2.json");
        fs::write(&path, "").unwrap();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
        assert_eq!(s.load("0000:3b:00.2").unwrap(), None);
        assert!(!path.exists());
        assert!(t
            .path()
            .join("attachments/0000:3b:00.2.json.crashed")
            .exists());
        assert!(s.list().unwrap().is_empty());
    }

    #[test]
    fn a_held_lock_times_out_with_code_11() {
        let t = tempfile::tempdir().unwrap();
        let mut s = store(t.path());
        s.lock_timeout = Duration::from_millis(50);
        let held = s.lock_vf("0000:3b:00.2").unwrap();
        assert_eq!(s.lock_vf("0000:3b:00.2").err().map(|e| e.code()), Some(11));
        assert!(s.lock_vf("0000:3b:00.3").is_ok());
        drop(held);
        assert!(s.lock_vf("0000:3b:00.2").is_ok());
    }

    #[test]
    fn netns_liveness_follows_the_file_identity() {
        let t = tempfile::tempdir().unwrap();
        let ns = t.path().join("ns");
        fs::write(&ns, "").unwrap();
        let proof = Proof::now(Some(&ns), Some("boot-a".into()));
        let r = Record::new("0000:3b:00.2", "rail1", "c1", "net1", proof, host());
        assert!(r.netns_alive(Some("boot-a")));
        assert!(
            !r.netns_alive(Some("boot-b")),
            "a record of an earlier boot is dead"
        );
        fs::remove_file(&ns).unwrap();
        assert!(!r.netns_alive(Some("boot-a")));
    }
}
