//! GC: drop every attachment of this network the runtime no longer knows,
//! returning its VF home, then let IPAM release the same.

use serde_json::Value;

use super::vf::Home;
use super::Ctx;
use crate::cni::version::Version;
use crate::error::{Error, Result};
use crate::ipam::Ipam;
use crate::net::{NetNs, Netlink};
use crate::{log_info, log_warn};

/// `cni.dev/valid-attachments` (spec 1.1), or the older `cni.dev/attachments`.
pub fn valid_attachments(conf: &Value) -> Result<Vec<(String, String)>> {
    let list = conf
        .get("cni.dev/valid-attachments")
        .or_else(|| conf.get("cni.dev/attachments"))
        .ok_or_else(|| Error::config("cni.dev/valid-attachments", "GC needs the list of valid attachments"))?;
    let items = list
        .as_array()
        .ok_or_else(|| Error::config("cni.dev/valid-attachments", "must be a list"))?;
    items
        .iter()
        .map(|a| {
            let cid = a.get("containerID").and_then(Value::as_str);
            let ifname = a.get("ifname").and_then(Value::as_str);
            match (cid, ifname) {
                (Some(c), Some(i)) => Ok((c.to_string(), i.to_string())),
                _ => Err(Error::config("cni.dev/valid-attachments", format!("entry {a} needs containerID and ifname"))),
            }
        })
        .collect()
}

pub async fn gc(ctx: &Ctx) -> Result<()> {
    ctx.conf.version.require(Version::V1_1, "GC")?;
    let valid = valid_attachments(&ctx.conf.raw)?;
    let host_nl = Netlink::connect_in(&ctx.host)?;
    for record in ctx.store.list()? {
        let key = (record.container_id.clone(), record.ifname.clone());
        if record.network != ctx.conf.name || valid.contains(&key) {
            continue;
        }
        let _lock = ctx.store.lock_vf(&record.pci)?;
        log_info!("GC: dropping attachment {}/{} of VF {}", key.0, key.1, record.pci);
        let pod = if record.netns_alive() {
            record.netns.as_deref().and_then(|p| NetNs::open(p.as_ref()).ok())
        } else {
            None
        };
        let pod_nl = pod.as_ref().map(Netlink::connect_in).transpose()?;
        let sysfs_names = ctx.sysfs.resolve(&record.pci).map(|vf| vf.netdevs).unwrap_or_default();
        let home = Home { host: &ctx.host, host_nl: &host_nl, pci: &record.pci, sysfs_names: &sysfs_names };
        match home.bring_back(pod_nl.as_ref(), &record.ifname, Some(&record)).await {
            Ok(_) => ctx.store.remove(&record.pci)?,
            Err(e) => log_warn!("GC: cannot return VF {}: {e}; keeping its record", record.pci),
        }
    }
    if let Some(ipam) = Ipam::new(&ctx.conf, &ctx.env) {
        ipam.gc(&valid)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_attachment_keys() {
        let a = json!({"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]});
        assert_eq!(valid_attachments(&a).unwrap(), vec![("c1".to_string(), "net1".to_string())]);
        let b = json!({"cni.dev/attachments":[{"containerID":"c2","ifname":"net2"}]});
        assert_eq!(valid_attachments(&b).unwrap(), vec![("c2".to_string(), "net2".to_string())]);
        assert_eq!(valid_attachments(&json!({})).unwrap_err().code(), 7);
        assert_eq!(valid_attachments(&json!({"cni.dev/attachments":[{"ifname":"x"}]})).unwrap_err().code(), 7);
    }
}
