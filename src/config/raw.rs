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
