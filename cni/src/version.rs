//! CNI spec versions railcni speaks and what each version allows. The
//! bottom of the crate: it uses no other module (its refusal becomes the
//! CNI error 1 in `error`).

/// Spec versions both binaries speak.
pub const SUPPORTED: &[&str] = &["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];
pub const LATEST: Version = Version::V1_1;

/// A parsed, supported spec version. Ordered, so `v >= Version::V1_0` reads naturally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(u8, u8, u8);

impl Version {
    pub const V0_4: Version = Version(0, 4, 0);
    pub const V1_0: Version = Version(1, 0, 0);
    pub const V1_1: Version = Version(1, 1, 0);

    pub fn parse(s: &str) -> Result<Self, Unsupported> {
        if !SUPPORTED.contains(&s) {
            return Err(Unsupported(format!(
                "cniVersion {s:?} is not supported; railcni supports {}",
                SUPPORTED.join(", ")
            )));
        }
        let mut parts = s.split('.').map(|p| p.parse::<u8>().unwrap_or(0));
        Ok(Version(
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
        ))
    }

    /// Refuse a command that the config's version does not have.
    pub fn require(self, min: Version, what: &str) -> Result<(), Unsupported> {
        if self < min {
            return Err(Unsupported(format!(
                "{what} needs cniVersion {} or later; the config says {self}",
                min
            )));
        }
        Ok(())
    }
}

/// A version railcni does not speak, or one too old for what was asked:
/// the CNI error 1 (`IncompatibleVersion`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Command;
    use crate::error::{Error, Reply};

    fn code<T>(r: Result<T, Unsupported>) -> Result<T, u32> {
        r.map_err(|e| Error::from(e).code())
    }

    #[test]
    fn parses_every_supported_version_and_round_trips() {
        for v in SUPPORTED {
            assert_eq!(Version::parse(v).map(|v| v.to_string()).as_deref(), Ok(*v));
        }
    }

    #[test]
    fn refuses_unknown_versions_with_code_1() {
        for v in ["0.2.0", "1.2.0", "", "1.0", "abc"] {
            assert_eq!(code(Version::parse(v)).err(), Some(1), "{v}");
        }
    }

    #[test]
    fn gates_check_gc_and_status() {
        let v031 = Version::parse("0.3.1").unwrap();
        assert_eq!(code(Command::Check.gate(v031)), Err(1));
        assert_eq!(code(Command::Gc.gate(Version::V1_0)), Err(1));
        assert_eq!(code(Command::Status.gate(Version::V1_0)), Err(1));
        assert!(Command::Check.gate(Version::V0_4).is_ok());
        assert!(Command::Gc.gate(Version::V1_1).is_ok());
        assert!(Command::Add.gate(v031).is_ok());
    }

    #[test]
    fn require_orders_versions() {
        let v031 = Version::parse("0.3.1").unwrap();
        assert!(v031.require(Version::V0_4, "CHECK").is_err());
        assert!(Version::V1_0.require(Version::V0_4, "CHECK").is_ok());
        assert_eq!(code(Version::V1_0.require(Version::V1_1, "GC")), Err(1));
    }
}
