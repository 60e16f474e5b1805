//! An RDMA device port's RoCE QoS as attributes in the VF settings' shape
//! (`attr_set`), and where the kernel keeps each (`files`): what
//! `rdmaQoS` asks for, `rdma_qos` saves, writes and restores through the
//! `Hardware` trait, as `vf::settings` does with `vf_info`'s `VfAttr`.
//!
//! To add a RoCE-style setting: a `RoceAttr` variant with its rank, name
//! and words (here), where the kernel keeps it (`files::read`/`write`),
//! its NAD key (`rdma_qos::conf::FIELDS`) and its record field
//! (`state::record_v1`). The fake hardware writes through `files` too.

pub mod files;
pub mod rdma_cm;
pub mod traffic_class;

pub use files::RocePort;

/// Why a RoCE setting is read, which decides what the read may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Before changing it (ADD): rdma_cm's ToS may be read through a group
    /// made for the moment, and configfs mounted where nothing is.
    ToChange,
    /// To look (CHECK, inspect, the agent): nothing is mounted, made or
    /// removed; a value that cannot be read so is unknown, with why.
    Observe,
}

use crate::attr_set::{Attr, AttrSet};

/// A ToS byte as the fabric reads it: `96 (DSCP 24, ECN 0)`. The DSCP is
/// what a RoCE fabric's lossless class is selected by.
pub fn describe(tos: u8) -> String {
    format!("{tos} (DSCP {}, ECN {})", tos >> 2, tos & 3)
}

/// One QoS attribute of an RDMA device's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoceAttr {
    /// The forced traffic class (mlx5 `tc/<port>/traffic_class`): the IP
    /// ToS byte of every RoCE v2 packet its QPs send. `None`: none forced.
    TrafficClass(Option<u8>),
    /// Whether rdma_cm's configfs group for the device exists: writing the
    /// ToS needs one, and railcni removes one it made.
    RdmaCmGroup(bool),
    /// rdma_cm's default ToS for the port (`default_roce_tos`): what
    /// connects through rdma_cm (UCX with rdmacm, MPI, storage) uses.
    DefaultTos(u8),
}

pub type RoceSettings = AttrSet<RoceAttr>;

impl RoceAttr {
    /// Written while the device is in the host's namespace, before it
    /// moves (mlx5 takes the class only there); the rest after the move,
    /// which makes rdma_cm forget its value.
    pub fn before_move(&self) -> bool {
        matches!(self, RoceAttr::TrafficClass(_))
    }

    /// What railcni leaves of this kind once the asked ones are written:
    /// writing the ToS leaves a group.
    pub fn as_written(&self) -> RoceAttr {
        match self {
            RoceAttr::RdmaCmGroup(_) => RoceAttr::RdmaCmGroup(true),
            other => *other,
        }
    }

    /// Whether users asked for it (the group is railcni's means).
    pub fn is_asked(&self) -> bool {
        !matches!(self, RoceAttr::RdmaCmGroup(_))
    }

    /// The value a launcher or metric reads (a ToS byte), when it is one.
    pub fn byte(&self) -> Option<u8> {
        match *self {
            RoceAttr::TrafficClass(v) => v,
            RoceAttr::DefaultTos(v) => Some(v),
            RoceAttr::RdmaCmGroup(_) => None,
        }
    }

    /// Where CHECK names it: the device's file.
    pub fn file_of(&self, device: &str) -> String {
        match self {
            RoceAttr::TrafficClass(_) => format!("rdma {device} traffic_class"),
            RoceAttr::RdmaCmGroup(_) => format!("rdma_cm {device} group"),
            RoceAttr::DefaultTos(_) => format!("rdma_cm {device} default_roce_tos"),
        }
    }

    /// Its value as CHECK compares it.
    pub fn value_text(&self) -> String {
        match *self {
            RoceAttr::TrafficClass(v) => v.map_or_else(|| "unset".into(), |c| c.to_string()),
            RoceAttr::RdmaCmGroup(made) => if made { "present" } else { "absent" }.into(),
            RoceAttr::DefaultTos(v) => v.to_string(),
        }
    }
}

impl Attr for RoceAttr {
    fn same_kind(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// The class first (on the host), the group before the ToS it holds.
    fn apply_rank(&self) -> u8 {
        match self {
            RoceAttr::TrafficClass(_) => 0,
            RoceAttr::RdmaCmGroup(_) => 1,
            RoceAttr::DefaultTos(_) => 2,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            RoceAttr::TrafficClass(_) => "rdmaQoS.tc",
            RoceAttr::RdmaCmGroup(_) => "rdma_cm group",
            RoceAttr::DefaultTos(_) => "rdmaQoS.tos",
        }
    }

    fn describe(&self) -> String {
        match *self {
            RoceAttr::TrafficClass(None) => "traffic class unset".into(),
            RoceAttr::TrafficClass(Some(c)) => format!("traffic class {}", describe(c)),
            RoceAttr::RdmaCmGroup(true) => "rdma_cm group present".into(),
            RoceAttr::RdmaCmGroup(false) => "rdma_cm group absent".into(),
            RoceAttr::DefaultTos(t) => format!("rdma_cm default ToS {}", describe(t)),
        }
    }
}
