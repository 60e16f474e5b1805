//! The stamp that ties a node file to one machine: the installer writes
//! the machine's id (`/etc/machine-id`, what systemd and the kubelet call
//! the machine) into the file it writes, and ADD refuses a file stamped
//! for another machine, such as one on a cloned image or a copied disk.

use std::path::Path;

use super::types::{NodeFile, NodeFileError};
use crate::settings::Settings;

/// This machine's id from `path`, when the file holds one (not empty, not
/// systemd's `uninitialized` of a first boot): trimmed and in lower case,
/// as the installer stamps it and ADD compares it.
pub fn machine_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim().to_ascii_lowercase();
    (!id.is_empty() && id != "uninitialized").then_some(id)
}

/// Whether a stamp names this machine: compared as the machine-id file is
/// read (trimmed; machine ids are hex, so case does not matter).
pub fn same_machine(this: &str, stamped: &str) -> bool {
    this.trim().eq_ignore_ascii_case(stamped.trim())
}

/// What a node file's stamp says about this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stamp {
    /// Written for this machine.
    Ours,
    /// No stamp: written by a release before it, or by hand.
    Unstamped,
    /// Stamped, but this machine's id cannot be read to compare.
    Unverified { stamped: String },
}

impl NodeFile {
    /// The file's stamp against this machine's id (read from `id_file`);
    /// `Err` when it names another machine. `path`: the node file, for the
    /// error.
    pub fn stamp(&self, path: &Path, id_file: &Path) -> Result<Stamp, NodeFileError> {
        let Some(stamped) = &self.machine_id else {
            return Ok(Stamp::Unstamped);
        };
        match machine_id(id_file) {
            Some(this) if same_machine(&this, stamped) => Ok(Stamp::Ours),
            Some(this) => Err(NodeFileError::OtherMachine {
                path: path.to_path_buf(),
                stamped: stamped.clone(),
                this,
                id_file: id_file.to_path_buf(),
            }),
            None => Ok(Stamp::Unverified {
                stamped: stamped.clone(),
            }),
        }
    }
}

impl NodeFile {
    /// ADD's rule: refused when stamped for another machine; a file
    /// without a stamp, or one this machine cannot compare, is logged.
    pub fn ensure_ours(&self, settings: &Settings) -> Result<(), NodeFileError> {
        let path = &settings.node_config;
        if self.networks.is_empty() {
            return Ok(()); // no file: nothing in it to hand out
        }
        match self.stamp(path, &settings.machine_id_path)? {
            Stamp::Ours => {}
            Stamp::Unstamped => crate::log_warn!(
                "node file {} names no machine (machineId): it cannot be told from another node's copy; \
                 `railcnictl install` writes it stamped",
                path.display()
            ),
            Stamp::Unverified { stamped } => crate::log_warn!(
                "node file {} is stamped for machine {stamped}, but {} gives no machine id to compare; \
                 mount the host's /etc/machine-id there or set RAILCNI_MACHINE_ID_FILE",
                path.display(),
                settings.machine_id_path.display()
            ),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_stamped_for_another_machine_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let id_file = dir.path().join("machine-id");
        std::fs::write(&id_file, "aaaa1111\n").unwrap();
        let node_file = Path::new("/etc/cni/railcni/node.json");
        let mut file = NodeFile::default();
        assert_eq!(file.stamp(node_file, &id_file).unwrap(), Stamp::Unstamped);
        file.machine_id = Some("aaaa1111".into());
        assert_eq!(file.stamp(node_file, &id_file).unwrap(), Stamp::Ours);
        // As the machine-id file is read: trimmed, any case (#59).
        for stamped in ["aaaa1111\n", " AAAA1111", "AaAa1111\t"] {
            file.machine_id = Some(stamped.into());
            assert_eq!(
                file.stamp(node_file, &id_file).unwrap(),
                Stamp::Ours,
                "{stamped:?}"
            );
        }
        file.machine_id = Some("bbbb2222".into());
        let e = file.stamp(node_file, &id_file).unwrap_err().to_string();
        for part in ["/etc/cni/railcni/node.json", "bbbb2222", "aaaa1111"] {
            assert!(e.contains(part), "{e} lacks {part}");
        }
        std::fs::write(&id_file, "uninitialized\n").unwrap();
        let unverified = file.stamp(node_file, &id_file).unwrap();
        assert!(
            matches!(unverified, Stamp::Unverified { .. }),
            "{unverified:?}"
        );
    }
}
