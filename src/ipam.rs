//! IPAM for one attachment: the embedded railcni-ipam library in-process, or
//! any other IPAM plugin executed from CNI_PATH as the spec describes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command as Proc, Stdio};

use serde_json::Value;

use crate::cni::result::{CniResult, IpConfig, Route};
use crate::cni::Env;
use crate::config::{IpamConf, NetConf};
use crate::error::{Error, Result};

pub struct Ipam<'a> {
    conf: &'a NetConf,
    ipam: &'a IpamConf,
    env: &'a Env,
}

impl<'a> Ipam<'a> {
    pub fn new(conf: &'a NetConf, env: &'a Env) -> Option<Self> {
        conf.ipam.as_ref().map(|ipam| Ipam { conf, ipam, env })
    }

    fn kind(&self) -> &IpamConf {
        self.ipam
    }

    fn embedded(&self) -> Result<railcni_ipam::Ipam> {
        let env = railcni_ipam::IpamEnv::from_env();
        let ipam_conf = self.conf.raw.get("ipam").cloned().unwrap_or(Value::Null);
        Ok(railcni_ipam::Ipam::load(&self.conf.name, &ipam_conf, &env)?)
    }

    fn holder(&self) -> railcni_ipam::Holder {
        let a = &self.env.args;
        railcni_ipam::Holder {
            container_id: self.env.container_id.clone(),
            ifname: self.env.ifname.clone(),
            pod_namespace: a.pod_namespace.clone(),
            pod_name: a.pod_name.clone(),
            pod_uid: a.pod_uid.clone(),
        }
    }

    /// Addresses, routes and DNS for the attachment; `ips[].interface` unset.
    pub fn add(&self) -> Result<CniResult> {
        if !self.kind().is_embedded() {
            let out = self.exec("ADD", &self.conf.raw)?;
            let v: Value = serde_json::from_slice(&out).map_err(|e| Error::Ipam {
                code: 105,
                msg: format!(
                    "IPAM plugin {} printed an unreadable result: {e}",
                    self.kind().kind
                ),
            })?;
            let mut r = CniResult::from_value(&v)?;
            r.interfaces.clear();
            return Ok(r);
        }
        let alloc = self
            .embedded()?
            .allocate(&self.holder(), &self.conf.requested_ips)?;
        Ok(CniResult {
            ips: alloc
                .ips
                .into_iter()
                .map(|ip| IpConfig {
                    address: ip.address,
                    gateway: ip.gateway,
                    interface: None,
                })
                .collect(),
            routes: alloc
                .routes
                .into_iter()
                .map(|r| Route::via(r.dst, r.gw))
                .collect(),
            ..CniResult::default()
        })
    }

    pub fn del(&self) -> Result<()> {
        if !self.kind().is_embedded() {
            return self.exec("DEL", &self.conf.raw).map(drop);
        }
        match self
            .embedded()?
            .release(&self.env.container_id, &self.env.ifname)?
        {
            railcni_ipam::Released::Released(ip) => crate::log_info!("released {ip}"),
            railcni_ipam::Released::NotHeld => crate::log_debug!("no lease to release"),
            railcni_ipam::Released::StoreUnreadable(why) => {
                crate::log_error!("cannot release the lease: {why}")
            }
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
            .map_err(|e| Error::Unavailable(e.to_string()))
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
        let plugin = self.find_plugin()?;
        let name = &self.kind().kind;
        let mut child = Proc::new(&plugin)
            .env("CNI_COMMAND", command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::Ipam {
                code: 105,
                msg: format!("cannot run IPAM plugin {}: {e}", plugin.display()),
            })?;
        let input = serde_json::to_vec(stdin)
            .map_err(|e| Error::Internal(format!("encode config: {e}")))?;
        if let Some(mut pipe) = child.stdin.take() {
            // A plugin may exit without reading stdin; its exit status says what happened.
            let _ = pipe.write_all(&input);
        }
        let out = child.wait_with_output().map_err(|e| Error::Ipam {
            code: 105,
            msg: format!("IPAM plugin {name} {command}: {e}"),
        })?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.trim().is_empty() {
            crate::log_debug!("IPAM plugin {name} {command} stderr: {}", stderr.trim());
        }
        if out.status.success() {
            return Ok(out.stdout);
        }
        let err: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let code = err.get("code").and_then(Value::as_u64).unwrap_or(105) as u32;
        let msg = err
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let details = err.get("details").and_then(Value::as_str).unwrap_or("");
        Err(Error::Ipam {
            code,
            msg: format!(
                "IPAM plugin {name} {command} failed ({}): {msg}{}{details}",
                out.status,
                if details.is_empty() { "" } else { ": " }
            ),
        })
    }
}
