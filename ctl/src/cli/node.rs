//! This node's railcni state, read once for a day-2 command.

use base::node_file::NodeFile;
use base::Settings;
use railcni_ipam::StoreView;

use crate::cli::outcome::Usage;
use railcni::state::{AttachmentStore, Record};

pub struct NodeState {
    pub node: String,
    /// The node file in use (empty when there is none or it does not read).
    pub node_file: NodeFile,
    pub records: Vec<Record>,
    pub stores: Vec<StoreView>,
    pub boot: Option<String>,
}

impl NodeState {
    pub fn load(settings: &Settings) -> Result<Self, Usage> {
        let records = AttachmentStore::new(settings).list().map_err(|e| {
            Usage(format!(
                "cannot read the attachment records under {} ({e}); is RAILCNI_STATE_DIR right?",
                settings.state_dir.display()
            ))
        })?;
        let node_file = NodeFile::load(&settings.node_config).unwrap_or_default();
        let node = (node_file.prefixes().node_name(settings)).unwrap_or_else(|| "?".into());
        Ok(NodeState {
            node,
            node_file,
            records,
            stores: railcni_ipam::stores(settings),
            boot: settings.boot_id(),
        })
    }

    pub fn alive(&self, record: &Record) -> bool {
        record.netns_alive(self.boot.as_deref())
    }

    /// A pod's records, as `pod_records`, or the usage error naming what
    /// was asked for when it has none (`inspect`, `probe`, `nccl-env`).
    pub fn pod_records_of(&self, target: &str) -> Result<Vec<&Record>, Usage> {
        let records = self.pod_records(target);
        if records.is_empty() {
            return Err(Usage(format!(
                "no railcni attachment has netns or container ID {target:?}; `railcnictl status` lists them"
            )));
        }
        Ok(records)
    }

    /// The records of one pod, named by its netns path or its container ID,
    /// in rail order (`net1`, `net2`, … `net10`).
    pub fn pod_records(&self, target: &str) -> Vec<&Record> {
        let mut found: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.container_id == target || r.netns() == Some(target))
            .collect();
        found.sort_by_key(|r| rail_order(&r.ifname));
        found
    }
}

/// `net2` before `net10`; other names after, by name.
pub fn rail_order(ifname: &str) -> (u32, String) {
    let n = ifname
        .strip_prefix("net")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u32::MAX);
    (n, ifname.to_string())
}
