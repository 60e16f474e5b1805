//! The CNI protocol: environment, versions, results and error output.

pub mod env;
pub mod result;
pub mod version;

pub use env::{Command, Env};
