//! Where railcni reads and writes on this node, read once from the
//! environment at start-up. Never from a NAD: a NAD is written by a
//! namespace user and must not redirect where root reads or writes.

use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_STATE_DIR: &str = "/var/lib/cni/railcni";
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";
pub const DEFAULT_NODE_CONFIG: &str = "/etc/cni/railcni/node.json";
/// The node file's name in the state dir, where a CNI caller that sees only
/// `/opt/cni/bin`, `/var/lib/cni` and `/var/run/netns` of the host (the
/// dra-driver-sriov container) finds it; `railcnictl install` writes both.
pub const NODE_CONFIG_IN_STATE_DIR: &str = "node.json";
pub const DEFAULT_DEVINFO_DIR: &str = "/var/run/k8s.cni.cncf.io/devinfo";
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
pub const DEFAULT_LOG_DIR: &str = "/var/log/railcni";
pub const DEFAULT_PROC_SYS_NET: &str = "/proc/sys/net";
pub const DEFAULT_CONFIGFS: &str = "/sys/kernel/config";
pub const DEFAULT_MACHINE_ID: &str = "/etc/machine-id";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `RAILCNI_STATE_DIR`: attachment records, locks, IPAM leases.
    pub state_dir: PathBuf,
    /// `RAILCNI_SYSFS_ROOT`: where sysfs is read.
    pub sysfs_root: PathBuf,
    /// The node-local IPAM file: `RAILCNI_NODE_CONFIG`, else
    /// `/etc/cni/railcni/node.json` when it exists, else `node.json` in the
    /// state dir (`node_config_path`).
    pub node_config: PathBuf,
    /// `RAILCNI_NODE_NAME`: overrides the node file's `nodeName`.
    pub node_name: Option<String>,
    /// `NODE_NAME` (the downward API's `spec.nodeName` in a driver's or
    /// installer's pod): the node's name when the node file names none.
    pub kube_node_name: Option<String>,
    /// `RAILCNI_LOCK_TIMEOUT_MS`: how long to wait for a VF or lease lock.
    pub lock_timeout: Duration,
    /// Where device-info files may go (`RAILCNI_DEVINFO_DIR` in a test build).
    pub devinfo_dir: PathBuf,
    /// Where this boot's id is read (`RAILCNI_BOOT_ID` in a test build): a
    /// shipped binary always reads the kernel's, since gc calls a holder of
    /// another boot provably gone.
    pub boot_id_path: PathBuf,
    /// `RAILCNI_LOG_DIR`: the only directory a NAD's `logFile` may name.
    pub log_dir: PathBuf,
    /// `RAILCNI_REBIND_TIMEOUT_MS`: how long an InfiniBand VF's netdev may
    /// take to come back after its driver is rebound.
    pub rebind_timeout: Duration,
    /// `RAILCNI_STATS=off`: do not count calls for `railcnictl metrics`.
    pub stats: bool,
    /// `RAILCNI_PROC_SYS_NET`: where per-interface sysctls are written
    /// (`/proc/sys/net`). A container's `/proc/sys` is read-only, so the
    /// DaemonSet's agent mounts the host's `/proc/sys/net` elsewhere and
    /// points here: what it names is the namespace of the thread that opens
    /// it, so a pod's too.
    pub proc_sys_net: PathBuf,
    /// `RAILCNI_CONFIGFS_ROOT`: where configfs is (rdma_cm's default ToS).
    pub configfs_root: PathBuf,
    /// `RAILCNI_MACHINE_ID_FILE`: where this machine's id is read, to
    /// compare with the node file's stamp (a driver's container mounts the
    /// host's `/etc/machine-id` and points here).
    pub machine_id_path: PathBuf,
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
        let state_dir = path("RAILCNI_STATE_DIR", DEFAULT_STATE_DIR);
        let (devinfo_dir, boot_id_path) = test_switches(&get);
        Settings {
            node_config: node_config_path(get("RAILCNI_NODE_CONFIG"), &state_dir, |p| p.exists()),
            state_dir,
            sysfs_root: path("RAILCNI_SYSFS_ROOT", DEFAULT_SYSFS_ROOT),
            node_name: get("RAILCNI_NODE_NAME"),
            kube_node_name: get("NODE_NAME"),
            lock_timeout: get("RAILCNI_LOCK_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .map_or(DEFAULT_LOCK_TIMEOUT, Duration::from_millis),
            devinfo_dir: devinfo_dir.unwrap_or_else(|| DEFAULT_DEVINFO_DIR.into()),
            boot_id_path: boot_id_path.unwrap_or_else(|| DEFAULT_BOOT_ID.into()),
            log_dir: path("RAILCNI_LOG_DIR", DEFAULT_LOG_DIR),
            rebind_timeout: get("RAILCNI_REBIND_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .map_or(Duration::from_secs(10), Duration::from_millis),
            stats: get("RAILCNI_STATS").as_deref() != Some("off"),
            proc_sys_net: path("RAILCNI_PROC_SYS_NET", DEFAULT_PROC_SYS_NET),
            configfs_root: path("RAILCNI_CONFIGFS_ROOT", DEFAULT_CONFIGFS),
            machine_id_path: path("RAILCNI_MACHINE_ID_FILE", DEFAULT_MACHINE_ID),
            boot_id_read: std::sync::OnceLock::new(),
        }
    }

    /// This boot's id, if it can be read.
    pub fn boot_id(&self) -> Option<String> {
        let read = || crate::liveness::boot_id(&self.boot_id_path);
        self.boot_id_read.get_or_init(read).clone()
    }

    /// Where a NAD's `logFile` may go: `RAILCNI_LOG_DIR` (a bare file name
    /// lands there), or `log/` in the state dir, which a caller that sees
    /// only the host's `/var/lib/cni` (dra-driver-sriov) keeps on the host.
    pub fn log_dirs(&self) -> [PathBuf; 2] {
        [self.log_dir.clone(), self.state_dir.join("log")]
    }

    /// The embedded IPAM's lease files.
    pub fn ipam_dir(&self) -> PathBuf {
        self.state_dir.join("ipam")
    }
}

/// The device-info dir and boot-id file the tests point elsewhere; `None`
/// (the defaults) in a build without the `test-switches` feature, whose
/// binaries hold not even the variables' names.
#[cfg(feature = "test-switches")]
fn test_switches(get: &impl Fn(&str) -> Option<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    (
        get("RAILCNI_DEVINFO_DIR").map(PathBuf::from),
        get("RAILCNI_BOOT_ID").map(PathBuf::from),
    )
}

#[cfg(not(feature = "test-switches"))]
fn test_switches(_: &impl Fn(&str) -> Option<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    (None, None)
}

/// Where the node file is read: the variable if set; else the host's
/// `/etc/cni/railcni/node.json` if it is there; else the copy in the state
/// dir, which a caller in a container without the host's `/etc` still sees.
pub fn node_config_path(
    explicit: Option<String>,
    state_dir: &std::path::Path,
    exists: impl Fn(&std::path::Path) -> bool,
) -> PathBuf {
    if let Some(p) = explicit {
        return PathBuf::from(p);
    }
    let etc = PathBuf::from(DEFAULT_NODE_CONFIG);
    if exists(&etc) {
        return etc;
    }
    state_dir.join(NODE_CONFIG_IN_STATE_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let d = Settings::default();
        assert_eq!(d.state_dir, PathBuf::from(DEFAULT_STATE_DIR));
        assert_eq!(d.lock_timeout, DEFAULT_LOCK_TIMEOUT);
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
    fn the_node_file_is_found_in_the_documented_order() {
        let state = std::path::Path::new("/var/lib/cni/railcni");
        let explicit = node_config_path(Some("/x/n.json".into()), state, |_| true);
        assert_eq!(explicit, PathBuf::from("/x/n.json"));
        let etc = node_config_path(None, state, |p| {
            p == std::path::Path::new(DEFAULT_NODE_CONFIG)
        });
        assert_eq!(etc, PathBuf::from(DEFAULT_NODE_CONFIG));
        // A container without the host's /etc (dra-driver-sriov's).
        let in_state = node_config_path(None, state, |_| false);
        assert_eq!(in_state, PathBuf::from("/var/lib/cni/railcni/node.json"));
        let s = Settings::from_lookup(|k| match k {
            "RAILCNI_STATE_DIR" => Some("/nonexistent/state".into()),
            "NODE_NAME" => Some("gpu-7".into()),
            _ => None,
        });
        if !std::path::Path::new(DEFAULT_NODE_CONFIG).exists() {
            assert_eq!(s.node_config, PathBuf::from("/nonexistent/state/node.json"));
        }
        assert_eq!(s.kube_node_name.as_deref(), Some("gpu-7"));
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
