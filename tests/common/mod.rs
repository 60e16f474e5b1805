//! Test harness: a fake SR-IOV node (scripts/fake-node.sh) in network
//! namespaces, and a way to run railcni against it like a runtime does.
#![allow(dead_code)]

pub use support::*;

pub mod deploy;
pub mod fabric;
pub mod holder;
pub mod plan_rows;
pub mod strace;
pub mod vm;

#[allow(unused_imports)]
pub use holder::Holder;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_railcni");
/// The operator commands (`railcnictl status` …): a binary of its own
/// package (`ctl/`), built beside the plugin by `cargo test --workspace`.
pub fn ctl() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path = Path::new(PLUGIN).with_file_name("railcnictl");
        assert!(
            path.exists(),
            "{} is missing: build it with `cargo build -p railcnictl` (cargo test --workspace does)",
            path.display()
        );
        path.to_string_lossy().into_owned()
    })
}
pub const REFERENCE_PLUGINS: &str = "/usr/lib/cni";

#[derive(Debug, Clone)]
pub struct FakeVf {
    pub rail: u32,
    pub index: u32,
    pub pci: String,
    pub ifname: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub name: String,
    pub ifindex: u32,
    pub mtu: u32,
    pub mac: String,
    pub up: bool,
}

pub struct Node {
    pub prefix: String,
    pub dir: tempfile::TempDir,
    pub vfs: Vec<FakeVf>,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Node {
    pub fn new(rails: u32, vfs_per_rail: u32) -> Node {
        require_root();
        let prefix = format!(
            "rc{}x{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new(script("fake-node.sh"))
            .args(["up", &prefix, &dir.path().join("sys").display().to_string()])
            .args([rails.to_string(), vfs_per_rail.to_string()])
            .output()
            .expect("run fake-node.sh");
        assert!(
            out.status.success(),
            "fake-node.sh up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let vfs = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                FakeVf {
                    rail: f[0].parse().unwrap(),
                    index: f[1].parse().unwrap(),
                    pci: f[2].into(),
                    ifname: f[3].into(),
                }
            })
            .collect();
        let node = Node { prefix, dir, vfs };
        node.reboot("boot-1");
        std::fs::write(node.machine_id_file(), format!("{}\n", Node::MACHINE_ID)).unwrap();
        node
    }

    /// The node file every call on this node reads (`RAILCNI_NODE_CONFIG`):
    /// absent unless a test writes it.
    pub fn node_config(&self) -> PathBuf {
        self.dir.path().join("no-node-file.json")
    }

    /// This fake node's machine id (`RAILCNI_MACHINE_ID_FILE`).
    pub const MACHINE_ID: &'static str = "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f";

    pub fn machine_id_file(&self) -> PathBuf {
        self.dir.path().join("machine-id")
    }

    /// The node's boot id (`RAILCNI_BOOT_ID`): a new one simulates a reboot.
    pub fn reboot(&self, boot_id: &str) {
        std::fs::write(self.dir.path().join("boot_id"), format!("{boot_id}\n")).unwrap();
    }

    /// The embedded IPAM on rail `rail`'s /15, one /31 per node (this node is
    /// gpu-0, so it has exactly one address).
    pub fn embedded_ipam(rail: u32) -> Value {
        json!({"type": "railcni-ipam", "cidr": format!("172.{}.0.0/15", 14 + 2 * rail), "nodes": ["gpu-0"]})
    }

    /// A pod dies without DEL. Plays the kernel, which hands each of its
    /// VFs back to the host under its pod name (sysfs follows the name).
    pub fn kill_pod(&self, pod: &str, vfs: &[(&FakeVf, &str)]) {
        let ns = Node::ns_of(pod);
        for (vf, ifname) in vfs {
            sh(&format!(
                "ip -n {ns} link set {ifname} netns {} name {ifname}",
                self.host()
            ));
            let net = self.sysfs().join(format!("bus/pci/devices/{}/net", vf.pci));
            std::fs::rename(net.join(&vf.ifname), net.join(ifname)).unwrap();
        }
        sh(&format!("ip netns del {ns}"));
    }

    pub fn host(&self) -> String {
        format!("{}-host", self.prefix)
    }

    pub fn fabric(&self) -> String {
        format!("{}-fabric", self.prefix)
    }

    pub fn sysfs(&self) -> PathBuf {
        self.dir.path().join("sys")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Create a pod namespace; returns its path (CNI_NETNS).
    pub fn pod(&self, name: &str) -> String {
        let ns = format!("{}-{name}", self.prefix);
        sh(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        format!("/var/run/netns/{ns}")
    }

    /// Create a pod namespace that the kernel gives the nsfs inode `ino`, a
    /// dead namespace's. It hands inodes out lowest-free once the dead one
    /// is freed (asynchronously, by its cleanup work): namespaces that get
    /// a lower free number are kept until one gets `ino`, then removed.
    pub fn pod_reusing_inode(&self, name: &str, ino: u64) -> String {
        let mut fillers = Vec::new();
        let mut found = None;
        for i in 0..400 {
            let path = self.pod(&format!("{name}{i}"));
            let got = Node::inode_of(&path);
            if got == ino {
                found = Some(path);
                break;
            } else if got < ino {
                fillers.push(path);
            } else {
                sh(&format!("ip netns del {}", Node::ns_of(&path)));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        for filler in fillers {
            sh(&format!("ip netns del {}", Node::ns_of(&filler)));
        }
        found.unwrap_or_else(|| {
            panic!("the kernel never gave a new namespace the freed inode {ino}")
        })
    }

    /// The nsfs inode of the namespace at `path`.
    pub fn inode_of(path: &str) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
    }

    /// The namespace at `path` as the fake hardware names where an RDMA
    /// device is (`ns:<inode>`).
    pub fn ns_inode(path: &str) -> String {
        format!("ns:{}", Node::inode_of(path))
    }

    pub fn ns_of(path: &str) -> String {
        Path::new(path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// A host-local IPAM section with its data under this node's temp dir.
    pub fn host_local(&self, subnet: &str) -> Value {
        json!({
            "type": "host-local",
            "dataDir": self.dir.path().join("host-local").display().to_string(),
            "ranges": [[{"subnet": subnet}]],
            "routes": [{"dst": "172.16.0.0/12"}]
        })
    }

    /// The usual rail1 config for `vf` at 1.0.0 with host-local on 172.16.0.0/24.
    pub fn rail1_conf(&self, vf: &FakeVf) -> Value {
        conf("1.0.0", "rail1", &vf.pci, self.host_local("172.16.0.0/24"))
    }

    pub fn host_local_leases(&self, network: &str) -> Vec<String> {
        let dir = self.dir.path().join("host-local").join(network);
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.retain(|n| n.parse::<std::net::IpAddr>().is_ok());
        v
    }

    /// The recording stand-in for PF-side VF settings and RDMA netlink.
    pub fn hardware_file(&self) -> PathBuf {
        self.dir.path().join("hardware.json")
    }

    pub fn hardware(&self) -> Value {
        std::fs::read(self.hardware_file())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null)
    }

    pub fn set_hardware(&self, state: Value) {
        std::fs::write(self.hardware_file(), state.to_string()).unwrap();
    }

    /// A driver reload as the netdev side sees it: the netdev `ifname` of
    /// the pod at `pod` comes back to the host as `host_name` with a new
    /// ifindex (its old one is taken there, so the kernel renumbers it).
    pub fn reload_netdev(&self, pod: &str, ifname: &str, host_name: &str) {
        let ns = Node::ns_of(pod);
        let index = link_in(&ns, ifname).unwrap().ifindex;
        let holder = format!("h{}", std::process::id() % 100_000_000);
        let host = self.host();
        sh(&format!(
            "ip -n {host} link add {holder} index {index} type veth peer name {holder}p"
        ));
        sh(&format!(
            "ip -n {ns} link set {ifname} netns {host} name {host_name}"
        ));
        sh(&format!("ip -n {host} link del {holder}"));
    }

    /// A driver reload as the RDMA subsystem sees it: the VF's RDMA device
    /// `name` is destroyed and a new one registered on the host (the fake
    /// forgets where the old one was moved).
    pub fn reload_rdma_device(&self, name: &str) {
        let mut state = self.hardware();
        if let Some(moved) = state["rdmaDevices"].as_object_mut() {
            moved.remove(name);
        }
        self.set_hardware(state);
    }

    pub fn record_exists(&self, pci: &str) -> bool {
        self.state_dir()
            .join("attachments")
            .join(format!("{pci}.json"))
            .exists()
    }

    pub fn link(&self, ns: &str, name: &str) -> Option<LinkState> {
        link_in(ns, name)
    }

    /// Where this node's configfs is (rdma_cm's groups).
    pub fn configfs(&self) -> PathBuf {
        self.dir.path().join("configfs")
    }

    /// Give `vf` an RDMA device in the fake sysfs.
    pub fn give_rdma_device(&self, vf: &FakeVf, name: &str) {
        std::fs::create_dir_all(
            self.sysfs()
                .join(format!("devices/pci0000:00/{}/infiniband/{name}", vf.pci)),
        )
        .unwrap();
    }

    /// Run a day-2 command (`railcnictl status` …) on this node: exit code,
    /// stdout, stderr.
    pub fn operator(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.operator_command(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A day-2 command on this node, to run or spawn.
    pub fn operator_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host(), ctl()]).args(args);
        self.node_env(&mut cmd).env("COLUMNS", "200");
        cmd
    }

    /// `operator` with `--json`, parsed.
    pub fn operator_json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let (code, out, err) = self.operator(&all);
        let v =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}\n{err}"));
        (code, v)
    }

    /// The node's environment, and nothing else: where railcni reads and
    /// writes on this fake node.
    fn node_env<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_clear().envs(self.env_vars())
    }

    /// The variables that point railcni at this node (and PATH).
    pub fn env_vars(&self) -> Vec<(String, String)> {
        let path = |p: PathBuf| p.display().to_string();
        [
            ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin".to_string()),
            ("RAILCNI_SYSFS_ROOT", path(self.sysfs())),
            ("RAILCNI_STATE_DIR", path(self.state_dir())),
            ("RAILCNI_FAKE_HARDWARE", path(self.hardware_file())),
            ("RAILCNI_BOOT_ID", path(self.dir.path().join("boot_id"))),
            ("RAILCNI_NODE_NAME", "gpu-0".to_string()),
            ("RAILCNI_NODE_CONFIG", path(self.node_config())),
            ("RAILCNI_LOG_DIR", path(self.dir.path().join("logs"))),
            ("RAILCNI_CONFIGFS_ROOT", path(self.configfs())),
            ("RAILCNI_MACHINE_ID_FILE", path(self.machine_id_file())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Run railcni in the node's host namespace with a CNI request.
    pub fn cni(&self, req: &Req) -> Reply {
        self.cni_with_path(req, &[REFERENCE_PLUGINS])
    }

    pub fn cni_with_path(&self, req: &Req, cni_path: &[&str]) -> Reply {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host()])
            .args(&req.wrap)
            .arg(PLUGIN);
        self.node_env(&mut cmd)
            .env("CNI_COMMAND", &req.command)
            .env("CNI_CONTAINERID", &req.container_id)
            .env("CNI_NETNS", req.netns.as_deref().unwrap_or(""))
            .env("CNI_IFNAME", &req.ifname)
            .env("CNI_PATH", cni_path.join(":"));
        if let Some(args) = &req.args {
            cmd.env("CNI_ARGS", args);
        }
        for (k, v) in &req.env {
            cmd.env(k, v);
        }
        run_with_stdin(cmd, &req.conf)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = Command::new(script("fake-node.sh"))
            .args(["down", &self.prefix, &self.sysfs().display().to_string()])
            .output();
    }
}

/// `railcnictl plan PLAN ARGS…` (the plan must be accepted): its stdout.
pub fn plan_emit(plan: &Path, args: &[&str]) -> String {
    let out = Command::new(ctl())
        .arg("plan")
        .arg(plan)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "plan {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `railcnictl ARGS…` run in `dir` (it must succeed): its stdout.
pub fn ctl_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(ctl())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "railcnictl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The network config of each NAD in `plan --emit nads` output, in order.
pub fn nad_configs(yaml: &str) -> Vec<Value> {
    yaml.split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            let doc: Value = serde_yaml_ng::from_str(d).unwrap();
            serde_json::from_str(doc["spec"]["config"].as_str().unwrap()).unwrap()
        })
        .collect()
}

/// The repository: this package's root, or the one a package of tests
/// elsewhere names (`cri-tests/build.rs`).
pub fn repo() -> &'static Path {
    Path::new(option_env!("RAILCNI_REPO_ROOT").unwrap_or(env!("CARGO_MANIFEST_DIR")))
}

pub fn script(name: &str) -> PathBuf {
    repo().join("scripts").join(name)
}

pub fn link_in(ns: &str, name: &str) -> Option<LinkState> {
    let out = Command::new("ip")
        .args(["-n", ns, "-j", "link", "show", "dev", name])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let l = v.get(0)?;
    Some(LinkState {
        name: l["ifname"].as_str()?.to_string(),
        ifindex: l["ifindex"].as_u64()? as u32,
        mtu: l["mtu"].as_u64()? as u32,
        mac: l["address"].as_str()?.to_string(),
        up: l["flags"].as_array()?.iter().any(|f| f == "UP"),
    })
}

pub fn addresses_in(ns: &str, name: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-n", ns, "-j", "addr", "show", "dev", name])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.get(0)
        .and_then(|l| l["addr_info"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|a| a["family"] == "inet")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"]))
        .collect()
}

#[derive(Debug, Clone)]
pub struct Req {
    pub command: String,
    pub container_id: String,
    pub netns: Option<String>,
    pub ifname: String,
    pub args: Option<String>,
    pub conf: Value,
    pub env: Vec<(String, String)>,
    /// A command the plugin runs under (e.g. strace), empty for none.
    pub wrap: Vec<String>,
}

impl Req {
    pub fn new(command: &str, container_id: &str, netns: &str, ifname: &str, conf: Value) -> Req {
        Req {
            command: command.into(),
            container_id: container_id.into(),
            netns: Some(netns.into()),
            ifname: ifname.into(),
            args: None,
            conf,
            env: vec![],
            wrap: vec![],
        }
    }

    pub fn cmd(&self, command: &str) -> Req {
        Req {
            command: command.into(),
            ..self.clone()
        }
    }

    /// The request run in a private mount namespace that `setup` (sh)
    /// prepares first: a container's view of the host, a read-only state dir.
    pub fn in_mount_namespace(mut self, setup: &str) -> Req {
        let script = format!("set -e\n{setup}\nexec \"$@\"");
        self.wrap = [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "mnt",
        ]
        .map(String::from)
        .to_vec();
        self
    }

    pub fn with_conf(&self, conf: Value) -> Req {
        Req {
            conf,
            ..self.clone()
        }
    }
}

/// Build `tests/<name>/main.go` offline against Debian's Go packages
/// (/usr/share/gocode), as a real CNI client to drive railcni with.
pub fn build_go_driver(dir: &Path, name: &str) -> PathBuf {
    let gopath = dir.join("gopath");
    let src = gopath.join(format!("src/{name}-driver"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(
        repo().join(format!("tests/{name}/main.go")),
        src.join("main.go"),
    )
    .unwrap();
    let bin = dir.join(format!("{name}-driver"));
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", format!("{}:/usr/share/gocode", gopath.display()))
        .env("GOCACHE", dir.join("gocache"))
        .output()
        .expect("`go` must be installed (scripts/install-test-deps.sh installs it and the Go CNI libraries)");
    assert!(
        out.status.success(),
        "go build {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// `conf` with the ADD result as `prevResult`, for CHECK.
pub fn with_prev(conf: &Value, prev: &Value) -> Value {
    let mut c = conf.clone();
    c["prevResult"] = prev.clone();
    c
}

/// A railcni network config for one VF.
pub fn conf(version: &str, name: &str, pci: &str, ipam: Value) -> Value {
    json!({"cniVersion": version, "name": name, "type": "railcni", "deviceID": pci, "ipam": ipam})
}

/// Write an executable IPAM stand-in into `dir` that logs each call to
/// `<dir>/<name>.calls` and answers ADD with `add_reply` (exit code `add_rc`).
pub fn fake_ipam(dir: &Path, name: &str, add_reply: &Value, add_rc: i32) -> PathBuf {
    let path = dir.join(name);
    let calls = dir.join(format!("{name}.calls"));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> {calls}\n\
             if [ \"$CNI_COMMAND\" = ADD ]; then echo '{reply}'; exit {add_rc}; fi\nexit 0\n",
            calls = calls.display(),
            reply = add_reply
        ),
    )
    .unwrap();
    sh(&format!("chmod +x {}", path.display()));
    calls
}

/// The lease file's checksum as its format defines it: FNV-1a 64 over the
/// compact encoding of `data`.
pub fn fnv1a64(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("fnv1a64:{hash:016x}")
}

/// JSON without the whitespace between tokens, keys in their order.
pub fn minify(text: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// The text of `network`'s lease file on `node` (empty when there is none).
pub fn leases_of(node: &Node, network: &str) -> String {
    std::fs::read_to_string(node.state_dir().join(format!("ipam/{network}.leases.json")))
        .unwrap_or_default()
}

/// rail1's lease file on `node`.
pub fn leases(node: &Node) -> String {
    leases_of(node, "rail1")
}

/// An ADD of `vf` as net1 of container `name` in `pod`, on rail1 with its
/// one /31 on this node.
pub fn rail1(name: &str, pod: &str, vf: &FakeVf) -> Req {
    Req::new(
        "ADD",
        name,
        pod,
        "net1",
        conf("1.1.0", "rail1", &vf.pci, Node::embedded_ipam(1)),
    )
}

/// The first address of a CNI result (`""` when there is none).
pub fn address(result: &Value) -> String {
    result["ips"][0]["address"]
        .as_str()
        .unwrap_or("")
        .to_string()
}
