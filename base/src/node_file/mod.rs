//! `/etc/cni/railcni/node.json`: this node's prefix per network and the
//! rules its administrator set for each rail. One type (`types`), written by
//! the planner and the installer, read by the plugin's policy, the IPAM
//! (which sees `NodeFile::prefixes` only) and the doctor. `v1` is the file format,
//! converted both ways, so renaming a field in memory never changes a
//! file; `machine` is the stamp that ties a file to the machine it was
//! written for.

mod machine;
mod types;
mod v1;

use std::path::Path;

pub use machine::{machine_id, Stamp};
pub use types::{
    Allow, NodeFile, NodeFileError, NodeNetwork, NodePrefix, NodePrefixes, RailQos, RailRules,
    VERSION,
};

impl NodeFile {
    /// The file's text: version 1 (or none), else named as newer.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        v1::parse(bytes)
    }

    /// The file as this build writes it (pretty JSON, one trailing newline).
    pub fn to_text(&self) -> String {
        v1::to_text(self)
    }

    /// A missing file is empty.
    pub fn load(path: &Path) -> Result<Self, NodeFileError> {
        match std::fs::read(path) {
            Ok(bytes) => NodeFile::parse(&bytes).map_err(|why| NodeFileError::Invalid {
                path: path.to_path_buf(),
                why,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(NodeFile::default()),
            Err(error) => Err(NodeFileError::Unreadable {
                path: path.to_path_buf(),
                error,
            }),
        }
    }
}
