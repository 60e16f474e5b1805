//! Where railcni reads and writes on this node, read once from the
//! environment at start-up. Never from a NAD: a NAD is written by a
//! namespace user and must not redirect where root reads or writes.

use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_STATE_DIR: &str = "/var/lib/cni/railcni";
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";
pub const DEFAULT_NODE_CONFIG: &str = "/etc/cni/railcni/node.json";
pub const DEFAULT_DEVINFO_DIR: &str = "/var/run/k8s.cni.cncf.io/devinfo";
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
pub const DEFAULT_LOG_DIR: &str = "/var/log/railcni";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `RAILCNI_STATE_DIR`: attachment records, locks, IPAM leases.
    pub state_dir: PathBuf,
    /// `RAILCNI_SYSFS_ROOT`: where sysfs is read.
    pub sysfs_root: PathBuf,
    /// `RAILCNI_NODE_CONFIG`: the node-local IPAM file.
    pub node_config: PathBuf,
    /// `RAILCNI_NODE_NAME`: overrides the node file's `nodeName`.
    pub node_name: Option<String>,
    /// `RAILCNI_LOCK_TIMEOUT_MS`: how long to wait for a VF or lease lock.
    pub lock_timeout: Duration,
    /// `RAILCNI_FAKE_HARDWARE` (tests only): the recording stand-in for the
    /// PF and RDMA netlink; unset means the kernel.
    pub fake_hardware: Option<PathBuf>,
    /// `RAILCNI_DEVINFO_DIR` (tests only): where device-info files may go.
    pub devinfo_dir: PathBuf,
    /// `RAILCNI_BOOT_ID` (tests only): where this boot's id is read.
    pub boot_id_path: PathBuf,
    /// `RAILCNI_LOG_DIR`: the only directory a NAD's `logFile` may name.
    pub log_dir: PathBuf,
    /// `RAILCNI_REBIND_TIMEOUT_MS`: how long an InfiniBand VF's netdev may
    /// take to come back after its driver is rebound.
    pub rebind_timeout: Duration,
    /// `RAILCNI_STATS=off`: do not count calls for `railcnictl metrics`.
    pub stats: bool,
    /// This boot's id once read (`boot_id`): a call reads the file once,
    /// not per record. Leave it to `Default`/`from_env`.
    pub boot_id_read: std::sync::OnceLock<Option<String>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_lookup(|_| None)
    }
}

impl Settings {
    pub fn from_env() -> Self {
        Settings::from_lookup(|k| std::env::var(k).ok())
    }

    /// Empty values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| get(k).filter(|v| !v.is_empty());
        let path = |k: &str, default: &str| PathBuf::from(get(k).unwrap_or_else(|| default.into()));
        Settings {
            state_dir: path("RAILCNI_STATE_DIR", DEFAULT_STATE_DIR),
            sysfs_root: path("RAILCNI_SYSFS_ROOT", DEFAULT_SYSFS_ROOT),
            node_config: path("RAILCNI_NODE_CONFIG", DEFAULT_NODE_CONFIG),
            node_name: get("RAILCNI_NODE_NAME"),
            lock_timeout: get("RAILCNI_LOCK_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .map_or(DEFAULT_LOCK_TIMEOUT, Duration::from_millis),
            fake_hardware: get("RAILCNI_FAKE_HARDWARE").map(PathBuf::from),
            devinfo_dir: path("RAILCNI_DEVINFO_DIR", DEFAULT_DEVINFO_DIR),
            boot_id_path: path("RAILCNI_BOOT_ID", DEFAULT_BOOT_ID),
            log_dir: path("RAILCNI_LOG_DIR", DEFAULT_LOG_DIR),
            rebind_timeout: get("RAILCNI_REBIND_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .map_or(Duration::from_secs(10), Duration::from_millis),
            stats: get("RAILCNI_STATS").as_deref() != Some("off"),
            boot_id_read: std::sync::OnceLock::new(),
        }
    }

    /// This boot's id, if it can be read.
    pub fn boot_id(&self) -> Option<String> {
        let read = || crate::liveness::boot_id(&self.boot_id_path);
        self.boot_id_read.get_or_init(read).clone()
    }

    /// The embedded IPAM's lease files.
    pub fn ipam_dir(&self) -> PathBuf {
        self.state_dir.join("ipam")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let d = Settings::default();
        assert_eq!(d.state_dir, PathBuf::from(DEFAULT_STATE_DIR));
        assert_eq!(d.lock_timeout, DEFAULT_LOCK_TIMEOUT);
        assert_eq!(d.fake_hardware, None);
        let s = Settings::from_lookup(|k| match k {
            "RAILCNI_STATE_DIR" => Some("/tmp/s".into()),
            "RAILCNI_LOCK_TIMEOUT_MS" => Some("250".into()),
            "RAILCNI_NODE_NAME" => Some(String::new()),
            _ => None,
        });
        assert_eq!(s.ipam_dir(), PathBuf::from("/tmp/s/ipam"));
        assert_eq!(s.lock_timeout, Duration::from_millis(250));
        assert_eq!(s.node_name, None, "empty means unset");
    }

    #[test]
    fn the_boot_id_is_read_once_per_call() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("boot_id");
        std::fs::write(&path, "boot-a\n").unwrap();
        let s = Settings {
            boot_id_path: path.clone(),
            ..Settings::default()
        };
        assert_eq!(s.boot_id().as_deref(), Some("boot-a"));
        std::fs::write(&path, "boot-b\n").unwrap();
        assert_eq!(s.boot_id().as_deref(), Some("boot-a"), "read once");
        let next_call = Settings {
            boot_id_path: path,
            ..Settings::default()
        };
        assert_eq!(next_call.boot_id().as_deref(), Some("boot-b"));
    }
}
