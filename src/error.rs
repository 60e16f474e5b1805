//! One error type for the whole plugin; every variant maps to a CNI error code.
//!
//! Codes below 100 are the spec's; 100 and above are railcni's own and are
//! listed in README.md ("Error codes").

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// 1: the config's cniVersion is not supported, or the command needs a newer one.
    IncompatibleVersion(String),
    /// 3: the container's network namespace does not exist.
    ContainerUnknown(String),
    /// 4: a CNI_* environment variable is missing or malformed.
    InvalidEnv(String),
    /// 5: reading stdin or another I/O failure outside our stores.
    Io(String),
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
    /// 101: the VF is attached to another live pod.
    DeviceBusy(String),
    /// 102: the PCI device does not exist or is not an SR-IOV VF.
    DeviceNotFound(String),
    /// 103: the VF lacks what the config requires (e.g. `rdma: required`).
    UnsupportedDevice(String),
    /// 104: a netlink, netns or sysctl operation failed.
    Netlink(String),
    /// IPAM failed: spec codes (<100) and railcni-ipam's own (110-119) are
    /// passed on, anything else is 105.
    Ipam { code: u32, msg: String },
    /// 106: the attachment store (state dir, records, locks) failed.
    State(String),
    /// 107: CHECK found the attachment differs from prevResult.
    CheckFailed(String),
}

impl Error {
    pub fn config(field: &str, msg: impl Into<String>) -> Self {
        Error::InvalidConfig {
            field: field.to_string(),
            msg: msg.into(),
        }
    }

    pub fn code(&self) -> u32 {
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
            Error::DeviceBusy(_) => 101,
            Error::DeviceNotFound(_) => 102,
            Error::UnsupportedDevice(_) => 103,
            Error::Netlink(_) => 104,
            Error::Ipam { code, .. } if (1..100).contains(code) || (110..120).contains(code) => {
                *code
            }
            Error::Ipam { .. } => 105,
            Error::State(_) => 106,
            Error::CheckFailed(_) => 107,
        }
    }

    /// The short `msg` of the CNI error JSON.
    pub fn summary(&self) -> &'static str {
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
            Error::DeviceBusy(_) => "VF already attached",
            Error::DeviceNotFound(_) => "VF not usable",
            Error::UnsupportedDevice(_) => "VF lacks a required capability",
            Error::Netlink(_) => "network operation failed",
            Error::Ipam { .. } => "IPAM failed",
            Error::State(_) => "attachment store failed",
            Error::CheckFailed(_) => "attachment check failed",
        }
    }

    /// The `details` of the CNI error JSON: what happened and what to fix.
    pub fn details(&self) -> String {
        match self {
            Error::InvalidConfig { field, msg } => format!("field `{field}`: {msg}"),
            Error::Ipam { msg, .. } => msg.clone(),
            Error::IncompatibleVersion(m)
            | Error::ContainerUnknown(m)
            | Error::InvalidEnv(m)
            | Error::Io(m)
            | Error::Decode(m)
            | Error::TryAgainLater(m)
            | Error::Unavailable(m)
            | Error::Internal(m)
            | Error::DeviceBusy(m)
            | Error::DeviceNotFound(m)
            | Error::UnsupportedDevice(m)
            | Error::Netlink(m)
            | Error::State(m)
            | Error::CheckFailed(m) => m.clone(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.summary(), self.details())
    }
}

impl std::error::Error for Error {}

impl From<railcni_ipam::IpamError> for Error {
    fn from(e: railcni_ipam::IpamError) -> Self {
        Error::Ipam {
            code: e.code(),
            msg: e.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_spec_and_ours() {
        assert_eq!(Error::IncompatibleVersion(String::new()).code(), 1);
        assert_eq!(Error::InvalidEnv(String::new()).code(), 4);
        assert_eq!(Error::Decode(String::new()).code(), 6);
        assert_eq!(Error::config("mtu", "x").code(), 7);
        assert_eq!(Error::TryAgainLater(String::new()).code(), 11);
        assert_eq!(Error::Unavailable(String::new()).code(), 50);
        assert_eq!(Error::DeviceBusy(String::new()).code(), 101);
        assert_eq!(Error::State(String::new()).code(), 106);
    }

    #[test]
    fn ipam_spec_codes_pass_through_others_become_105() {
        let e = |code| Error::Ipam {
            code,
            msg: String::new(),
        };
        assert_eq!(e(11).code(), 11);
        assert_eq!(e(7).code(), 7);
        assert_eq!(e(110).code(), 110);
        assert_eq!(e(999).code(), 105);
        assert_eq!(e(0).code(), 105);
    }

    #[test]
    fn config_error_names_the_field() {
        let d = Error::config("mtu", "9600 is above the PF's 9000").details();
        assert!(d.contains("`mtu`") && d.contains("9600"), "{d}");
    }
}
