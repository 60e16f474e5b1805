//! railcni: a CNI plugin that attaches SR-IOV rail VFs to AI training pods.
//!
//! Started by a runtime (any `CNI_*` variable set) it speaks CNI on
//! stdin/stdout; otherwise it is a human command-line tool.

mod attachment;
mod checks;
mod cli;
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
mod run;
mod state;
mod timing;
mod vf;

// The one logger both binaries share (`cni::log`), as `crate::log_info!` ….
pub(crate) use cni::{log_debug, log_error, log_info, log_warn};

fn main() {
    if cni::is_cni_invocation() {
        std::process::exit(run::cni_main());
    }
    cli::main();
}
