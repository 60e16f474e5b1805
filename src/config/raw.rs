//! The network config's fields as they came, before any check: what
//! `NetConf::parse` and the runtime's overrides (`runtime`) read.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawConf {
    pub(super) name: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    #[serde(rename = "deviceID")]
    pub(super) device_id: Option<String>,
    #[serde(rename = "pciBusID")]
    pub(super) pci_bus_id: Option<String>,
    pub(super) mtu: Option<Value>,
    pub(super) mac: Option<String>,
    pub(super) ipam: Option<Value>,
    pub(super) prev_result: Option<Value>,
    pub(super) routing: Option<Value>,
    pub(super) checks: Option<Value>,
    pub(super) rdma: Option<String>,
    #[serde(rename = "rdmaQoS")]
    pub(super) rdma_qos: Option<Value>,
    pub(super) guid: Option<String>,
    pub(super) pkey: Option<String>,
    #[serde(default)]
    pub(super) runtime_config: RawRuntimeConfig,
}

/// The capabilities a runtime injects. Keys are matched without regard to
/// case: Multus writes `deviceID`, containerd and CRI-O pass Go field names
/// through (`DeviceID`, `HostPort`).
#[derive(Debug, Default)]
pub(super) struct RawRuntimeConfig {
    pub(super) device_id: Option<String>,
    pub(super) mac: Option<String>,
    pub(super) device_info_file: Option<String>,
    pub(super) infiniband_guid: Option<String>,
    /// `io.kubernetes.cri.pod-annotations`: containerd's whole annotation map.
    pub(super) pod_annotations: Option<serde_json::Map<String, Value>>,
}

pub(super) const POD_ANNOTATIONS: &str = "io.kubernetes.cri.pod-annotations";

impl<'de> Deserialize<'de> for RawRuntimeConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let map = serde_json::Map::<String, Value>::deserialize(d)?;
        let find = |name: &str| {
            map.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        };
        let text = |name: &str| match find(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(D::Error::custom(format!(
                "runtimeConfig.{name}: {other} must be a string"
            ))),
        };
        let pod_annotations = match find(POD_ANNOTATIONS) {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "runtimeConfig.{POD_ANNOTATIONS}: {other} must be a map"
                )))
            }
        };
        Ok(RawRuntimeConfig {
            device_id: text("deviceID")?,
            mac: text("mac")?,
            device_info_file: text("CNIDeviceInfoFile")?,
            infiniband_guid: text("infinibandGUID")?,
            pod_annotations,
        })
    }
}

/// The top-level keys `RawConf` reads, as serde names them: asked of serde
/// (its struct visitor names its fields), so the list of keys railcni
/// reads has one home, this struct.
pub(super) fn keys() -> &'static [&'static str] {
    match RawConf::deserialize(FieldNames) {
        Err(Named(fields)) => fields,
        Ok(_) => &[],
    }
}

/// A deserializer that answers a struct's request with its field names.
struct FieldNames;

/// What `FieldNames` answers: the names, as the error it ends with.
#[derive(Debug)]
struct Named(&'static [&'static str]);

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Named {}

impl serde::de::Error for Named {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Named(&[])
    }
}

impl<'de> serde::Deserializer<'de> for FieldNames {
    type Error = Named;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Named> {
        Err(Named(&[]))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Named> {
        Err(Named(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    /// serde's names, as a config spells them.
    #[test]
    fn the_keys_read_are_the_structs_fields_as_configs_spell_them() {
        let keys = super::keys();
        for key in [
            "name",
            "type",
            "deviceID",
            "pciBusID",
            "mtu",
            "rdmaQoS",
            "prevResult",
            "runtimeConfig",
        ] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
        assert!(!keys.contains(&"device_id"), "{keys:?}");
    }
}
