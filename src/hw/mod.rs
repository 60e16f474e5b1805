//! What railcni does to hardware that this VM cannot reach: VF settings on
//! the PF (`IFLA_VFINFO_LIST`) and RDMA netlink. One small interface,
//! `Hardware`, with the kernel implementation and a recording fake that
//! tests select with `RAILCNI_FAKE_HARDWARE=<state file>`. The fake is
//! compiled in only with the `fake-hardware` feature (tests turn it on;
//! the shipped binaries are built without it), so a stray variable on a
//! node cannot switch a real plugin to it.

#[cfg(any(test, feature = "fake-hardware"))]
pub mod fake;
pub mod guid;
pub mod kernel;
pub mod rdma;
pub mod vf_settings;

use std::os::fd::BorrowedFd;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::net::Mac;
pub use guid::Guid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VlanProto {
    #[serde(rename = "802.1q")]
    Dot1Q,
    #[serde(rename = "802.1ad")]
    Dot1Ad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Auto,
    Enable,
    Disable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vlan {
    pub id: u16,
    pub qos: u8,
    pub proto: VlanProto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    pub min_mbps: u32,
    pub max_mbps: u32,
}

/// VF attributes on the PF. As a request: only the fields the config sets.
/// As saved state: the original values of exactly those fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VfSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Mac>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<Vlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoofchk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_state: Option<LinkState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// InfiniBand VFs: the node and port GUID (set to the same value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_guid: Option<Guid>,
}

impl VfSettings {
    pub fn is_empty(&self) -> bool {
        self == &VfSettings::default()
    }

    /// The NAD field names this holds values for (sriov-cni's words).
    pub fn field_names(&self) -> Vec<String> {
        [
            ("mac", self.mac.is_some()),
            ("vlan", self.vlan.is_some()),
            ("spoofchk", self.spoofchk.is_some()),
            ("trust", self.trust.is_some()),
            ("link_state", self.link_state.is_some()),
            ("rate", self.rate.is_some()),
            ("guid", self.ib_guid.is_some()),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| name.to_string())
        .collect()
    }

    /// Take every field `other` sets (what a PF holds after `other` was set).
    pub fn overlay(&mut self, other: &VfSettings) {
        self.mac = other.mac.or(self.mac);
        self.vlan = other.vlan.or(self.vlan);
        self.spoofchk = other.spoofchk.or(self.spoofchk);
        self.trust = other.trust.or(self.trust);
        self.link_state = other.link_state.or(self.link_state);
        self.rate = other.rate.or(self.rate);
        self.ib_guid = other.ib_guid.or(self.ib_guid);
    }

    /// One setting per field, in the order they are applied (the admin MAC
    /// first: some drivers check a VF's later settings against it).
    pub fn each(&self) -> Vec<VfSettings> {
        let one = VfSettings::default;
        let mut out = Vec::new();
        if let Some(mac) = self.mac {
            out.push(VfSettings {
                mac: Some(mac),
                ..one()
            });
        }
        if let Some(vlan) = self.vlan {
            out.push(VfSettings {
                vlan: Some(vlan),
                ..one()
            });
        }
        if let Some(on) = self.spoofchk {
            out.push(VfSettings {
                spoofchk: Some(on),
                ..one()
            });
        }
        if let Some(on) = self.trust {
            out.push(VfSettings {
                trust: Some(on),
                ..one()
            });
        }
        if let Some(state) = self.link_state {
            out.push(VfSettings {
                link_state: Some(state),
                ..one()
            });
        }
        if let Some(rate) = self.rate {
            out.push(VfSettings {
                rate: Some(rate),
                ..one()
            });
        }
        if let Some(guid) = self.ib_guid {
            out.push(VfSettings {
                ib_guid: Some(guid),
                ..one()
            });
        }
        out
    }

    /// The settings in the config's words, as `ip link set … vf N` would
    /// name them (`vlan 100 qos 3 proto 802.1ad`, `link_state enable`).
    pub fn describe(&self) -> String {
        let on_off = |b: bool| if b { "on" } else { "off" };
        let mut parts = Vec::new();
        if let Some(mac) = self.mac {
            parts.push(format!("mac {mac}"));
        }
        if let Some(v) = self.vlan {
            let proto = match v.proto {
                VlanProto::Dot1Q => "802.1q",
                VlanProto::Dot1Ad => "802.1ad",
            };
            parts.push(format!("vlan {} qos {} proto {proto}", v.id, v.qos));
        }
        if let Some(on) = self.spoofchk {
            parts.push(format!("spoofchk {}", on_off(on)));
        }
        if let Some(on) = self.trust {
            parts.push(format!("trust {}", on_off(on)));
        }
        if let Some(state) = self.link_state {
            let state = match state {
                LinkState::Auto => "auto",
                LinkState::Enable => "enable",
                LinkState::Disable => "disable",
            };
            parts.push(format!("link_state {state}"));
        }
        if let Some(r) = self.rate {
            parts.push(format!(
                "min_tx_rate {} max_tx_rate {}",
                r.min_mbps, r.max_mbps
            ));
        }
        if let Some(g) = self.ib_guid {
            parts.push(format!("guid {g}"));
        }
        parts.join(" ")
    }

    /// The current values (from `state`) of the fields this request sets:
    /// what DEL and ADD rollback put back, and only that.
    pub fn originals(&self, state: &VfSettings) -> VfSettings {
        VfSettings {
            mac: self.mac.and(state.mac),
            vlan: self.vlan.and(state.vlan),
            spoofchk: self.spoofchk.and(state.spoofchk),
            trust: self.trust.and(state.trust),
            link_state: self.link_state.and(state.link_state),
            rate: self.rate.and(state.rate),
            ib_guid: self.ib_guid.and(state.ib_guid),
        }
    }
}

/// Whether RDMA devices follow network namespaces (`rdma system`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaNetnsMode {
    Shared,
    Exclusive,
}

pub trait Hardware {
    /// Every VF attribute the PF reports for VF `vf`.
    fn vf_state(&self, pf_ifname: &str, vf: u32) -> Result<VfSettings>;
    /// Set the attributes `settings` names (one netlink request each).
    fn set_vf(&self, pf_ifname: &str, vf: u32, settings: &VfSettings) -> Result<()>;
    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode>;
    /// Move the RDMA device `name` into the namespace behind `netns_fd`.
    fn move_rdma_device(&self, name: &str, netns: BorrowedFd<'_>) -> Result<()>;
}

/// The kernel; in a build with the `fake-hardware` feature, the recording
/// fake when `RAILCNI_FAKE_HARDWARE` names its state file.
pub fn backend() -> Box<dyn Hardware> {
    #[cfg(feature = "fake-hardware")]
    if let Some(path) = std::env::var_os("RAILCNI_FAKE_HARDWARE").filter(|p| !p.is_empty()) {
        return Box::new(fake::Recorder::new(path.into()));
    }
    Box::new(kernel::Kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn originals_keep_only_what_the_request_sets() {
        let request = VfSettings {
            vlan: Some(Vlan {
                id: 100,
                qos: 0,
                proto: VlanProto::Dot1Q,
            }),
            trust: Some(true),
            ..Default::default()
        };
        let state = fake::factory_default();
        let saved = request.originals(&state);
        assert_eq!(
            saved,
            VfSettings {
                vlan: state.vlan,
                trust: state.trust,
                ..Default::default()
            }
        );
    }
}
