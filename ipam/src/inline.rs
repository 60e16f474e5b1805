//! A railcni-ipam pool's inline allocations (`ipam.staticAllocations`, 16k
//! of them in a migrated pool) read as the JSON text they came as, beside
//! the rest of the config: the `cni::ReadConfig` of both binaries.

use cni::error::Result;
use cni::skeleton::parse_config;
use serde_json::value::RawValue;
use serde_json::Value;

/// stdin as a JSON object, with `ipam.staticAllocations` set aside as the
/// JSON text it came as (a `cni::ReadConfig` for both binaries): a tree of
/// 16k allocations costs more to build (and free) than all the rest of an
/// ADD, and only the IPAM reads the list, in its own types. One pass of
/// serde: every member becomes a `Value` but that list. Input of another
/// shape is parsed whole, as `cni::skeleton::parse_config`.
pub fn read_config(stdin: &[u8]) -> Result<(Value, Option<&RawValue>)> {
    match serde_json::from_slice::<Outline>(stdin) {
        Ok(Outline(config, statics)) => Ok((Value::Object(config), statics)),
        Err(_) => parse_config(stdin).map(|v| (v, None)),
    }
}

type Split<'de> = (serde_json::Map<String, Value>, Option<&'de RawValue>);

/// The config: its members, and `ipam.staticAllocations` apart.
struct Outline<'de>(serde_json::Map<String, Value>, Option<&'de RawValue>);

/// `ipam`: its members, and `staticAllocations` apart.
struct IpamOutline<'de>(serde_json::Map<String, Value>, Option<&'de RawValue>);

impl<'de> serde::Deserialize<'de> for Outline<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (members, statics) = d.deserialize_map(SplitVisitor { top: true })?;
        Ok(Outline(members, statics))
    }
}

impl<'de> serde::Deserialize<'de> for IpamOutline<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (members, statics) = d.deserialize_map(SplitVisitor { top: false })?;
        Ok(IpamOutline(members, statics))
    }
}

/// Reads an object's members; at the top `ipam` is read as `IpamOutline`,
/// inside it `staticAllocations` as raw text. The last of a repeated key
/// wins, as in a `Value`.
struct SplitVisitor {
    top: bool,
}

impl<'de> serde::de::Visitor<'de> for SplitVisitor {
    type Value = Split<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Split<'de>, A::Error> {
        let (mut members, mut statics) = (serde_json::Map::new(), None);
        while let Some(key) = map.next_key::<String>()? {
            if self.top && key == "ipam" {
                let IpamOutline(ipam, list) = map.next_value()?;
                members.insert(key, Value::Object(ipam));
                statics = list;
            } else if !self.top && key == "staticAllocations" {
                statics = Some(map.next_value()?);
            } else {
                members.insert(key, map.next_value()?);
            }
        }
        Ok((members, statics))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::Reply;
    use serde_json::json;

    #[test]
    fn the_list_is_set_aside_and_the_rest_is_the_config() {
        assert_eq!(read_config(b"[1]").err().map(|e| e.code()), Some(6));
        assert_eq!(read_config(b"{torn").err().map(|e| e.code()), Some(6));
        let text = br#"{"name":"r","ipam":{"type":"railcni-ipam","staticAllocations":[{"nodeName":"a"}],"cidr":"10.0.0.0/8"}}"#;
        let (v, statics) = read_config(text).unwrap();
        assert_eq!(
            v,
            json!({"name": "r", "ipam": {"type": "railcni-ipam", "cidr": "10.0.0.0/8"}})
        );
        assert_eq!(statics.map(RawValue::get), Some(r#"[{"nodeName":"a"}]"#));
        // A list that is not at ipam.staticAllocations stays where it is.
        let (v, statics) =
            read_config(br#"{"name":"r","args":{"staticAllocations":[1,"]"]}}"#).unwrap();
        assert_eq!(
            (
                v["args"]["staticAllocations"][1].as_str(),
                statics.is_none()
            ),
            (Some("]"), true)
        );
        // ipam that is not an object is left to the config's checks.
        let (v, statics) = read_config(br#"{"ipam":"x"}"#).unwrap();
        assert_eq!((v, statics.is_none()), (json!({"ipam": "x"}), true));
        // A torn value inside is still a decode error.
        assert_eq!(
            read_config(br#"{"ipam":{"cidr":"x","staticAllocations":[}}"#)
                .err()
                .map(|e| e.code()),
            Some(6)
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use cni::Reply;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_read_config_is_the_config_with_the_list_aside(v in support::arb_json()) {
            let text = serde_json::to_vec(&v).unwrap();
            match (parse_config(&text), read_config(&text)) {
                (Ok(mut whole), Ok((config, statics))) => {
                    if let Some(list) = statics {
                        let list: Value = serde_json::from_str(list.get()).unwrap();
                        let taken = whole["ipam"].as_object_mut().and_then(|i| i.remove("staticAllocations"));
                        prop_assert_eq!(taken, Some(list));
                    }
                    prop_assert_eq!(whole, config);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code()),
                (a, b) => prop_assert!(false, "{:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
}
