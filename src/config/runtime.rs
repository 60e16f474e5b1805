//! What a runtime injects (`runtimeConfig`, `CNI_ARGS`, the pod's
//! annotations) and which source wins for the device, MAC and GUID.

use super::raw::{RawConf, RawRuntimeConfig, POD_ANNOTATIONS};
use crate::error::{Error, Result};
use crate::net::Mac;
use crate::vf::settings::nad::{parse_guid, parse_mac};
use cni::Env;

/// The annotation through which a pod names its VF when nothing else does.
const DEVICE_ANNOTATION: &str = "railcni.io/device-id";

/// runtimeConfig.deviceID > deviceID > pciBusID > the pod's annotation.
pub(super) fn pick_device(conf: &RawConf) -> Result<Option<String>> {
    let given = [
        &conf.runtime_config.device_id,
        &conf.device_id,
        &conf.pci_bus_id,
    ]
    .into_iter()
    .flatten()
    .find(|d| !d.is_empty());
    match given {
        Some(d) => Ok(Some(d.clone())),
        None => annotated_device(&conf.runtime_config),
    }
}

/// The VF a pod names in its annotations (containerd passes them all): a
/// PCI address, or error 7 naming the annotation.
pub(super) fn annotated_device(rc: &RawRuntimeConfig) -> Result<Option<String>> {
    let Some(value) = rc
        .pod_annotations
        .as_ref()
        .and_then(|m| m.get(DEVICE_ANNOTATION))
    else {
        return Ok(None);
    };
    let field = format!("runtimeConfig.{POD_ANNOTATIONS}[\"{DEVICE_ANNOTATION}\"]");
    match value.as_str().map(crate::pci::normalize) {
        Some(Ok(pci)) => Ok(Some(pci)),
        _ => Err(Error::config(
            &field,
            format!("{value} is not a PCI address like 0000:3b:02.1"),
        )),
    }
}

/// runtimeConfig.mac > CNI_ARGS MAC= > config mac.
pub(super) fn pick_mac(conf: &RawConf, env: &Env) -> Result<Option<Mac>> {
    match (&conf.runtime_config.mac, &env.args.mac, &conf.mac) {
        (Some(m), _, _) => parse_mac(m, "runtimeConfig.mac").map(Some),
        (None, Some(m), _) => parse_mac(m, "CNI_ARGS MAC").map(Some),
        (None, None, Some(m)) => parse_mac(m, "mac").map(Some),
        (None, None, None) => Ok(None),
    }
}

/// runtimeConfig.infinibandGUID > CNI_ARGS infinibandGUID= > config guid.
pub(super) fn pick_guid(conf: &RawConf, env: &Env) -> Result<Option<crate::net::Guid>> {
    let given = [
        (
            &conf.runtime_config.infiniband_guid,
            "runtimeConfig.infinibandGUID",
        ),
        (&env.args.infiniband_guid, "CNI_ARGS infinibandGUID"),
        (&conf.guid, "guid"),
    ];
    match given
        .into_iter()
        .find_map(|(v, field)| v.as_ref().map(|g| (g, field)))
    {
        Some((g, field)) => parse_guid(g, field).map(Some),
        None => Ok(None),
    }
}
