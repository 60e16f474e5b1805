//! A recording stand-in for the hardware, for tests on machines without
//! SR-IOV or RDMA: VF state and RDMA mode live in a JSON file, and every
//! change is appended to its `calls` list.

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Hardware, LinkState, Rate, RdmaNetnsMode, VfSettings, Vlan, VlanProto};
use crate::error::{Error, Result};
use crate::net::Mac;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FakeState {
    /// "<pf>/<vf>" → current attributes.
    #[serde(default)]
    pub vfs: BTreeMap<String, VfSettings>,
    /// "shared" or "exclusive"; absent: RDMA netlink unavailable.
    #[serde(default)]
    pub rdma_mode: Option<String>,
    /// RDMA device name → namespace it was moved to ("fd:<inode>").
    #[serde(default)]
    pub rdma_devices: BTreeMap<String, String>,
    #[serde(default)]
    pub calls: Vec<String>,
    /// VF settings the fake driver refuses: field (as `vfs` spells it,
    /// `linkState`) → errno name (`EOPNOTSUPP`), as igb refuses some.
    #[serde(default)]
    pub refuse: BTreeMap<String, String>,
}

pub struct Recorder {
    path: PathBuf,
}

/// What a fresh VF reports: no admin MAC, no VLAN, spoof check on.
pub(crate) fn factory_default() -> VfSettings {
    VfSettings {
        ib_guid: None,
        mac: Some(Mac([0; 6])),
        vlan: Some(Vlan {
            id: 0,
            qos: 0,
            proto: VlanProto::Dot1Q,
        }),
        spoofchk: Some(true),
        trust: Some(false),
        link_state: Some(LinkState::Auto),
        rate: Some(Rate {
            min_mbps: 0,
            max_mbps: 0,
        }),
    }
}

impl Recorder {
    pub fn new(path: PathBuf) -> Self {
        Recorder { path }
    }

    fn load(&self) -> Result<FakeState> {
        match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                Error::internal(format!("fake hardware {}: {e}", self.path.display()))
            }),
            Err(_) => Ok(FakeState::default()),
        }
    }

    fn save(&self, s: &FakeState) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(s).map_err(|e| Error::internal(e.to_string()))?;
        std::fs::write(&self.path, bytes)
            .map_err(|e| Error::internal(format!("fake hardware {}: {e}", self.path.display())))
    }
}

fn errno_named(name: &str) -> Option<nix::errno::Errno> {
    use nix::errno::Errno;
    [
        Errno::EOPNOTSUPP,
        Errno::EPROTONOSUPPORT,
        Errno::EINVAL,
        Errno::EBUSY,
        Errno::EADDRNOTAVAIL,
    ]
    .into_iter()
    .find(|e| format!("{e:?}") == name)
}

impl Hardware for Recorder {
    fn vf_state(&self, pf: &str, vf: u32) -> Result<VfSettings> {
        Ok(self
            .load()?
            .vfs
            .get(&format!("{pf}/{vf}"))
            .cloned()
            .unwrap_or_else(factory_default))
    }

    fn set_vf(&self, pf: &str, vf: u32, s: &VfSettings) -> Result<()> {
        let mut state = self.load()?;
        let asked = serde_json::to_value(s).unwrap_or_default();
        let refused = asked
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .find_map(|k| state.refuse.get(k));
        if let Some(name) = refused {
            let errno = errno_named(name)
                .ok_or_else(|| Error::internal(format!("fake hardware: unknown errno {name}")))?;
            return Err(Error::Kernel {
                what: format!("set VF {vf} on PF {pf}"),
                errno,
            });
        }
        let entry = state
            .vfs
            .entry(format!("{pf}/{vf}"))
            .or_insert_with(factory_default);
        entry.overlay(s);
        let shown = serde_json::to_string(s).unwrap_or_default();
        state.calls.push(format!("set_vf {pf} {vf} {shown}"));
        self.save(&state)
    }

    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode> {
        match self.load()?.rdma_mode.as_deref() {
            Some("exclusive") => Ok(RdmaNetnsMode::Exclusive),
            Some("shared") => Ok(RdmaNetnsMode::Shared),
            _ => Err(Error::Netlink(
                "query the RDMA netns mode: Protocol not supported (is ib_core loaded?)".into(),
            )),
        }
    }

    fn move_rdma_device(&self, name: &str, netns: BorrowedFd<'_>) -> Result<()> {
        let mut state = self.load()?;
        let ns = nix::sys::stat::fstat(netns)
            .map(|st| format!("ns:{}", st.st_ino))
            .map_err(|e| Error::Netlink(format!("move RDMA device {name}: bad netns fd: {e}")))?;
        state.rdma_devices.insert(name.to_string(), ns.clone());
        state.calls.push(format!("move_rdma {name} {ns}"));
        self.save(&state)
    }
}
