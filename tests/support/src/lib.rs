//! Helpers the integration tests of railcni and railcni-ipam share: shell
//! steps that must succeed, and running a CNI binary the way a runtime does
//! (environment set, config on stdin) to read its reply.

pub mod rust_source;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// A backstop inside the root-only fixtures (the fake node, namespaces):
/// a root-only test run without root (`cargo test -- --include-ignored` as
/// an ordinary user, or a test that forgot its tier) fails loudly here.
/// Root-only tests carry `#[ignore = "root: <tier>; scripts/test.sh runs
/// it"]`, so a plain `cargo test` reports them as ignored, never as passed.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (network namespaces); run `sudo scripts/test.sh` (CI does), \
         and mark a root-only test `#[ignore = \"root: <tier>; scripts/test.sh runs it\"]`"
    );
}

/// The seed of a randomized test: `RAILCNI_TEST_SEED` when set (to replay
/// a run), else the clock. Printed past the harness's capture with the
/// line that replays it, so a failure's output always carries it.
pub fn seed(test: &str) -> u64 {
    let clock = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    };
    let given = std::env::var("RAILCNI_TEST_SEED").ok();
    let seed = given.and_then(|s| s.parse().ok()).unwrap_or_else(clock) | 1;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: seed {seed} (replay: RAILCNI_TEST_SEED={seed} cargo test {test})"
    );
    seed
}

pub fn sh(cmd: &str) -> Output {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What a command that must succeed printed.
pub fn out(cmd: &str) -> String {
    String::from_utf8_lossy(&sh(cmd).stdout).into_owned()
}

pub fn sh_ok(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[derive(Debug)]
pub struct Reply {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub json: Value,
}

impl Reply {
    pub fn code(&self) -> Option<u64> {
        self.json.get("code").and_then(Value::as_u64)
    }

    #[track_caller]
    pub fn ok(self) -> Value {
        assert!(
            self.success,
            "railcni failed: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self.json
    }

    /// A failure with any code: the error reply.
    #[track_caller]
    pub fn err_any(self) -> Value {
        assert!(
            !self.success,
            "expected a failure, got success: {}",
            self.stdout
        );
        assert!(
            self.json["code"].is_u64() && self.json["msg"].is_string(),
            "{}",
            self.stdout
        );
        self.json
    }

    #[track_caller]
    pub fn err(self, code: u64) -> Value {
        assert!(
            !self.success,
            "expected failure {code}, got success: {}",
            self.stdout
        );
        assert_eq!(
            self.code(),
            Some(code),
            "stdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        assert!(self.json["msg"].is_string());
        self.json
    }
}

/// Start `cmd` with `stdin` written to it, as a runtime runs a plugin. A
/// child that dies before reading (a crash test) is not an error here.
pub fn spawn_with_stdin(mut cmd: Command, stdin: &Value) -> Child {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()));
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin.to_string().as_bytes());
    }
    child
}

/// Wait for a plugin and read its reply.
pub fn reply(child: Child) -> Reply {
    let out = child.wait_with_output().expect("wait for the plugin");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Reply {
        success: out.status.success(),
        json: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run a plugin to completion with `stdin` as its config.
pub fn run_with_stdin(cmd: Command, stdin: &Value) -> Reply {
    reply(spawn_with_stdin(cmd, stdin))
}

/// Arbitrary JSON for property tests, leaning towards the keys and shapes
/// railcni's parsers look at, so the interesting paths are reached.
pub fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    const KEYS: &[&str] = &[
        "cniVersion",
        "name",
        "type",
        "deviceID",
        "pciBusID",
        "mtu",
        "mac",
        "ipam",
        "cidr",
        "perNodePrefix",
        "gatewayIndex",
        "staticAllocations",
        "nodes",
        "nodeName",
        "prefix",
        "gateway",
        "exclusions",
        "start",
        "end",
        "routes",
        "dst",
        "gw",
        "routing",
        "table",
        "rulePriority",
        "sysctl",
        "vlan",
        "vlanQoS",
        "vlanProto",
        "spoofchk",
        "trust",
        "link_state",
        "min_tx_rate",
        "max_tx_rate",
        "rdma",
        "runtimeConfig",
        "ips",
        "args",
        "cni",
        "prevResult",
        "interfaces",
        "interface",
        "address",
        "version",
        "logFile",
        "logLevel",
        "leases",
        "containerID",
        "ifname",
        "data",
        "checksum",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,24}".prop_map(Value::from),
        prop_oneof![
            Just("1.1.0"),
            Just("0.3.1"),
            Just("172.16.0.0/15"),
            Just("fd00::/31"),
            Just("172.16.0.1"),
            Just("02:00:00:00:00:01"),
            Just("0000:3b:02.0"),
            Just("net.ipv4.conf.IFNAME.rp_filter"),
            Just("railcni-ipam"),
            Just("on"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// Every `.rs` file under `dir`, at any depth (the tests that read the
/// tree's sources: its module graph, the names its comments give).
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// README.md and every page of docs/ under the repository `root`, in order
/// (the tests that hold the docs to the tree and the CLI).
pub fn markdown_docs(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    std::iter::once(root.join("README.md"))
        .chain(docs)
        .collect()
}

/// The lines of a Markdown text outside its fenced code blocks.
pub fn prose_lines(text: &str) -> Vec<&str> {
    let mut in_block = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                return false;
            }
            !in_block
        })
        .collect()
}
