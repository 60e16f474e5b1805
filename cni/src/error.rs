//! The spec's own errors, and the one place that builds the error reply
//! `{cniVersion, code, msg, details}` for any error type that can say its code.

use std::fmt;

use serde_json::{json, Value};

use crate::io_failure::IoFailure;
use crate::version::{Unsupported, Version};

/// What any error printed as a CNI error reply must say.
pub trait Reply: fmt::Display {
    fn code(&self) -> u32;
    /// The short `msg`.
    fn summary(&self) -> &'static str;
    /// The `details`: what happened and what to fix.
    fn details(&self) -> String;
}

/// The error reply in `version`.
pub fn reply_json(e: &dyn Reply, version: Version) -> Value {
    json!({"cniVersion": version.to_string(), "code": e.code(), "msg": e.summary(), "details": e.details()})
}

/// Errors with the spec's codes, shared by both binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// 1: the config's cniVersion is not supported, or the command needs a newer one.
    IncompatibleVersion(String),
    /// 3: the container's network namespace does not exist.
    ContainerUnknown(String),
    /// 4: a CNI_* environment variable is missing or malformed.
    InvalidEnv(String),
    /// 5: an I/O failure (stdin, the IPAM's lease files, the node file),
    /// with its errno.
    Io(IoFailure),
    /// 6: stdin is not decodable JSON.
    Decode(String),
    /// 7: the network config is invalid; `field` names what to fix.
    InvalidConfig { field: String, msg: String },
    /// 11: a lock could not be taken in time; the runtime should retry.
    TryAgainLater(String),
    /// 50: STATUS: the plugin cannot currently serve ADDs.
    Unavailable(String),
    /// 100: an unexpected internal failure.
    Internal(String),
}

impl Error {
    pub fn config(field: &str, msg: impl Into<String>) -> Self {
        Error::InvalidConfig {
            field: field.to_string(),
            msg: msg.into(),
        }
    }
}

impl Reply for Error {
    fn code(&self) -> u32 {
        match self {
            Error::IncompatibleVersion(_) => 1,
            Error::ContainerUnknown(_) => 3,
            Error::InvalidEnv(_) => 4,
            Error::Io(_) => 5,
            Error::Decode(_) => 6,
            Error::InvalidConfig { .. } => 7,
            Error::TryAgainLater(_) => 11,
            Error::Unavailable(_) => 50,
            Error::Internal(_) => 100,
        }
    }

    fn summary(&self) -> &'static str {
        match self {
            Error::IncompatibleVersion(_) => "incompatible CNI version",
            Error::ContainerUnknown(_) => "container network namespace not found",
            Error::InvalidEnv(_) => "invalid CNI environment",
            Error::Io(_) => "I/O failure",
            Error::Decode(_) => "cannot decode network config",
            Error::InvalidConfig { .. } => "invalid network config",
            Error::TryAgainLater(_) => "try again later",
            Error::Unavailable(_) => "plugin not available",
            Error::Internal(_) => "internal error",
        }
    }

    fn details(&self) -> String {
        match self {
            Error::InvalidConfig { field, msg } => format!("field `{field}`: {msg}"),
            Error::Io(failure) => failure.to_string(),
            Error::IncompatibleVersion(m)
            | Error::ContainerUnknown(m)
            | Error::InvalidEnv(m)
            | Error::Decode(m)
            | Error::TryAgainLater(m)
            | Error::Unavailable(m)
            | Error::Internal(m) => m.clone(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.summary(), self.details())
    }
}

impl std::error::Error for Error {}

impl From<Unsupported> for Error {
    fn from(u: Unsupported) -> Self {
        Error::IncompatibleVersion(u.0)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_spec() {
        assert_eq!(Error::IncompatibleVersion(String::new()).code(), 1);
        assert_eq!(Error::InvalidEnv(String::new()).code(), 4);
        assert_eq!(Error::Decode(String::new()).code(), 6);
        assert_eq!(Error::config("mtu", "x").code(), 7);
        assert_eq!(Error::TryAgainLater(String::new()).code(), 11);
        assert_eq!(Error::Unavailable(String::new()).code(), 50);
    }

    #[test]
    fn the_reply_names_the_field_and_the_version() {
        let e = Error::config("mtu", "9600 is above the PF's 9000");
        let v = reply_json(&e, Version::V1_0);
        assert_eq!(v["cniVersion"], "1.0.0");
        assert_eq!(v["code"], 7);
        assert_eq!(v["msg"], "invalid network config");
        let d = v["details"].as_str().unwrap_or_default();
        assert!(d.contains("`mtu`") && d.contains("9600"), "{d}");
    }
}
