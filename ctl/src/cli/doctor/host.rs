//! Around railcni: Multus (reported, not required: a node may run another
//! meta-plugin) and host settings that break a rail without an error.

use std::net::IpAddr;

use serde_json::Value;

use super::finding::Finding;
use super::place::Where;
use super::rails::Rail;
use railcni::vf::sysfs::list_dir;

/// Multus's own config in the CNI conf dir, and railcni in its bin dir.
pub fn multus(w: &Where) -> Vec<Finding> {
    const EXPECTED: &str = "Multus (optional)";
    let found = list_dir(&w.cni_conf_dir).into_iter().find_map(|name| {
        let text = std::fs::read_to_string(w.cni_conf_dir.join(&name)).ok()?;
        let conf: Value = serde_json::from_str(&text).ok()?;
        let kind = plugin_types(&conf)
            .into_iter()
            .find(|t| t.starts_with("multus"))?;
        Some((name, kind, conf))
    });
    let Some((name, kind, conf)) = found else {
        return vec![Finding::skipped(
            "multus/config",
            format!("no Multus config in {}", w.cni_conf_dir.display()),
            EXPECTED,
        )];
    };
    let bin_dir = conf
        .get("binDir")
        .and_then(Value::as_str)
        .map_or_else(|| w.cni_bin_dir.clone(), Into::into);
    let config = Finding::ok(
        "multus/config",
        format!("{} (type {kind})", w.cni_conf_dir.join(&name).display()),
        EXPECTED,
    );
    let expected = "railcni there";
    let bin = if bin_dir.join("railcni").exists() {
        Finding::ok(
            "multus/bin-dir",
            format!("{} holds railcni", bin_dir.display()),
            expected,
        )
    } else {
        Finding::broken(
            "multus/bin-dir",
            format!("{} (Multus's binDir) has no railcni", bin_dir.display()),
            expected,
            format!("railcnictl install --bin-dir {}", bin_dir.display()),
        )
    };
    vec![config, bin]
}

/// `type` of a config and of each plugin of a conflist.
fn plugin_types(conf: &Value) -> Vec<String> {
    let own = conf.get("type").into_iter();
    let listed = conf
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("type"));
    own.chain(listed)
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Strict reverse-path filtering on a PF that carries host traffic drops
/// replies that come back over another rail.
pub fn rp_filter(w: &Where, rail: &Rail) -> Option<Finding> {
    let pf = rail.pf.as_ref()?;
    let id = format!("{}/rp-filter", rail.name);
    const EXPECTED: &str = "0 or 2 (loose) with host addresses";
    let addresses: Vec<IpAddr> = nix::ifaddrs::getifaddrs()
        .into_iter()
        .flatten()
        .filter(|i| i.interface_name == *pf)
        .filter_map(|i| i.address?.as_sockaddr_in().map(|a| IpAddr::V4(a.ip())))
        .collect();
    if addresses.is_empty() {
        return Some(Finding::skipped(
            id,
            format!("{pf} has no IPv4 address: no host traffic"),
            EXPECTED,
        ));
    }
    let read = |dev: &str| {
        std::fs::read_to_string(w.host_path(&format!("/proc/sys/net/ipv4/conf/{dev}/rp_filter")))
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    // The kernel applies the larger of `all` and the interface's own.
    let effective = read(pf).max(read("all"))?;
    let found = format!("{pf} ({}) rp_filter {effective}", addresses[0]);
    Some(if effective == 1 {
        Finding::broken(
            id,
            format!("{found}: strict"),
            EXPECTED,
            format!(
                "sysctl -w net.ipv4.conf.{pf}.rp_filter=2 net.ipv4.conf.all.rp_filter=2, and persist both in /etc/sysctl.d/"
            ),
        )
    } else {
        Finding::ok(id, found, EXPECTED)
    })
}
