//! One error type for the whole plugin; every variant maps to a CNI error code.
//!
//! Codes below 100 are the spec's (carried by `cni::Error`); 100 and above
//! are railcni's own and are listed in docs/errors.md.

use std::fmt;

use cni::Reply;
use nix::errno::Errno;
use railcni_ipam::IpamError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The spec's codes: version, env, I/O, decode, config, try again, STATUS, internal.
    Spec(cni::Error),
    /// 101: the VF is attached to another live pod.
    DeviceBusy(String),
    /// 101: the VF is held by a namespace railcni cannot reach (its path
    /// gone, no process in it): its lease and record stay. DEL answers this
    /// as done (the runtime must not hang); gc finishes it later.
    HeldElsewhere(String),
    /// 102: the PCI device does not exist or is not an SR-IOV VF.
    DeviceNotFound(String),
    /// 103: the VF lacks what the config requires (e.g. `rdma: required`).
    UnsupportedDevice(String),
    /// 104: a netlink reply that does not decode, or no answer at all.
    Netlink(String),
    /// 104: a name the VF must take is taken in that namespace.
    NameTaken(String),
    /// 104: a link railcni was working on is gone (a driver reload, a pod
    /// namespace torn down meanwhile).
    DeviceVanished(String),
    /// 104: a route the rail needs is already the pod's, another way.
    RouteConflict(String),
    /// 104: the kernel refused a request: what was asked, and its errno.
    /// What was asked, the errno, and the reason the kernel (or the
    /// driver) gave in words, when it gave one (netlink's extended ack).
    Kernel {
        what: String,
        errno: Errno,
        said: Option<String>,
    },
    /// The PF's driver refused a VF setting the config asks for. Its code
    /// says what to do: 2 (this NIC's driver lacks the setting: remove it
    /// from the config), 7 (a value the driver does not take), 11 (busy:
    /// retry), else 104.
    VfSettingRefused(VfRefusal),
    /// The embedded IPAM failed: its own code (spec codes, 110-113).
    Ipam(IpamError),
    /// An external IPAM plugin failed: its spec code (< 100) is passed on,
    /// anything else is 105.
    IpamPlugin { code: u32, msg: String },
    /// 106: the attachment store (state dir, records, locks) failed, with
    /// the errno when the system gave one (EROFS, ENOSPC, EACCES are each
    /// named with what to do).
    State(cni::IoFailure),
    /// 107: CHECK found the attachment differs from prevResult.
    CheckFailed(String),
    /// 108: an ADD check of the rail (gateway, address conflict) failed.
    RailCheck(String),
    /// 109: the plugin runs without a capability it needs (CAP_NET_ADMIN
    /// for netlink changes, CAP_SYS_ADMIN to enter the pod's namespace).
    MissingCapability(String),
    /// Detaching left work undone: every failed step, with its own error.
    /// Its code is the most actionable of theirs (see `actionable`).
    DetachIncomplete {
        what: String,
        failures: Vec<StepFailure>,
    },
}

/// A VF setting the PF's driver refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VfRefusal {
    /// The setting in the config's words, with its value (`link_state enable`).
    pub setting: String,
    pub pf: String,
    /// The PF's driver (`igb`, `mlx5_core`); empty when sysfs does not say.
    pub driver: String,
    pub vf: u32,
    pub errno: Errno,
    /// The driver's own words for the refusal (netlink's extended ack).
    pub said: Option<String>,
}

impl VfRefusal {
    fn code(&self) -> u32 {
        match self.errno {
            Errno::EOPNOTSUPP | Errno::EPROTONOSUPPORT => 2,
            Errno::EINVAL | Errno::ERANGE => 7,
            Errno::EAGAIN | Errno::EBUSY => 11,
            _ => 104,
        }
    }

    fn details(&self) -> String {
        let driver = if self.driver.is_empty() {
            "its driver".to_string()
        } else {
            format!("driver {}", self.driver)
        };
        let advice = match self.code() {
            2 => "; this NIC's driver does not support the setting: remove it from the network config"
                .to_string(),
            7 => "; the driver does not take this value: change or remove it in the network config"
                .to_string(),
            11 => "; the PF is busy: retry".to_string(),
            _ => String::new(),
        };
        let said =
            (self.said.as_deref()).map_or(String::new(), |s| format!(": the driver said: {s}"));
        format!(
            "PF {} ({driver}) refused VF {}'s {}: {} ({:?}){said}{advice}",
            self.pf,
            self.vf,
            self.setting,
            self.errno.desc(),
            self.errno
        )
    }
}

/// One detach step that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    pub step: &'static str,
    pub error: Error,
}

/// How much a code tells the runtime or operator to do, lower first:
/// try again later (a retry fixes it), the state store, the config, the
/// IPAM, the device, and last a netlink failure (look at the kernel).
fn actionable(code: u32) -> u32 {
    match code {
        11 => 0,
        106 => 1,
        1..=10 => 2,
        110..=113 => 3,
        105 => 4,
        101..=103 | 108 | 109 => 5,
        104 => 6,
        _ => 7,
    }
}

impl Error {
    pub fn config(field: &str, msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::config(field, msg))
    }

    /// An operating-system call that failed: what was asked, with its errno.
    pub fn os(what: impl Into<String>, e: &std::io::Error) -> Self {
        Error::Kernel {
            what: what.into(),
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(Errno::EIO as i32)),
            said: None,
        }
    }

    /// The errno the kernel answered, where there was one.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Kernel { errno, .. } => Some(*errno),
            Error::VfSettingRefused(r) => Some(r.errno),
            Error::State(f) | Error::Spec(cni::Error::Io(f)) => f.errno,
            _ => None,
        }
    }

    /// The attachment store failed doing `what` with `e` (its errno kept).
    pub fn state(what: impl Into<String>, e: &std::io::Error) -> Self {
        Error::State(cni::IoFailure::new(what, e))
    }

    pub fn invalid_env(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::InvalidEnv(msg.into()))
    }

    pub fn container_unknown(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::ContainerUnknown(msg.into()))
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::Internal(msg.into()))
    }

    pub fn unavailable(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::Unavailable(msg.into()))
    }

    pub fn try_again_later(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::TryAgainLater(msg.into()))
    }

    pub fn decode(msg: impl Into<String>) -> Self {
        Error::Spec(cni::Error::Decode(msg.into()))
    }

    pub fn ipam_plugin(msg: impl Into<String>) -> Self {
        Error::IpamPlugin {
            code: 105,
            msg: msg.into(),
        }
    }
}

impl Reply for Error {
    fn code(&self) -> u32 {
        match self {
            Error::Spec(e) => e.code(),
            Error::DeviceBusy(_) | Error::HeldElsewhere(_) => 101,
            Error::DeviceNotFound(_) => 102,
            Error::UnsupportedDevice(_) => 103,
            Error::Netlink(_)
            | Error::Kernel { .. }
            | Error::NameTaken(_)
            | Error::DeviceVanished(_)
            | Error::RouteConflict(_) => 104,
            Error::VfSettingRefused(r) => r.code(),
            Error::Ipam(e) => e.code(),
            Error::IpamPlugin { code, .. } if (1..100).contains(code) => *code,
            Error::IpamPlugin { .. } => 105,
            Error::State(_) => 106,
            Error::CheckFailed(_) => 107,
            Error::RailCheck(_) => 108,
            Error::MissingCapability(_) => 109,
            Error::DetachIncomplete { failures, .. } => failures
                .iter()
                .map(|f| f.error.code())
                .min_by_key(|c| actionable(*c))
                .unwrap_or(104),
        }
    }

    fn summary(&self) -> &'static str {
        match self {
            Error::Spec(e) => e.summary(),
            Error::DeviceBusy(_) => "VF already attached",
            Error::HeldElsewhere(_) => "VF held by an unreachable namespace",
            Error::DeviceNotFound(_) => "VF not usable",
            Error::UnsupportedDevice(_) => "VF lacks a required capability",
            Error::Netlink(_) | Error::Kernel { .. } => "network operation failed",
            Error::NameTaken(_) => "interface name taken",
            Error::DeviceVanished(_) => "device vanished",
            Error::RouteConflict(_) => "route conflict",
            Error::VfSettingRefused(_) => "VF setting refused by the NIC's driver",
            Error::Ipam(_) | Error::IpamPlugin { .. } => "IPAM failed",
            Error::State(_) => "attachment store failed",
            Error::CheckFailed(_) => "attachment check failed",
            Error::RailCheck(_) => "rail check failed",
            Error::MissingCapability(_) => "missing capability",
            Error::DetachIncomplete { .. } => "attachment not fully detached",
        }
    }

    fn details(&self) -> String {
        match self {
            Error::Spec(e) => e.details(),
            Error::Ipam(e) => e.details(),
            Error::IpamPlugin { msg, .. }
            | Error::DeviceBusy(msg)
            | Error::HeldElsewhere(msg)
            | Error::DeviceNotFound(msg)
            | Error::UnsupportedDevice(msg)
            | Error::Netlink(msg)
            | Error::NameTaken(msg)
            | Error::DeviceVanished(msg)
            | Error::RouteConflict(msg)
            | Error::CheckFailed(msg)
            | Error::RailCheck(msg)
            | Error::MissingCapability(msg) => msg.clone(),
            // The errno's name too: it is what an operator greps for.
            Error::Kernel { what, errno, said } => match said {
                Some(said) => format!(
                    "{what}: {} ({errno:?}): the kernel said: {said}",
                    errno.desc()
                ),
                None => format!("{what}: {} ({errno:?})", errno.desc()),
            },
            Error::State(failure) => failure.to_string(),
            Error::VfSettingRefused(r) => r.details(),
            Error::DetachIncomplete { what, failures } => format!(
                "detaching {what} left work undone: {}",
                failures
                    .iter()
                    .map(|f| format!("{}: {}", f.step, f.error.details()))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

impl Error {
    pub fn code(&self) -> u32 {
        Reply::code(self)
    }

    pub fn details(&self) -> String {
        Reply::details(self)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.summary(), Reply::details(self))
    }
}

impl std::error::Error for Error {}

impl From<cni::Error> for Error {
    fn from(e: cni::Error) -> Self {
        Error::Spec(e)
    }
}

impl From<IpamError> for Error {
    fn from(e: IpamError) -> Self {
        match e {
            IpamError::Spec(e) => Error::Spec(e),
            other => Error::Ipam(other),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_spec_and_ours() {
        assert_eq!(Error::invalid_env("").code(), 4);
        assert_eq!(Error::config("mtu", "x").code(), 7);
        assert_eq!(Error::try_again_later("").code(), 11);
        assert_eq!(Error::DeviceBusy(String::new()).code(), 101);
        assert_eq!(Error::State(cni::IoFailure::plain("")).code(), 106);
        assert_eq!(Error::from(IpamError::Exhausted(String::new())).code(), 110);
        assert_eq!(Error::from(IpamError::config("ipam.cidr", "x")).code(), 7);
    }

    #[test]
    fn an_incomplete_detach_answers_its_most_actionable_code_and_lists_every_failure() {
        let failed = |step, error| StepFailure { step, error };
        let e = Error::DetachIncomplete {
            what: "VF 0000:3b:02.0".into(),
            failures: vec![
                failed("move VF home", Error::Netlink("EBUSY".into())),
                failed(
                    "release address",
                    Error::try_again_later("lease file locked"),
                ),
                failed(
                    "remove record",
                    Error::state(
                        "cannot remove /s/a/x.json",
                        &std::io::Error::from_raw_os_error(30),
                    ),
                ),
            ],
        };
        assert_eq!(e.code(), 11, "a retry is what fixes a held lock");
        let d = e.details();
        for part in [
            "move VF home: EBUSY",
            "release address: lease file locked",
            "remove record: cannot remove /s/a/x.json: Read-only file system (EROFS); the file system is mounted read-only",
        ] {
            assert!(d.contains(part), "{d}");
        }
        let e = Error::DetachIncomplete {
            what: String::new(),
            failures: vec![
                failed("move VF home", Error::Netlink(String::new())),
                failed("remove record", Error::State(cni::IoFailure::plain(""))),
            ],
        };
        assert_eq!(e.code(), 106);
    }

    #[test]
    fn a_refused_vf_setting_names_setting_pf_driver_and_what_to_do() {
        let refusal = |errno| {
            Error::VfSettingRefused(VfRefusal {
                setting: "link_state enable".into(),
                pf: "enp2s0".into(),
                driver: "igb".into(),
                vf: 0,
                errno,
                said: None,
            })
        };
        let e = refusal(Errno::EOPNOTSUPP);
        assert_eq!(e.code(), 2, "an unsupported field");
        // Every error that carries an errno reports it (#62).
        assert_eq!(e.errno(), Some(Errno::EOPNOTSUPP));
        let state = Error::state("write x", &std::io::Error::from_raw_os_error(13));
        assert_eq!(state.errno(), Some(Errno::EACCES));
        let d = e.details();
        for part in [
            "enp2s0",
            "driver igb",
            "VF 0",
            "link_state enable",
            "EOPNOTSUPP",
            "remove it",
        ] {
            assert!(d.contains(part), "{d}");
        }
        assert_eq!(refusal(Errno::EINVAL).code(), 7);
        assert_eq!(refusal(Errno::EBUSY).code(), 11);
        assert_eq!(refusal(Errno::EIO).code(), 104);
    }

    #[test]
    fn ipam_plugin_spec_codes_pass_through_others_become_105() {
        let e = |code| Error::IpamPlugin {
            code,
            msg: String::new(),
        };
        assert_eq!(e(11).code(), 11);
        assert_eq!(e(7).code(), 7);
        assert_eq!(
            e(110).code(),
            105,
            "a foreign plugin's own codes are not ours"
        );
        assert_eq!(e(999).code(), 105);
        assert_eq!(e(0).code(), 105);
    }
}
