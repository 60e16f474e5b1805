//! IPAM for one attachment: the embedded railcni-ipam library in-process, or
//! any other IPAM plugin executed from CNI_PATH as the spec describes.

use std::cell::OnceCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as Proc, Stdio};

use base::Settings;
use cni::{CniResult, Env};

use base::node_file::NodeFile;
use serde_json::Value;

use crate::config::{IpamConf, NetConf};
use crate::error::{Error, Result};

pub struct NetworkIpam<'a> {
    conf: &'a NetConf,
    ipam: &'a IpamConf,
    env: &'a Env,
    settings: &'a Settings,
    /// The embedded pool, loaded once per invocation.
    loaded: &'a OnceCell<railcni_ipam::Ipam>,
    /// The node file, read once per invocation (ADD's policy check reads it too).
    node_file: &'a OnceCell<NodeFile>,
}

/// The node file in `cell`, read from `settings`' path the first time.
pub fn node_file<'c>(cell: &'c OnceCell<NodeFile>, settings: &Settings) -> Result<&'c NodeFile> {
    if let Some(file) = cell.get() {
        return Ok(file);
    }
    let file = NodeFile::load(&settings.node_config).map_err(railcni_ipam::IpamError::from)?;
    Ok(cell.get_or_init(|| file))
}

/// An external IPAM plugin as ADD ran it: what detach needs to run its
/// DEL later without the network config (the operator's `gc`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalIpam {
    /// The plugin binary ADD found in CNI_PATH.
    pub plugin: PathBuf,
    /// The network config it was given on stdin.
    pub conf: Value,
}

impl ExternalIpam {
    /// Release the lease of (`container_id`, `ifname`) with the plugin's DEL.
    pub fn release(&self, container_id: &str, ifname: &str) -> Result<()> {
        let dir: Vec<PathBuf> = self
            .plugin
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .collect();
        exec_plugin(
            &self.plugin,
            "DEL",
            &self.conf,
            &dir,
            Some((container_id, ifname)),
        )
        .map(drop)
    }
}

impl<'a> NetworkIpam<'a> {
    /// `None` when the network has no IPAM.
    pub fn new(
        conf: &'a NetConf,
        env: &'a Env,
        settings: &'a Settings,
        loaded: &'a OnceCell<railcni_ipam::Ipam>,
        node_file: &'a OnceCell<NodeFile>,
    ) -> Option<Self> {
        conf.ipam.as_ref().map(|ipam| NetworkIpam {
            conf,
            ipam,
            env,
            settings,
            loaded,
            node_file,
        })
    }

    pub fn network(&self) -> &str {
        &self.conf.name
    }

    fn embedded(&self) -> Result<&railcni_ipam::Ipam> {
        if let Some(loaded) = self.loaded.get() {
            return Ok(loaded);
        }
        let ipam_conf = self.conf.raw.get("ipam").unwrap_or(&Value::Null);
        let device = self.conf.device_id.as_deref();
        let statics = self
            .conf
            .static_allocations
            .as_ref()
            .map(cni::SetAside::text);
        let loaded = railcni_ipam::Ipam::load_with(
            &self.conf.name,
            ipam_conf,
            statics,
            self.settings,
            &node_file(self.node_file, self.settings)?.prefixes(),
            device,
        )?;
        Ok(self.loaded.get_or_init(|| loaded))
    }

    /// The external plugin and its config, for the record (`None` when embedded).
    pub fn external(&self) -> Result<Option<ExternalIpam>> {
        if self.ipam.is_embedded() {
            return Ok(None);
        }
        Ok(Some(ExternalIpam {
            plugin: self.find_plugin()?,
            conf: self.conf.raw.clone(),
        }))
    }

    /// Addresses, routes and DNS for the attachment; `ips[].interface` unset.
    /// `netns_held`: the pod's namespace as the caller holds it open, so the
    /// lease's proof names it even if its path is gone by now. `claimed`:
    /// leases of gone holders that must not be reclaimed (see
    /// `Ipam::allocate_keeping`).
    pub fn add(
        &self,
        netns_held: base::liveness::Held,
        claimed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<CniResult> {
        if !self.ipam.is_embedded() {
            let out = self.exec("ADD", None)?;
            let v: Value = serde_json::from_slice(&out).map_err(|e| {
                Error::ipam_plugin(format!(
                    "IPAM plugin {} printed an unreadable result: {e}",
                    self.ipam.plugin
                ))
            })?;
            let mut r = CniResult::from_value(&v)?;
            r.interfaces.clear();
            return Ok(r);
        }
        let holder = railcni_ipam::Holder {
            netns_held,
            ..railcni_ipam::Holder::of(self.env)
        };
        let allocation =
            self.embedded()?
                .allocate_keeping(&holder, &self.conf.requested_ips, claimed)?;
        for lease in &allocation.reclaimed {
            crate::log_info!("reclaimed the address of a gone holder: {lease}");
        }
        self.count_reclaimed(allocation.reclaimed.len());
        Ok(allocation.to_result())
    }

    /// Release the lease of attachment (`container_id`, `ifname`), which
    /// need not be this invocation's (a stale record's, GC's).
    pub fn release(&self, container_id: &str, ifname: &str) -> Result<()> {
        if !self.ipam.is_embedded() {
            return self.exec("DEL", Some((container_id, ifname))).map(drop);
        }
        // The lease file is the network's: releasing needs no pool, so a
        // pool that no longer validates (an edited NAD) never blocks DEL.
        release_embedded(self.settings, &self.conf.name, container_id, ifname)
    }

    /// Release the embedded pool's leases whose holders are provably gone
    /// (an external IPAM keeps its own books).
    pub fn reclaim_dead(&self, claimed: &dyn Fn(&str, &str) -> bool) -> Result<()> {
        if !self.ipam.is_embedded() {
            return Ok(());
        }
        let reclaimed = self.embedded()?.reclaim_dead_keeping(claimed)?;
        for lease in &reclaimed {
            crate::log_info!("reclaimed the address of a gone holder: {lease}");
        }
        self.count_reclaimed(reclaimed.len());
        Ok(())
    }

    /// For `railcni_reclaimed_leases_total`; a failure is only logged.
    fn count_reclaimed(&self, n: usize) {
        count_reclaimed(self.settings, &self.conf.name, n);
    }

    pub fn check(&self) -> Result<()> {
        if !self.ipam.is_embedded() {
            return self.exec("CHECK", None).map(drop);
        }
        self.embedded()?
            .check(&self.env.container_id, &self.env.ifname)?;
        Ok(())
    }

    pub fn gc(&self, valid: &[(String, String)]) -> Result<()> {
        if !self.ipam.is_embedded() {
            return self.exec("GC", None).map(drop);
        }
        for ip in self.embedded()?.gc(valid)? {
            crate::log_info!("GC released {ip}");
        }
        Ok(())
    }

    pub fn status(&self) -> Result<()> {
        if !self.ipam.is_embedded() {
            return self.exec("STATUS", None).map(drop);
        }
        self.embedded()?
            .status()
            .map_err(|e| Error::unavailable(e.to_string()))
    }

    fn find_plugin(&self) -> Result<PathBuf> {
        let name = &self.ipam.plugin;
        self.env
            .path
            .iter()
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                Error::config(
                    "ipam.type",
                    format!("IPAM plugin {name:?} not found in CNI_PATH {:?}; install it or fix the type", self.env.path),
                )
            })
    }

    /// Run the IPAM plugin with this network's config; `key` overrides the
    /// attachment it acts on (container ID, ifname).
    fn exec(&self, command: &str, key: Option<(&str, &str)>) -> Result<Vec<u8>> {
        exec_plugin(
            &self.find_plugin()?,
            command,
            &self.conf.raw,
            &self.env.path,
            key,
        )
    }
}

/// Run an IPAM plugin like a runtime would: our environment with
/// CNI_COMMAND (and the attachment `key`, CNI_PATH) set, the network config on
/// stdin; its error JSON becomes our error.
fn exec_plugin(
    plugin: &Path,
    command: &str,
    stdin: &Value,
    cni_path: &[PathBuf],
    key: Option<(&str, &str)>,
) -> Result<Vec<u8>> {
    let name = plugin.file_name().map_or_else(
        || plugin.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut proc = Proc::new(plugin);
    if let Some((container_id, ifname)) = key {
        proc.env("CNI_CONTAINERID", container_id)
            .env("CNI_IFNAME", ifname);
    }
    if let Ok(path) = std::env::join_paths(cni_path) {
        proc.env("CNI_PATH", path);
    }
    let mut child = proc
        .env("CNI_COMMAND", command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::ipam_plugin(format!("cannot run IPAM plugin {}: {e}", plugin.display()))
        })?;
    let input =
        serde_json::to_vec(stdin).map_err(|e| Error::internal(format!("encode config: {e}")))?;
    if let Some(mut pipe) = child.stdin.take() {
        // A plugin may exit without reading stdin; its exit status says what happened.
        let _ = pipe.write_all(&input);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::ipam_plugin(format!("IPAM plugin {name} {command}: {e}")))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        crate::log_debug!("IPAM plugin {name} {command} stderr: {}", stderr.trim());
    }
    if out.status.success() {
        return Ok(out.stdout);
    }
    Err(plugin_error(&name, command, out.status, &out.stdout))
}

/// A failed plugin's error JSON as our error: its spec code passes on.
fn plugin_error(
    name: &str,
    command: &str,
    status: std::process::ExitStatus,
    stdout: &[u8],
) -> Error {
    let err: Value = serde_json::from_slice(stdout).unwrap_or(Value::Null);
    let text = |key: &str| err.get(key).and_then(Value::as_str).unwrap_or("");
    let code = err
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u32::try_from(c).ok())
        .unwrap_or(105);
    let details = text("details");
    Error::IpamPlugin {
        code,
        msg: format!(
            "IPAM plugin {name} {command} failed ({status}): {}{}{details}",
            text("msg"),
            if details.is_empty() { "" } else { ": " }
        ),
    }
}

/// Count `n` leases of gone holders released on `network` (logged on failure).
pub fn count_reclaimed(settings: &Settings, network: &str, n: usize) {
    if !settings.stats {
        return;
    }
    if let Err(e) = base::stats::record_reclaimed(settings, network, n as u64) {
        crate::log_warn!("cannot count reclaimed leases for railcnictl metrics: {e}");
    }
}

fn log_released(released: railcni_ipam::Released) {
    match released {
        railcni_ipam::Released::Released(ip) => crate::log_info!("released {ip}"),
        railcni_ipam::Released::NotHeld => crate::log_debug!("no lease to release"),
        railcni_ipam::Released::StoreUnreadable(why) => {
            crate::log_error!("cannot release the lease: {why}");
        }
    }
}

/// Release a lease from the embedded store of `network`, without its pool
/// config (a stale record of another network, the operator's `gc`).
pub fn release_embedded(
    settings: &Settings,
    network: &str,
    container_id: &str,
    ifname: &str,
) -> Result<()> {
    log_released(railcni_ipam::release_lease(
        settings,
        network,
        container_id,
        ifname,
    )?);
    Ok(())
}
