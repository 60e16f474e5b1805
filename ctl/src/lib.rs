//! railcnictl's library: the operator commands (`cli`) and the fabric
//! planner (`fabric`), built on the plugin's library. The plugin never
//! links this crate; this crate links the plugin's.

pub mod cli;
mod fabric;

// The one logger every railcni binary shares (`base::log`), as `crate::log_info!` ….
pub(crate) use base::{log_info, log_warn};
