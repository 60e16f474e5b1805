//! `rdmaQoS` in the network config: NVIDIA's rdma-cni shape,
//! `{"tos": N, "tc": N}` at the top level, so a Spectrum-X NAD moves over
//! unchanged. Either may be left out; neither given means nothing is
//! written. Parsed into the attributes they set (`attr`).

use serde_json::Value;

use crate::error::{Error, Result};
pub use crate::net::roce::describe;
use crate::net::roce::{RoceAttr, RoceSettings};

/// A key's byte as the attribute it sets.
type ToAttr = fn(u8) -> RoceAttr;

/// Each key of `rdmaQoS` and the attribute its byte sets.
const FIELDS: [(&str, ToAttr); 2] = [
    ("tc", |v| RoceAttr::TrafficClass(Some(v))),
    ("tos", RoceAttr::DefaultTos),
];

/// `rdmaQoS` as the settings it asks for: absent, `null` or `{}` ask for
/// nothing.
pub fn parse(v: Option<&Value>) -> Result<RoceSettings> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(RoceSettings::default());
    };
    let Some(map) = v.as_object() else {
        return Err(Error::config(
            "rdmaQoS",
            format!("{v} must be an object like {{\"tos\": 96, \"tc\": 96}}"),
        ));
    };
    if let Some(key) = map.keys().find(|k| FIELDS.iter().all(|(f, _)| f != k)) {
        return Err(Error::config(
            &format!("rdmaQoS.{key}"),
            "is not a key of rdmaQoS (it takes tos and tc)",
        ));
    }
    let mut asked = RoceSettings::default();
    for (key, attr) in FIELDS {
        if let Some(v) = byte(map.get(key), &format!("rdmaQoS.{key}"))? {
            asked.set(attr(v));
        }
    }
    Ok(asked)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_spectrum_x_shape_and_each_half_alone() {
        let q = parse(Some(&json!({"tos": 96, "tc": 96}))).unwrap();
        assert_eq!(
            q.attrs(),
            [RoceAttr::TrafficClass(Some(96)), RoceAttr::DefaultTos(96)]
        );
        let q = parse(Some(&json!({"tc": 106}))).unwrap();
        assert_eq!(q.attrs(), [RoceAttr::TrafficClass(Some(106))]);
        for nothing in [None, Some(json!(null)), Some(json!({}))] {
            assert!(parse(nothing.as_ref()).unwrap().is_empty());
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
            let err = parse(Some(&v)).unwrap_err().to_string();
            assert!(err.contains(field), "{v}: {err}");
        }
    }

    #[test]
    fn the_dscp_and_ecn_bits_are_named() {
        assert_eq!(describe(96), "96 (DSCP 24, ECN 0)");
        assert_eq!(describe(106), "106 (DSCP 26, ECN 2)");
    }
}
