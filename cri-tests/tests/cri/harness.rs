//! containerd's CRI, driven the way kubelet drives it, on a fake SR-IOV
//! node: Debian's containerd (1.6) started by the test with a config, root,
//! state and sockets of its own under a temp dir (nothing in /etc or
//! /run/containerd), in the node's host namespace, with railcni,
//! railcni-ipam and loopback in its CNI bin dir, and a pause image built
//! offline. The client is `k8s-cri` over tonic on the unix socket.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    LinuxPodSandboxConfig, ListPodSandboxRequest, PodSandboxConfig, PodSandboxMetadata,
    PodSandboxStatusRequest, RemovePodSandboxRequest, RunPodSandboxRequest, StopPodSandboxRequest,
};
use serde_json::Value;
use tonic::transport::{Channel, Endpoint};

use crate::common::{Node, PLUGIN, REFERENCE_PLUGINS};

pub const PAUSE_IMAGE: &str = "railcni.test/pause:1";

/// A running containerd of the test's own.
pub struct Containerd {
    pub dir: PathBuf,
    host: String,
    env: Vec<(String, String)>,
    child: Option<Child>,
    pub rt: tokio::runtime::Runtime,
    client: Option<RuntimeServiceClient<Channel>>,
}

impl Containerd {
    /// Start containerd for `node` with `conflist` as its CNI config.
    pub fn start(node: &Node, conflist: &Value) -> Containerd {
        let dir = node.dir.path().join("containerd");
        for d in ["bin", "net.d", "root", "state", "runc", "logs"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let ipam = Path::new(PLUGIN).with_file_name("railcni-ipam");
        // railcni behind a one-line tracer: every call's verb, netns and
        // ifname, as containerd makes it.
        std::fs::copy(PLUGIN, dir.join("railcni.real")).unwrap();
        std::fs::write(
            dir.join("bin/railcni"),
            format!(
                "#!/bin/sh\necho \"$CNI_COMMAND netns=$CNI_NETNS ifname=$CNI_IFNAME\" >> {}\nexec {} \"$@\"\n",
                dir.join("calls").display(),
                dir.join("railcni.real").display()
            ),
        )
        .unwrap();
        let chmod = Command::new("chmod")
            .arg("+x")
            .arg(dir.join("bin/railcni"))
            .status();
        assert!(chmod.is_ok_and(|s| s.success()));
        for (from, name) in [
            (ipam, "railcni-ipam"),
            (Path::new(REFERENCE_PLUGINS).join("loopback"), "loopback"),
            // For comparison runs: Debian's bridge with host-local.
            (Path::new(REFERENCE_PLUGINS).join("bridge"), "bridge"),
            (
                Path::new(REFERENCE_PLUGINS).join("host-local"),
                "host-local",
            ),
        ] {
            std::fs::copy(&from, dir.join("bin").join(name))
                .unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
        std::fs::write(dir.join("config.toml"), config(&dir)).unwrap();
        let mut c = Containerd {
            env: node.env_vars(),
            host: node.host(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            dir,
            child: None,
            client: None,
        };
        c.set_conflist(conflist);
        import_pause_image(&c);
        c.restart();
        c
    }

    /// Replace the CNI config (containerd reloads it).
    pub fn set_conflist(&self, conflist: &Value) {
        let path = self.dir.join("net.d/10-railcni.conflist");
        std::fs::write(path, serde_json::to_string_pretty(conflist).unwrap()).unwrap();
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("containerd.sock")
    }

    /// (Re)start the daemon and wait for its CRI.
    pub fn restart(&mut self) {
        let log = std::fs::File::create(self.dir.join("logs/containerd.log")).unwrap();
        // nsenter, not `ip netns exec`: that remounts /sys for the netns,
        // which hides the cgroup mounts runc needs.
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net=/var/run/netns/{}", self.host))
            .args(["containerd", "--config"])
            .arg(self.dir.join("config.toml"))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(
            cmd.spawn()
                .expect("containerd (Debian's package; scripts/install-test-deps.sh)"),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(client) = self.rt.block_on(connect(&self.socket())) {
                self.client = Some(client);
                let mut c = self.client.clone().unwrap();
                if self
                    .rt
                    .block_on(c.version(k8s_cri::v1::VersionRequest::default()))
                    .is_ok()
                {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "containerd's CRI did not come up: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.client = None;
    }

    /// The CNI calls containerd made: "VERB netns=… ifname=…" per line.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("logs/containerd.log")).unwrap_or_default()
    }

    fn client(&self) -> RuntimeServiceClient<Channel> {
        self.client.clone().expect("containerd is not running")
    }

    fn sandbox_config(&self, name: &str, extra: &[(&str, &str)]) -> PodSandboxConfig {
        let mut annotations = HashMap::from([("railcni.test/pod".into(), name.into())]);
        annotations.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: name.into(),
                uid: format!("uid-{name}"),
                namespace: "ml".into(),
                attempt: 0,
            }),
            hostname: name.into(),
            log_directory: self.dir.join("logs").display().to_string(),
            annotations,
            linux: Some(LinuxPodSandboxConfig::default()),
            ..PodSandboxConfig::default()
        }
    }

    /// RunPodSandbox; the sandbox ID or the error containerd gave.
    pub fn run(&self, name: &str) -> Result<String, String> {
        self.run_annotated(name, &[])
    }

    /// RunPodSandbox of a pod with these annotations besides the test's own.
    pub fn run_annotated(
        &self,
        name: &str,
        annotations: &[(&str, &str)],
    ) -> Result<String, String> {
        let req = RunPodSandboxRequest {
            config: Some(self.sandbox_config(name, annotations)),
            runtime_handler: String::new(),
        };
        self.rt
            .block_on(self.client().run_pod_sandbox(req))
            .map(|r| r.into_inner().pod_sandbox_id)
            .map_err(|s| s.message().to_string())
    }

    /// PodSandboxStatus: (state 0 = READY, IP, netns path from the verbose info).
    pub fn status(&self, id: &str) -> (i32, String, String) {
        let req = PodSandboxStatusRequest {
            pod_sandbox_id: id.into(),
            verbose: true,
        };
        let r = self
            .rt
            .block_on(self.client().pod_sandbox_status(req))
            .unwrap()
            .into_inner();
        let status = r.status.unwrap_or_default();
        let ip = status.network.map(|n| n.ip).unwrap_or_default();
        let info: Value = serde_json::from_str(r.info.get("info").map_or("{}", |s| s.as_str()))
            .unwrap_or_default();
        let netns = info["runtimeSpec"]["linux"]["namespaces"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["type"] == "network"))
            .and_then(|n| n["path"].as_str())
            .unwrap_or_default()
            .to_string();
        (status.state, ip, netns)
    }

    pub fn stop(&self, id: &str) -> Result<(), String> {
        let req = StopPodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        self.rt
            .block_on(self.client().stop_pod_sandbox(req))
            .map(drop)
            .map_err(|s| s.message().to_string())
    }

    pub fn remove(&self, id: &str) -> Result<(), String> {
        let req = RemovePodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        self.rt
            .block_on(self.client().remove_pod_sandbox(req))
            .map(drop)
            .map_err(|s| s.message().to_string())
    }

    /// The IDs of the sandboxes containerd knows.
    pub fn list(&self) -> Vec<String> {
        let r = self
            .rt
            .block_on(
                self.client()
                    .list_pod_sandbox(ListPodSandboxRequest::default()),
            )
            .unwrap()
            .into_inner();
        r.items.into_iter().map(|s| s.id).collect()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // Sandboxes the test left: stop and remove, so no pause or netns stays.
        if self.client.is_some() {
            for id in self.list() {
                let _ = self.stop(&id);
                let _ = self.remove(&id);
            }
        }
        self.kill();
        let _ = Command::new("umount")
            .arg("-R")
            .arg(self.dir.join("state"))
            .output();
    }
}

async fn connect(socket: &Path) -> Result<RuntimeServiceClient<Channel>, tonic::transport::Error> {
    let socket = socket.to_path_buf();
    let channel = Endpoint::try_from("http://[::]:50051")?
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await?;
    Ok(RuntimeServiceClient::new(channel))
}

fn config(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{d}/containerd.sock"
[ttrpc]
  address = "{d}/containerd.sock.ttrpc"
[debug]
  address = "{d}/debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{d}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{d}/bin"
    conf_dir = "{d}/net.d"
"#
    )
}

/// A pause image, built offline: a static C program that waits for a
/// signal, in a docker-save tarball, imported with `ctr`.
fn import_pause_image(c: &Containerd) {
    let dir = c.dir.join("pause");
    std::fs::create_dir_all(dir.join("rootfs")).unwrap();
    std::fs::write(
        dir.join("pause.c"),
        "#include <signal.h>\n#include <unistd.h>\n#include <stdlib.h>\n\
         static void done(int s) { (void)s; exit(0); }\n\
         int main(void) { signal(SIGTERM, done); signal(SIGINT, done); for (;;) pause(); }\n",
    )
    .unwrap();
    let sh = |cmd: String| {
        let out = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let d = dir.display();
    sh(format!("cc -static -O2 -o {d}/rootfs/pause {d}/pause.c"));
    sh(format!("tar -C {d}/rootfs -cf {d}/layer.tar pause"));
    let diff = sh(format!("sha256sum {d}/layer.tar | cut -d' ' -f1"));
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/pause"]},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{diff}")]}
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let manifest = serde_json::json!([{"Config": "config.json", "RepoTags": [PAUSE_IMAGE], "Layers": ["layer.tar"]}]);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    sh(format!(
        "tar -C {d} -cf {d}/image.tar manifest.json config.json layer.tar"
    ));
    // ctr needs the daemon: a short-lived one just for the import.
    let mut daemon = Command::new("containerd")
        .arg("--config")
        .arg(c.dir.join("config.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sock = c.socket();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(
            Instant::now() < deadline,
            "containerd did not start for the import"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut imported = false;
    while Instant::now() < deadline && !imported {
        imported = Command::new("ctr")
            .args(["-a"])
            .arg(&sock)
            .args(["-n", "k8s.io", "images", "import"])
            .arg(dir.join("image.tar"))
            .output()
            .is_ok_and(|o| o.status.success());
        if !imported {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert!(imported, "ctr images import failed");
}
