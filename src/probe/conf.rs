//! The `checks` object of the network config: what ADD proves about the
//! rail before it answers (docs/validation.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// What a check's failure does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Nothing is sent.
    #[default]
    Off,
    /// Logged at warning; ADD succeeds.
    Warn,
    /// ADD fails with 108 and is rolled back.
    Require,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probes {
    pub gateway: Mode,
    pub address_conflict: Mode,
    /// The whole check's budget, all tries together.
    pub timeout_ms: u64,
    pub retries: u32,
    /// On a RoCE rail with an RDMA device: wait until the device's port
    /// holds a RoCE v2 GID for each address (on by default: a QP for an
    /// address without one cannot be made).
    pub roce_gid: Mode,
    /// How long the GID wait may take.
    pub roce_gid_timeout_ms: u64,
    /// On an InfiniBand rail with an RDMA device: wait until the VF's port
    /// is ACTIVE (and a member of the NAD's `pkey`): the subnet manager
    /// brings it up at its next sweep.
    pub ib_port: Mode,
    /// How long the port wait may take (an OpenSM sweep is 10 s apart).
    pub ib_port_timeout_ms: u64,
}

impl Default for Probes {
    fn default() -> Self {
        Probes {
            gateway: Mode::Off,
            address_conflict: Mode::Off,
            timeout_ms: 300,
            retries: 3,
            roce_gid: Mode::Require,
            roce_gid_timeout_ms: 2000,
            ib_port: Mode::Require,
            ib_port_timeout_ms: 15_000,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawChecks {
    gateway: Option<Value>,
    address_conflict: Option<Value>,
    timeout_ms: Option<Value>,
    retries: Option<Value>,
    roce_gid: Option<Value>,
    roce_gid_timeout_ms: Option<Value>,
    ib_port: Option<Value>,
    ib_port_timeout_ms: Option<Value>,
}

impl Probes {
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let Some(v) = v else {
            return Ok(Probes::default());
        };
        let raw: RawChecks = serde_json::from_value(v.clone())
            .map_err(|e| Error::config("checks", e.to_string()))?;
        let d = Probes::default();
        Ok(Probes {
            gateway: mode(raw.gateway.as_ref(), "checks.gateway")?,
            address_conflict: mode(raw.address_conflict.as_ref(), "checks.addressConflict")?,
            timeout_ms: positive(raw.timeout_ms.as_ref(), "checks.timeoutMs", 60_000)?
                .unwrap_or(d.timeout_ms),
            retries: positive(raw.retries.as_ref(), "checks.retries", 100)?
                .map_or(d.retries, |n| n as u32),
            roce_gid: match raw.roce_gid.as_ref() {
                None => d.roce_gid,
                v => mode(v, "checks.roceGid")?,
            },
            roce_gid_timeout_ms: positive(
                raw.roce_gid_timeout_ms.as_ref(),
                "checks.roceGidTimeoutMs",
                60_000,
            )?
            .unwrap_or(d.roce_gid_timeout_ms),
            ib_port: match raw.ib_port.as_ref() {
                None => d.ib_port,
                v => mode(v, "checks.ibPort")?,
            },
            ib_port_timeout_ms: positive(
                raw.ib_port_timeout_ms.as_ref(),
                "checks.ibPortTimeoutMs",
                120_000,
            )?
            .unwrap_or(d.ib_port_timeout_ms),
        })
    }

    /// How long each try waits for an answer: the budget, shared.
    pub fn per_try(&self) -> Duration {
        Duration::from_millis(self.timeout_ms / u64::from(self.retries.max(1)))
    }
}

fn mode(v: Option<&Value>, field: &str) -> Result<Mode> {
    match v {
        None => Ok(Mode::Off),
        Some(Value::String(s)) => match s.as_str() {
            "off" => Ok(Mode::Off),
            "warn" => Ok(Mode::Warn),
            "require" => Ok(Mode::Require),
            other => Err(Error::config(
                field,
                format!("{other:?} is not one of off, warn, require"),
            )),
        },
        Some(other) => Err(Error::config(
            field,
            format!("{other} must be \"off\", \"warn\" or \"require\""),
        )),
    }
}

/// A whole number 1..=`max`.
fn positive(v: Option<&Value>, field: &str, max: u64) -> Result<Option<u64>> {
    let Some(v) = v else { return Ok(None) };
    match v.as_u64().filter(|n| (1..=max).contains(n)) {
        Some(n) => Ok(Some(n)),
        None => Err(Error::config(
            field,
            format!("{v} must be a whole number 1..{max}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_values() {
        assert_eq!(Probes::parse(None).unwrap(), Probes::default());
        let c = Probes::parse(Some(&json!({"gateway": "require", "addressConflict": "warn", "timeoutMs": 600, "retries": 2}))).unwrap();
        assert_eq!((c.gateway, c.address_conflict), (Mode::Require, Mode::Warn));
        assert_eq!(c.per_try(), Duration::from_millis(300));
        assert_eq!(
            (c.roce_gid, c.roce_gid_timeout_ms),
            (Mode::Require, 2000),
            "on by default"
        );
        let c = Probes::parse(Some(&json!({"roceGid": "off", "roceGidTimeoutMs": 50}))).unwrap();
        assert_eq!((c.roce_gid, c.roce_gid_timeout_ms), (Mode::Off, 50));
    }

    #[test]
    fn bad_values_name_the_field() {
        for (v, field) in [
            (json!({"gateway": "always"}), "checks.gateway"),
            (json!({"addressConflict": true}), "checks.addressConflict"),
            (json!({"timeoutMs": 0}), "checks.timeoutMs"),
            (json!({"timeoutMs": -5}), "checks.timeoutMs"),
            (json!({"retries": 0}), "checks.retries"),
            (json!({"roceGid": "yes"}), "checks.roceGid"),
            (json!({"roceGidTimeoutMs": 0}), "checks.roceGidTimeoutMs"),
            (json!({"gatway": "warn"}), "checks"),
        ] {
            let e = Probes::parse(Some(&v)).unwrap_err();
            assert_eq!(e.code(), 7, "{v}");
            assert!(e.details().contains(field), "{v}: {e}");
        }
    }
}
