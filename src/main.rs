//! railcni: a CNI plugin that attaches SR-IOV rail VFs to AI training pods.
//!
//! With `CNI_COMMAND` set it speaks CNI on stdin/stdout; otherwise it is a
//! human command-line tool.

mod cli;
mod cni;
mod commands;
mod config;
mod devinfo;
mod error;
mod hw;
mod ipam;
mod journal;
mod log;
mod net;
mod routing;
mod run;
mod sriov;
mod state;

fn main() {
    if std::env::var_os("CNI_COMMAND").is_some() {
        std::process::exit(run::cni_main());
    }
    cli::main();
}
