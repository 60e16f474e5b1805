//! `rdmaQoS` in the network config: NVIDIA's rdma-cni shape,
//! `{"tos": N, "tc": N}` at the top level, so a Spectrum-X NAD moves over
//! unchanged. Either may be left out; neither given means nothing is
//! written.

use serde_json::Value;

use crate::error::{Error, Result};

/// What a rail asks of its VF's RDMA device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdmaQos {
    /// The device's traffic class (mlx5 `tc/<port>/traffic_class`): the IP
    /// ToS byte of every RoCE v2 packet its QPs send, whatever they ask.
    pub tc: Option<u8>,
    /// rdma_cm's default ToS for the port (`default_roce_tos`): what
    /// connects through rdma_cm (UCX with rdmacm, MPI, storage) uses.
    pub tos: Option<u8>,
}

impl RdmaQos {
    pub fn is_empty(&self) -> bool {
        self.tc.is_none() && self.tos.is_none()
    }

    /// `rdmaQoS`: absent, `null` or `{}` ask for nothing.
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(RdmaQos::default());
        };
        let Some(map) = v.as_object() else {
            return Err(Error::config(
                "rdmaQoS",
                format!("{v} must be an object like {{\"tos\": 96, \"tc\": 96}}"),
            ));
        };
        if let Some(key) = map.keys().find(|k| !matches!(k.as_str(), "tos" | "tc")) {
            return Err(Error::config(
                &format!("rdmaQoS.{key}"),
                "is not a key of rdmaQoS (it takes tos and tc)",
            ));
        }
        Ok(RdmaQos {
            tc: byte(map.get("tc"), "rdmaQoS.tc")?,
            tos: byte(map.get("tos"), "rdmaQoS.tos")?,
        })
    }
}

fn byte(v: Option<&Value>, field: &str) -> Result<Option<u8>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                Error::config(
                    field,
                    format!("{n} must be a whole number from 0 to 255 (an IP ToS byte)"),
                )
            }),
    }
}

/// A ToS byte as the fabric reads it: `96 (DSCP 24, ECN 0)`. The DSCP is
/// what a RoCE fabric's lossless class is selected by.
pub fn describe(tos: u8) -> String {
    format!("{tos} (DSCP {}, ECN {})", tos >> 2, tos & 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_spectrum_x_shape_and_each_half_alone() {
        let q = RdmaQos::parse(Some(&json!({"tos": 96, "tc": 96}))).unwrap();
        assert_eq!((q.tc, q.tos), (Some(96), Some(96)));
        let q = RdmaQos::parse(Some(&json!({"tc": 106}))).unwrap();
        assert_eq!((q.tc, q.tos), (Some(106), None));
        for nothing in [None, Some(json!(null)), Some(json!({}))] {
            assert!(RdmaQos::parse(nothing.as_ref()).unwrap().is_empty());
        }
    }

    #[test]
    fn out_of_range_and_unknown_keys_name_the_field() {
        for (v, field) in [
            (json!({"tos": 256}), "rdmaQoS.tos"),
            (json!({"tc": -1}), "rdmaQoS.tc"),
            (json!({"tc": "96"}), "rdmaQoS.tc"),
            (json!({"tos": 9.5}), "rdmaQoS.tos"),
            (json!({"dscp": 24}), "rdmaQoS.dscp"),
            (json!(96), "rdmaQoS"),
        ] {
            let err = RdmaQos::parse(Some(&v)).unwrap_err().to_string();
            assert!(err.contains(field), "{v}: {err}");
        }
    }

    #[test]
    fn the_dscp_and_ecn_bits_are_named() {
        assert_eq!(describe(96), "96 (DSCP 24, ECN 0)");
        assert_eq!(describe(106), "106 (DSCP 26, ECN 2)");
    }
}
