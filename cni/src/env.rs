//! The `CNI_*` environment of one invocation, validated per command.

use std::path::{Path, PathBuf};

use crate::args::CniArgs;
use crate::error::{Error, Result};
use crate::version::{Unsupported, Version};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Add,
    Del,
    Check,
    Version,
    Status,
    Gc,
}

impl Command {
    /// Refuse a command the config's version does not have: CHECK came in
    /// 0.4.0, GC and STATUS in 1.1.0.
    pub fn gate(self, version: Version) -> std::result::Result<(), Unsupported> {
        match self {
            Command::Check => version.require(Version::V0_4, "CHECK"),
            Command::Gc => version.require(Version::V1_1, "GC"),
            Command::Status => version.require(Version::V1_1, "STATUS"),
            Command::Add | Command::Del | Command::Version => Ok(()),
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "ADD" => Command::Add,
            "DEL" => Command::Del,
            "CHECK" => Command::Check,
            "VERSION" => Command::Version,
            "STATUS" => Command::Status,
            "GC" => Command::Gc,
            "" => {
                return Err(Error::InvalidEnv(
                    "CNI_COMMAND is not set; a runtime must set it to ADD, DEL, CHECK, VERSION, STATUS or GC".into(),
                ))
            }
            other => {
                return Err(Error::InvalidEnv(format!(
                    "CNI_COMMAND {other:?} is not one of ADD, DEL, CHECK, VERSION, STATUS, GC"
                )))
            }
        })
    }
}

/// Identity of a network namespace file: its nsfs device and inode (a
/// path can be reused by another namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NsId {
    pub dev: u64,
    pub ino: u64,
}

impl NsId {
    /// `None` when the path does not exist (or cannot be read).
    pub fn of(path: &Path) -> Option<NsId> {
        let m = std::fs::metadata(path).ok()?;
        Some(NsId {
            dev: std::os::unix::fs::MetadataExt::dev(&m),
            ino: std::os::unix::fs::MetadataExt::ino(&m),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    pub command: Command,
    pub container_id: String,
    /// Empty on a DEL whose namespace is already gone.
    pub netns: Option<PathBuf>,
    pub ifname: String,
    pub args: CniArgs,
    pub path: Vec<PathBuf>,
}

impl Env {
    /// Read and validate from a lookup function (the process env in production).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let command = Command::parse(&get("CNI_COMMAND").unwrap_or_default())?;
        let needs_attachment = matches!(command, Command::Add | Command::Del | Command::Check);
        let required = |name: &str| -> Result<String> {
            match get(name).filter(|v| !v.is_empty()) {
                Some(v) => Ok(v),
                None if needs_attachment => Err(Error::InvalidEnv(format!(
                    "{name} is required for this command"
                ))),
                None => Ok(String::new()),
            }
        };
        let container_id = required("CNI_CONTAINERID")?;
        if needs_attachment {
            validate_container_id(&container_id)?;
        }
        let ifname = required("CNI_IFNAME")?;
        if needs_attachment {
            validate_ifname(&ifname)?;
        }
        let netns = get("CNI_NETNS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if netns.is_none() && matches!(command, Command::Add | Command::Check) {
            return Err(Error::InvalidEnv(
                "CNI_NETNS is required for this command".into(),
            ));
        }
        let args = CniArgs::parse(&get("CNI_ARGS").unwrap_or_default())
            .map_err(|e| Error::InvalidEnv(e.to_string()))?;
        let path = get("CNI_PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect();
        Ok(Env {
            command,
            container_id,
            netns,
            ifname,
            args,
            path,
        })
    }

    pub fn from_process() -> Result<Self> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }
}

/// The spec's container ID grammar; it also keeps IDs safe inside file names.
fn validate_container_id(id: &str) -> Result<()> {
    let ok_first = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_rest = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok_first && ok_rest {
        Ok(())
    } else {
        Err(Error::InvalidEnv(format!(
            "CNI_CONTAINERID {id:?} must start with a letter or digit and hold only letters, digits, '_', '.', '-'"
        )))
    }
}

/// The kernel's interface name rules (dev_valid_name), and no '%': the
/// kernel reads a name holding it as a template (`rail%d` becomes `rail0`),
/// so the interface would never be found under the name asked for.
pub fn validate_ifname(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.len() > 15
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| matches!(c, '/' | ':' | '%') || c.is_whitespace());
    if bad {
        return Err(Error::InvalidEnv(format!(
            "CNI_IFNAME {name:?} is not a valid interface name (1-15 chars, no '/', ':', '%' or spaces)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reply;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<Env> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::from_lookup(|k| map.get(k).cloned())
    }

    const ADD: &[(&str, &str)] = &[
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "c0ffee"),
        ("CNI_NETNS", "/var/run/netns/pod"),
        ("CNI_IFNAME", "net1"),
        ("CNI_PATH", "/opt/cni/bin:/usr/lib/cni"),
    ];

    #[test]
    fn reads_a_full_add() {
        let e = env(ADD).unwrap();
        assert_eq!(e.command, Command::Add);
        assert_eq!(e.ifname, "net1");
        assert_eq!(e.path.len(), 2);
    }

    #[test]
    fn missing_or_bad_values_are_code_4() {
        for drop in ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"] {
            let pairs: Vec<_> = ADD.iter().copied().filter(|(k, _)| *k != drop).collect();
            assert_eq!(env(&pairs).map_err(|e| e.code()), Err(4), "{drop}");
        }
        let mut bad = ADD.to_vec();
        bad[1] = ("CNI_CONTAINERID", "../../etc");
        assert_eq!(env(&bad).map_err(|e| e.code()), Err(4));
        bad = ADD.to_vec();
        bad[3] = ("CNI_IFNAME", "a-name-that-is-too-long");
        assert_eq!(env(&bad).map_err(|e| e.code()), Err(4));
        bad[3] = ("CNI_IFNAME", "rail%d");
        assert_eq!(env(&bad).map_err(|e| e.code()), Err(4), "a name template");
        assert_eq!(
            env(&[("CNI_COMMAND", "FROB")]).map_err(|e| e.code()),
            Err(4)
        );
    }

    #[test]
    fn del_accepts_an_empty_netns_and_gc_needs_nothing() {
        let pairs: Vec<_> = ADD
            .iter()
            .map(|(k, v)| match *k {
                "CNI_COMMAND" => (*k, "DEL"),
                "CNI_NETNS" => (*k, ""),
                _ => (*k, *v),
            })
            .collect();
        assert_eq!(env(&pairs).unwrap().netns, None);
        assert_eq!(env(&[("CNI_COMMAND", "GC")]).unwrap().command, Command::Gc);
    }
}
