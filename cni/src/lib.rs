//! The CNI protocol as both railcni binaries speak it: spec versions and
//! their gates, the `CNI_*` environment and `CNI_ARGS`, results printed per
//! version, the error reply, and `plugin_main`, the skeleton both binaries
//! run. Also the file mechanics (locks, atomic writes) both stores share.

pub mod args;
pub mod env;
pub mod error;
pub mod files;
pub mod fnv;
pub mod io_failure;
pub mod liveness;
pub mod log;
pub mod result;
pub mod settings;
pub mod skeleton;
pub mod stats;
pub mod version;

pub use args::CniArgs;
pub use env::{Command, Env};
pub use error::{Error, Reply};
pub use io_failure::IoFailure;
pub use result::{CniResult, Dns, Interface, IpConfig, Route};
pub use settings::Settings;
pub use skeleton::{
    is_cni_invocation, plugin_main, whole_config, ReadConfig, RefusedDel, Request, SetAside, Verb,
};
pub use version::Version;
