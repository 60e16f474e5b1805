//! The CNI verbs. Each takes the validated request and returns a result or a typed error.

pub mod add;
pub mod check;
pub mod del;
pub mod gc;
mod rail;
pub mod status;
mod vf;

use crate::cni::Env;
use crate::config::NetConf;
use crate::net::NetNs;
use crate::sriov::Sysfs;
use crate::state::Store;

/// Everything a command needs: the request, and where the system is.
pub struct Ctx {
    pub env: Env,
    pub conf: NetConf,
    pub store: Store,
    pub sysfs: Sysfs,
    /// The namespace the plugin runs in; VFs return here.
    pub host: NetNs,
}
