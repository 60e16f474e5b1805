//! The CNI protocol as railcni's binaries speak it, and nothing of railcni
//! itself: spec versions and their gates, the `CNI_*` environment and
//! `CNI_ARGS`, results printed per version, the error reply (with I/O
//! failures that keep their errno), and `plugin_main`, the skeleton a
//! plugin binary runs.

pub mod args;
pub mod env;
pub mod error;
pub mod io_failure;
pub mod result;
pub mod skeleton;
pub mod version;

pub use args::CniArgs;
pub use env::{Command, Env};
pub use error::{Error, Reply};
pub use io_failure::IoFailure;
pub use result::{CniResult, Dns, Interface, IpConfig, Route};
pub use skeleton::{
    is_cni_invocation, plugin_main, whole_config, Plugin, ReadConfig, RefusedDel, Request,
    SetAside, Verb,
};
pub use version::Version;
