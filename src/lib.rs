//! railcni's library: the CNI plugin (`run`: one invocation) and the operator
//! commands (`cli`) built on the same modules. Two binaries use it: `railcni`
//! (the plugin, exec'd by runtimes) and `railcnictl` (people, the DaemonSet).

mod attachment;
mod checks;
pub mod cli;
mod commands;
mod config;
mod devinfo;
mod error;
mod fabric;
mod hw;
mod ipam;
mod journal;
mod net;
mod node;
mod routing;
pub mod run;
mod state;
mod timing;
mod vf;

// The one logger both binaries share (`cni::log`), as `crate::log_info!` ….
pub(crate) use cni::{log_debug, log_error, log_info, log_warn};
