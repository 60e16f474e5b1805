//! Two fake GPU nodes whose rails meet in a leaf namespace holding every
//! /31 gateway (scripts/fabric.sh), and railcni run on either node.

use std::process::Command;

use serde_json::{json, Value};

use super::*;

pub struct Fabric {
    pub prefix: String,
    pub dir: tempfile::TempDir,
    pub vfs: Vec<FabricVf>,
}

/// A rail VF of the fabric: the fake VF on its node, the node's /31
/// address on that rail and the leaf's gateway.
pub struct FabricVf {
    pub node: String,
    pub vf: FakeVf,
    pub address: String,
    pub gateway: String,
}

impl Fabric {
    /// Two nodes and a leaf, two rails.
    pub fn up() -> Fabric {
        Fabric::up_with(2)
    }

    /// Two nodes and a leaf, `rails` rails.
    pub fn up_with(rails: u32) -> Fabric {
        require_root();
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let prefix = format!("fb{}x{n}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(script("fabric.sh"))
            .args(["up", &prefix])
            .arg(dir.path())
            .arg(rails.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "fabric.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let vfs = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                FabricVf {
                    node: f[0].to_string(),
                    vf: FakeVf {
                        rail: f[1].parse().unwrap(),
                        index: 0,
                        pci: f[2].to_string(),
                        ifname: f[3].to_string(),
                    },
                    address: f[4].to_string(),
                    gateway: f[5].to_string(),
                }
            })
            .collect();
        Fabric { prefix, dir, vfs }
    }

    pub fn host(&self, node: &str) -> String {
        format!(
            "{}{}-host",
            self.prefix,
            if node == "gpu-0" { "a" } else { "b" }
        )
    }

    pub fn vf(&self, node: &str, rail: u32) -> &FabricVf {
        self.vfs
            .iter()
            .find(|v| v.node == node && v.vf.rail == rail)
            .unwrap()
    }

    pub fn pod(&self, name: &str) -> String {
        let ns = format!("{}-{name}", self.prefix);
        sh(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        ns
    }

    pub fn conf(&self, node: &str, rail: u32) -> Value {
        let cidr = format!("172.{}.0.0/15", 14 + 2 * rail);
        json!({
            "cniVersion": "1.1.0", "name": format!("rail{rail}"), "type": "railcni",
            "deviceID": self.vf(node, rail).vf.pci,
            "ipam": {"type": "railcni-ipam", "cidr": cidr, "nodes": ["gpu-0", "gpu-1"],
                     "routes": [{"dst": cidr}, {"dst": "172.16.0.0/12"}]}
        })
    }

    pub fn cni(&self, command: &str, node: &str, pod: &str, rail: u32) -> Reply {
        self.cni_with(command, node, pod, rail, &self.conf(node, rail))
    }

    pub fn cni_with(&self, command: &str, node: &str, pod: &str, rail: u32, conf: &Value) -> Reply {
        self.cni_on(command, node, pod, rail, conf, None)
    }

    /// `node_file`: the node's `/etc/cni/railcni/node.json` (then the node
    /// name comes from it, as on a real node), else none.
    pub fn cni_on(
        &self,
        command: &str,
        node: &str,
        pod: &str,
        rail: u32,
        conf: &Value,
        node_file: Option<&std::path::Path>,
    ) -> Reply {
        let side = if node == "gpu-0" { "a" } else { "b" };
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host(node), PLUGIN])
            .env_clear()
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", pod)
            .env("CNI_NETNS", format!("/var/run/netns/{pod}"))
            .env("CNI_IFNAME", format!("net{rail}"))
            .env("CNI_PATH", "/nonexistent")
            .env(
                "RAILCNI_SYSFS_ROOT",
                self.dir.path().join(format!("{side}-sys")),
            )
            .env(
                "RAILCNI_STATE_DIR",
                self.dir.path().join(format!("{side}-state")),
            )
            .env("RAILCNI_LOG_DIR", self.dir.path().join("logs"));
        match node_file {
            Some(f) => cmd.env("RAILCNI_NODE_CONFIG", f),
            None => cmd.env("RAILCNI_NODE_NAME", node).env(
                "RAILCNI_NODE_CONFIG",
                self.dir.path().join("no-node-file.json"),
            ),
        };
        run_with_stdin(cmd, conf)
    }

    pub fn leaf(&self) -> String {
        format!("{}-leaf", self.prefix)
    }

    /// The leaf's port facing `node`'s VF on `rail`.
    pub fn leaf_port(&self, node: &str, rail: u32) -> String {
        format!("{}r{rail}v0", if node == "gpu-0" { "a" } else { "b" })
    }

    /// `node`'s state directory.
    pub fn state(&self, node: &str) -> std::path::PathBuf {
        let side = if node == "gpu-0" { "a" } else { "b" };
        self.dir.path().join(format!("{side}-state"))
    }

    /// A day-2 command on `node`: exit code, stdout, stderr.
    pub fn operator(&self, node: &str, args: &[&str]) -> (i32, String, String) {
        let side = if node == "gpu-0" { "a" } else { "b" };
        let out = Command::new("ip")
            .args(["netns", "exec", &self.host(node), ctl()])
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("COLUMNS", "200")
            .env(
                "RAILCNI_SYSFS_ROOT",
                self.dir.path().join(format!("{side}-sys")),
            )
            .env("RAILCNI_STATE_DIR", self.state(node))
            .env("RAILCNI_NODE_NAME", node)
            .env(
                "RAILCNI_NODE_CONFIG",
                self.dir.path().join("no-node-file.json"),
            )
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn record(&self, node: &str, rail: u32) -> std::path::PathBuf {
        let side = if node == "gpu-0" { "a" } else { "b" };
        self.dir.path().join(format!(
            "{side}-state/attachments/{}.json",
            self.vf(node, rail).vf.pci
        ))
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        for ns in ["pa", "pb", "cluster"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &format!("{}-{ns}", self.prefix)])
                .output();
        }
        let _ = Command::new(script("fabric.sh"))
            .args(["down", &self.prefix])
            .arg(self.dir.path())
            .output();
    }
}
