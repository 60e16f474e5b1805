//! railcni: a CNI plugin that attaches SR-IOV rail VFs to AI training pods.
//!
//! Started by a runtime (any `CNI_*` variable set) it speaks CNI on
//! stdin/stdout; otherwise it is a human command-line tool.
#![cfg_attr(not(test), no_main)]

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

/// The C `main` (`#![no_main]`): every call is an exec, and std's start-up
/// (reading /proc/self/maps for the main thread's stack guard, an
/// alternate signal stack) cost about 40 us of each. Arguments and the
/// environment still reach std (glibc hands them over before `main`).
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // What std's start-up did that railcni needs: a write to a closed pipe
    // (a runtime that stopped reading) is an error, never a kill.
    // SAFETY: ignoring a signal installs no handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    railcni();
    0
}

/// Unit tests keep std's start-up (their harness is the entry point).
#[cfg(test)]
fn main() {
    railcni();
}

fn railcni() {
    if cni::is_cni_invocation() {
        std::process::exit(run::cni_main());
    }
    cli::main();
}
