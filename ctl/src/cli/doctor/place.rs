//! Where the doctor looks: the host's files, the CNI dirs, the sysfs root,
//! and what the node is checked against (its node file, or a plan).

use std::path::{Path, PathBuf};

use base::node_file::NodeFile;
use base::Settings;

/// The doctor's defaults, for a person's run and the agent's alike.
pub(super) const CNI_BIN_DIR: &str = "/opt/cni/bin";
pub(super) const CNI_CONF_DIR: &str = "/etc/cni/net.d";
pub(super) const HOST_ROOT_VAR: &str = "RAILCNI_HOST_ROOT";
pub(super) const HOST_ROOT: &str = "/";

/// The node file at `path`, read and checked.
pub fn read_node_file(path: &Path) -> Result<NodeFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    NodeFile::parse(&bytes).map_err(|e| format!("{} is invalid: {e}", path.display()))
}

/// Where the checks look.
pub struct Where {
    pub settings: Settings,
    pub sysfs: PathBuf,
    pub host_root: PathBuf,
    pub cni_bin_dir: PathBuf,
    pub cni_conf_dir: PathBuf,
    /// What the node is checked against, and where it came from.
    pub expected: Result<NodeFile, String>,
    pub source: String,
    pub node: String,
}

impl Where {
    /// The defaults the agent uses: the node file, the usual CNI dirs.
    pub fn defaults(settings: &Settings) -> Self {
        let host_root =
            std::env::var_os(HOST_ROOT_VAR).map_or_else(|| HOST_ROOT.into(), Into::into);
        Where::new(
            settings,
            None,
            None,
            CNI_BIN_DIR.into(),
            CNI_CONF_DIR.into(),
            host_root,
        )
    }

    pub(super) fn new(
        settings: &Settings,
        plan: Option<&Path>,
        node_file: Option<PathBuf>,
        cni_bin_dir: PathBuf,
        cni_conf_dir: PathBuf,
        host_root: PathBuf,
    ) -> Self {
        let mut settings = settings.clone();
        if let Some(file) = node_file {
            settings.node_config = file;
        }
        let node = NodeFile::load(&settings.node_config)
            .unwrap_or_default()
            .prefixes()
            .node_name(&settings)
            .unwrap_or_else(|| "?".into());
        let (expected, source) = match plan {
            Some(plan) => (
                expected_from_plan(plan, &node),
                format!("plan {}", plan.display()),
            ),
            None => (
                read_node_file(&settings.node_config),
                format!("node file {}", settings.node_config.display()),
            ),
        };
        Where {
            sysfs: settings.sysfs_root.clone(),
            settings,
            host_root,
            cni_bin_dir,
            cni_conf_dir,
            expected,
            source,
            node,
        }
    }

    /// A file of the host, under `--host-root`.
    pub fn host_path(&self, path: &str) -> PathBuf {
        self.host_root.join(path.trim_start_matches('/'))
    }
}

/// This node's node file as the plan would make it.
fn expected_from_plan(plan: &Path, node: &str) -> Result<NodeFile, String> {
    let text = std::fs::read_to_string(plan)
        .map_err(|e| format!("cannot read {}: {e}", plan.display()))?;
    let resolved = crate::fabric::Plan::parse(&text)
        .and_then(crate::fabric::Plan::resolve)
        .map_err(|e| e.to_string())?;
    resolved.node_file(node).map_err(|e| e.to_string())
}
