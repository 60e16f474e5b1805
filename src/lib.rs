//! railcni's library: the CNI plugin (`run`: one invocation) and the
//! modules it is built from. The `railcni` binary is the plugin; the
//! operator tool (`railcnictl`, its own package) builds on these modules,
//! never the other way round.

pub mod attachment;
pub mod attr_set;
mod commands;
pub mod config;
mod devinfo;
pub mod error;
pub mod hw;
pub mod ipam;
mod journal;
pub mod net;
pub mod node;
mod pci;
pub mod policy;
pub mod probe;
pub mod rdma_qos;
mod routing;
pub mod run;
pub mod state;
mod timing;
pub mod vf;

// The one logger every railcni binary shares (`base::log`), as `crate::log_info!` ….
pub(crate) use base::{log_debug, log_error, log_info, log_warn};
