//! What the importer's steps share (the rail as the config describes it,
//! how a clusterConfig group is named, the result type), in a leaf module
//! both the importer and its multi-plane check import: neither reaches up
//! into the other.

use super::schema::Group;
use crate::fabric::PlanError;

pub(super) type Result<T> = std::result::Result<T, PlanError>;

/// One rail as the config describes it: its PFs' netdevs, in plane order.
pub(super) struct ImportedRail {
    pub(super) index: u8,
    pub(super) pfs: Vec<String>,
}

/// A clusterConfig group as errors and notes name it.
pub(super) fn group_label(group: &Group) -> String {
    if group.identifier.is_empty() {
        "clusterConfig group".into()
    } else {
        format!("clusterConfig group {:?}", group.identifier)
    }
}
