//! IPAM for one attachment: the embedded railcni-ipam library in-process, or
//! any other IPAM plugin executed from CNI_PATH as the spec describes.

use std::cell::OnceCell;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command as Proc, Stdio};

use cni::{CniResult, Env, Settings};
use serde_json::Value;

use crate::config::{IpamConf, NetConf};
use crate::error::{Error, Result};

pub struct Ipam<'a> {
    conf: &'a NetConf,
    ipam: &'a IpamConf,
    env: &'a Env,
    settings: &'a Settings,
    /// The embedded pool, loaded (node file read) once per invocation.
    loaded: &'a OnceCell<railcni_ipam::Ipam>,
}

impl<'a> Ipam<'a> {
    /// `None` when the network has no IPAM.
    pub fn new(
        conf: &'a NetConf,
        env: &'a Env,
        settings: &'a Settings,
        loaded: &'a OnceCell<railcni_ipam::Ipam>,
    ) -> Option<Self> {
        conf.ipam.as_ref().map(|ipam| Ipam {
            conf,
            ipam,
            env,
            settings,
            loaded,
        })
    }

    fn kind(&self) -> &IpamConf {
        self.ipam
    }

    fn embedded(&self) -> Result<&railcni_ipam::Ipam> {
        if let Some(loaded) = self.loaded.get() {
            return Ok(loaded);
        }
        let ipam_conf = self.conf.raw.get("ipam").unwrap_or(&Value::Null);
        let loaded = railcni_ipam::Ipam::load(&self.conf.name, ipam_conf, self.settings)?;
        Ok(self.loaded.get_or_init(|| loaded))
    }

    fn holder(&self) -> railcni_ipam::Holder {
        let a = &self.env.args;
        railcni_ipam::Holder {
            container_id: self.env.container_id.clone(),
            ifname: self.env.ifname.clone(),
            pod_namespace: a.pod_namespace.clone(),
            pod_name: a.pod_name.clone(),
            pod_uid: a.pod_uid.clone(),
            netns: self.env.netns.clone(),
        }
    }

    /// Addresses, routes and DNS for the attachment; `ips[].interface` unset.
    pub fn add(&self) -> Result<CniResult> {
        if !self.kind().is_embedded() {
            let out = self.exec("ADD", &self.conf.raw)?;
            let v: Value = serde_json::from_slice(&out).map_err(|e| {
                Error::ipam_plugin(format!(
                    "IPAM plugin {} printed an unreadable result: {e}",
                    self.kind().kind
                ))
            })?;
            let mut r = CniResult::from_value(&v)?;
            r.interfaces.clear();
            return Ok(r);
        }
        let allocation = self
            .embedded()?
            .allocate(&self.holder(), &self.conf.requested_ips)?;
        for lease in &allocation.reclaimed {
            crate::log_info!("reclaimed the address of a gone holder: {lease}");
        }
        Ok(allocation.to_result())
    }

    /// Release the lease of attachment (`container_id`, `ifname`), which
    /// need not be this invocation's (a stale record's, GC's).
    pub fn release(&self, container_id: &str, ifname: &str) -> Result<()> {
        if !self.kind().is_embedded() {
            return self
                .exec_for("DEL", &self.conf.raw, Some((container_id, ifname)))
                .map(drop);
        }
        log_released(self.embedded()?.release(container_id, ifname)?);
        Ok(())
    }

    /// Release the embedded pool's leases whose holders are provably gone
    /// (an external IPAM keeps its own books).
    pub fn reclaim_dead(&self) -> Result<()> {
        if !self.kind().is_embedded() {
            return Ok(());
        }
        for lease in self.embedded()?.reclaim_dead()? {
            crate::log_info!("reclaimed the address of a gone holder: {lease}");
        }
        Ok(())
    }

    pub fn check(&self) -> Result<()> {
        if !self.kind().is_embedded() {
            return self.exec("CHECK", &self.conf.raw).map(drop);
        }
        self.embedded()?
            .check(&self.env.container_id, &self.env.ifname)?;
        Ok(())
    }

    pub fn gc(&self, valid: &[(String, String)]) -> Result<()> {
        if !self.kind().is_embedded() {
            return self.exec("GC", &self.conf.raw).map(drop);
        }
        for ip in self.embedded()?.gc(valid)? {
            crate::log_info!("GC released {ip}");
        }
        Ok(())
    }

    pub fn status(&self) -> Result<()> {
        if !self.kind().is_embedded() {
            return self.exec("STATUS", &self.conf.raw).map(drop);
        }
        self.embedded()?
            .status()
            .map_err(|e| Error::unavailable(e.to_string()))
    }

    fn find_plugin(&self) -> Result<PathBuf> {
        let name = &self.kind().kind;
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

    /// Run the IPAM plugin like a runtime would: same env, CNI_COMMAND set,
    /// the network config on stdin; its error JSON becomes our error.
    fn exec(&self, command: &str, stdin: &Value) -> Result<Vec<u8>> {
        self.exec_for(command, stdin, None)
    }

    /// `key` overrides the attachment the plugin acts on (container ID, ifname).
    fn exec_for(&self, command: &str, stdin: &Value, key: Option<(&str, &str)>) -> Result<Vec<u8>> {
        let plugin = self.find_plugin()?;
        let name = &self.kind().kind;
        let mut proc = Proc::new(&plugin);
        if let Some((container_id, ifname)) = key {
            proc.env("CNI_CONTAINERID", container_id)
                .env("CNI_IFNAME", ifname);
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
        let input = serde_json::to_vec(stdin)
            .map_err(|e| Error::internal(format!("encode config: {e}")))?;
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
        let err: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let code = err
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u32::try_from(c).ok())
            .unwrap_or(105);
        let msg = err
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let details = err.get("details").and_then(Value::as_str).unwrap_or("");
        Err(Error::IpamPlugin {
            code,
            msg: format!(
                "IPAM plugin {name} {command} failed ({}): {msg}{}{details}",
                out.status,
                if details.is_empty() { "" } else { ": " }
            ),
        })
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
/// config (a stale record of another network).
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
