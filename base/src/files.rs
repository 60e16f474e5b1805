//! File mechanics the attachment store and the lease store share: private
//! directories, lock files held with a deadline, and atomic replacement.
//! Every open here refuses symlinks (`O_NOFOLLOW`) and closes on exec.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;
const FLAGS: i32 = nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC;

/// Create `dir` (and parents) owner-only if missing.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Read a whole file, refusing a symlink. `Ok(None)` when it does not exist.
pub fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut file = match OpenOptions::new().read(true).custom_flags(FLAGS).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another holder kept it past the deadline.
    Busy(Duration),
    Io(io::Error),
}

/// An exclusive lock on a lock file, held until dropped: closing the file
/// releases it (so does the kernel when the process dies), and nothing on
/// that path can fail or panic.
pub struct FileLock {
    _file: File,
}

/// Names (networks) become file names: keep [A-Za-z0-9._-], escape the rest.
pub fn file_safe(name: &str) -> String {
    let mut out = String::new();
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// The name a `file_safe` stem stands for.
pub fn unescape_name(stem: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut bytes = stem.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex: String = bytes.by_ref().take(2).map(char::from).collect();
            out.push(u8::from_str_radix(&hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// Open `path` for reading and writing (created 0600, never through a
/// symlink).
pub fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(FILE_MODE)
        .custom_flags(FLAGS)
        .open(path)
}

/// Take the exclusive lock on an open file, polling every `poll` until `timeout`.
pub fn lock_open(file: &File, timeout: Duration, poll: Duration) -> Result<(), LockError> {
    let deadline = Instant::now() + timeout;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(poll),
            Err(TryLockError::WouldBlock) => return Err(LockError::Busy(timeout)),
            Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
    }
}

/// Take the exclusive lock on `path`, polling every `poll` until `timeout`.
pub fn lock(path: &Path, timeout: Duration, poll: Duration) -> Result<FileLock, LockError> {
    let file = open_rw(path).map_err(LockError::Io)?;
    lock_open(&file, timeout, poll)?;
    Ok(FileLock { _file: file })
}

/// A temp file name beside `path` that another process cannot predict.
fn temp_path(path: &Path) -> PathBuf {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    path.with_file_name(format!(".{name}.{:016x}.tmp", h.finish()))
}

/// Replace `path` with `bytes` so that no crash, not even the machine's,
/// leaves a torn file: a fresh temp file (`O_EXCL`, never through a
/// symlink), fdatasync, then `swap_in`. The directory is not synced: an OS
/// crash may roll the swap back, leaving the old file whole. For what must
/// outlive the boot (`railcnictl install`); state files use `replace_atomic`.
/// The temp file is removed on any failure (a killed writer's is swept by
/// the next holder of the lock, see `sweep_temps`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_mode(path, bytes, FILE_MODE)
}

/// `write_atomic` with the file's mode (e.g. 0755 for a binary, so it is
/// never in place without its execute bits).
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, bytes, mode, true)
}

/// Replace `path` atomically for every reader and for a killed writer
/// (old or new file), without waiting for the disk: an OS crash may leave
/// the new name empty or torn. For files written for one boot, whose
/// readers set aside one an OS crash damaged (see `written_before_boot`).
pub fn replace_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, FILE_MODE, false)
}

fn replace(path: &Path, bytes: &[u8], mode: u32, crash_safe: bool) -> io::Result<()> {
    let tmp = temp_path(path);
    let written = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(mode)
        .custom_flags(FLAGS)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            if crash_safe {
                f.sync_data()?;
            }
            Ok(())
        })
        .and_then(|()| swap_in(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

/// Put the file at `tmp` in place of `path`, atomically for every reader.
/// Over an existing file the two are exchanged and the old one, now at
/// `tmp`, unlinked: a rename over an existing file makes ext4 start writing
/// the new one out at once (`auto_da_alloc`), about 0.15 ms here and disk
/// I/O still in flight during the namespace move that follows, which then
/// waits longer for its RCU grace period. An exchange starts no I/O. A
/// missing target, or a filesystem without `RENAME_EXCHANGE`, takes a plain
/// rename. A writer killed between exchange and unlink leaves a temp file,
/// swept like any other.
fn swap_in(tmp: &Path, path: &Path) -> io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::errno::Errno;
        use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
        match renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE) {
            Ok(()) => {
                let _ = fs::remove_file(tmp);
                return Ok(());
            }
            // No target yet, or no exchange on this filesystem.
            Err(Errno::ENOENT | Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    fs::rename(tmp, path)
}

/// Keep an unreadable state file that an OS crash left (see
/// `written_before_boot`) beside itself as `<name>.crashed`, out of every
/// reader's way; returns where it went.
pub fn set_aside(path: &Path) -> io::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".crashed");
    let aside = PathBuf::from(aside);
    fs::rename(path, &aside)?;
    Ok(aside)
}

/// Was the file at `path` last written before this boot (by its mtime
/// against the boot time in `/proc/stat`)? `false` when either is unknown.
pub fn written_before_boot(path: &Path) -> bool {
    let Ok(modified) = fs::symlink_metadata(path).and_then(|m| m.modified()) else {
        return false;
    };
    boot_time().is_some_and(|boot| modified < boot)
}

/// The wall-clock time this boot began (`btime` in `/proc/stat`).
fn boot_time() -> Option<std::time::SystemTime> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let secs = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Remove the temp files a killed writer of `path` left behind. Call it
/// holding the lock that guards `path`: no live writer owns them then.
pub fn sweep_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let n = entry.file_name();
        let n = n.to_string_lossy();
        if n.starts_with(&prefix) && n.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Remove a file; a missing one is fine.
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_is_private_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("leases.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(read(&p).unwrap().as_deref(), Some(&b"two"[..]));
        let mode = fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, FILE_MODE);
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temp file left behind");
    }

    #[test]
    fn a_file_of_an_earlier_boot_is_known_by_its_mtime() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("record.json");
        replace_atomic(&p, b"{}").unwrap();
        assert!(!written_before_boot(&p), "written just now");
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
        assert!(written_before_boot(&p));
        assert!(!written_before_boot(&t.path().join("missing")));
    }

    #[test]
    fn a_killed_writers_temps_are_swept() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("leases.json");
        let stale = t.path().join(".leases.json.0123456789abcdef.tmp");
        fs::write(&stale, "half").unwrap();
        let other = t.path().join(".other.json.0123456789abcdef.tmp");
        fs::write(&other, "not ours").unwrap();
        sweep_temps(&p);
        assert!(!stale.exists());
        assert!(other.exists(), "another file's temp is not touched");
    }

    #[test]
    fn temp_names_are_not_predictable() {
        let p = Path::new("/x/leases.json");
        assert_ne!(temp_path(p), temp_path(p));
    }

    #[test]
    fn reads_and_locks_refuse_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("elsewhere");
        fs::write(&target, "secret").unwrap();
        let link = t.path().join("record.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(read(&link).is_err());
        let lock_link = t.path().join("x.lock");
        std::os::unix::fs::symlink(&target, &lock_link).unwrap();
        assert!(matches!(
            lock(&lock_link, Duration::ZERO, Duration::ZERO),
            Err(LockError::Io(_))
        ));
        assert_eq!(fs::read_to_string(&target).unwrap(), "secret");
        assert_eq!(read(&t.path().join("missing")).unwrap(), None);
    }

    #[test]
    fn a_held_lock_is_busy_until_dropped() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lock");
        let held = lock(&p, Duration::ZERO, Duration::ZERO).unwrap();
        let again = lock(&p, Duration::from_millis(30), Duration::from_millis(5));
        assert!(matches!(again, Err(LockError::Busy(_))));
        drop(held);
        assert!(lock(&p, Duration::ZERO, Duration::ZERO).is_ok());
    }
}
