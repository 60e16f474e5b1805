//! The railcni-ipam binary under contention and under kill -9: the lease file
//! stays valid and never holds an address twice.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use railcni_ipam::store::LeaseStore;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_railcni-ipam");

fn conf(prefix_len: u8) -> Value {
    json!({"cniVersion": "1.1.0", "name": "rail1",
           "ipam": {"type": "railcni-ipam", "cidr": "10.10.0.0/16", "perNodePrefix": prefix_len, "nodes": ["gpu-0"]}})
}

fn spawn(state: &Path, command: &str, cid: &str, conf: &Value) -> std::process::Child {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", cid)
        .env("CNI_IFNAME", "net1")
        .env("CNI_NETNS", "/var/run/netns/ipam-test")
        .env(
            "CNI_ARGS",
            format!("IgnoreUnknown=true;K8S_POD_NAMESPACE=ml;K8S_POD_NAME={cid}"),
        )
        .env("RAILCNI_STATE_DIR", state)
        .env("RAILCNI_NODE_NAME", "gpu-0")
        .env("RAILCNI_NODE_CONFIG", state.join("no-node-file.json"));
    support::spawn_with_stdin(cmd, conf)
}

fn reply(child: std::process::Child) -> (bool, Value) {
    let r = support::reply(child);
    (r.success, r.json)
}

/// Load the store as the plugin would and check no address is leased twice.
fn assert_store_sound(state: &Path) -> usize {
    let data = LeaseStore::new(
        &state.join("ipam"),
        "rail1",
        base::settings::DEFAULT_LOCK_TIMEOUT,
    )
    .read()
    .expect("lease file loads and verifies");
    let mut seen = HashSet::new();
    for l in &data.leases {
        assert!(seen.insert(l.address), "{} leased twice", l.address);
    }
    data.leases.len()
}

#[test]
fn thirty_two_processes_race_for_five_addresses() {
    let t = tempfile::tempdir().unwrap();
    let conf = conf(29); // 8 addresses: network, broadcast, gateway out: 5 usable
    let children: Vec<_> = (0..32)
        .map(|i| spawn(t.path(), "ADD", &format!("c{i}"), &conf))
        .collect();
    let replies: Vec<(bool, Value)> = children.into_iter().map(reply).collect();
    let winners: Vec<usize> = (0..32).filter(|&i| replies[i].0).collect();
    assert_eq!(winners.len(), 5);
    let addrs: HashSet<String> = winners
        .iter()
        .map(|&i| {
            replies[i].1["ips"][0]["address"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(addrs.len(), 5, "no duplicates: {addrs:?}");
    for (ok, r) in &replies {
        if !ok {
            assert_eq!(r["code"], 110, "{r}");
            assert!(r["details"].as_str().unwrap().contains("exhausted"), "{r}");
        }
    }
    assert_eq!(assert_store_sound(t.path()), 5);

    // Now winners release while the losers try again, all at once.
    let children: Vec<_> = (0..32)
        .map(|i| {
            let cmd = if winners.contains(&i) { "DEL" } else { "ADD" };
            spawn(t.path(), cmd, &format!("c{i}"), &conf)
        })
        .collect();
    let replies: Vec<(bool, Value)> = children.into_iter().map(reply).collect();
    for (i, (ok, r)) in replies.iter().enumerate() {
        assert!(*ok || r["code"] == 110, "caller {i}: {r}");
    }
    let held = assert_store_sound(t.path());
    let new_winners = (0..32)
        .filter(|i| !winners.contains(i) && replies[*i].0)
        .count();
    assert_eq!(held, new_winners, "every success holds exactly one lease");
    assert!(held <= 5);
}

/// How many kills must land inside a lease file write.
const MID_WRITE_KILLS: usize = 5;

/// Whether a killed writer's temp file is in `dir` (`.<file>.<hex>.tmp`).
fn temp_left(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
}

#[test]
fn kill_9_at_random_points_never_tears_or_doubles_the_store() {
    let t = tempfile::tempdir().unwrap();
    let conf = conf(24);
    // A fuller file makes each write longer, so kills land inside writes.
    for i in 0..150 {
        assert!(reply(spawn(t.path(), "ADD", &format!("base{i}"), &conf)).0);
    }
    // Kill anywhere within one run's measured lifetime.
    let started = std::time::Instant::now();
    for i in 0..5 {
        assert!(reply(spawn(t.path(), "ADD", &format!("calib{i}"), &conf)).0);
        assert!(reply(spawn(t.path(), "DEL", &format!("calib{i}"), &conf)).0);
    }
    let window_us = (started.elapsed().as_micros() / 10).max(1) as u64;
    let mut seed = support::seed("kill_9_at_random_points_never_tears_or_doubles_the_store");
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    // Kill until kills have landed inside writes (a killed writer leaves its
    // temp file, which the next writer sweeps): a kill between writes proves
    // nothing about tearing.
    let (mut rounds, mut inside_writes) = (0, 0);
    // Under load kills land inside writes more rarely: more rounds, not a
    // weaker bar (a run stops as soon as it has its five).
    while inside_writes < MID_WRITE_KILLS && rounds < 5000 {
        rounds += 1;
        let cid = format!("k{}", next() % 40);
        let cmd = if next() % 3 == 0 { "DEL" } else { "ADD" };
        let mut child = spawn(t.path(), cmd, &cid, &conf);
        std::thread::sleep(std::time::Duration::from_micros(next() % window_us));
        let _ = child.kill();
        let _ = child.wait();
        if temp_left(&t.path().join("ipam")) {
            inside_writes += 1;
        }
        let held = assert_store_sound(t.path());
        assert!(held >= 150, "round {rounds}: base leases lost ({held})");
    }
    eprintln!("kill -9: {rounds} kills, {inside_writes} inside a write");
    assert!(
        inside_writes >= MID_WRITE_KILLS,
        "only {inside_writes} of {rounds} kills landed inside a write: the test proved little"
    );
    // And the store still works afterwards.
    assert!(reply(spawn(t.path(), "ADD", "after", &conf)).0);
    assert_store_sound(t.path());
}

/// A node file naming an IPv6 prefix with no cidr once made railcni-ipam
/// enumerate 2^97 addresses; now it is a config error, answered within a
/// 256 MiB address-space limit.
#[test]
fn an_ipv6_prefix_without_cidr_is_refused_within_a_memory_limit() {
    let t = tempfile::tempdir().unwrap();
    let node_file = t.path().join("node.json");
    std::fs::write(
        &node_file,
        r#"{"nodeName": "gpu-0", "networks": {"rail1": {"prefix": "fd00::/31"}}}"#,
    )
    .unwrap();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -v 262144 && exec \"$0\"", BIN])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_IFNAME", "net1")
        .env("CNI_NETNS", "/var/run/netns/ipam-test")
        .env("RAILCNI_STATE_DIR", t.path())
        .env("RAILCNI_NODE_CONFIG", &node_file);
    let conf = json!({"cniVersion": "1.1.0", "name": "rail1", "ipam": {"type": "railcni-ipam"}});
    let r = support::run_with_stdin(cmd, &conf);
    assert!(!r.success, "{}", r.stdout);
    assert_eq!(r.json["code"], 7, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.json["details"].as_str().unwrap_or("").contains("2^97"),
        "{}",
        r.stdout
    );
}

/// From a terminal (no CNI_* variable), `railcni-ipam --help` answers at
/// once even with stdin left open: it never waits for a config.
#[test]
fn help_never_waits_for_stdin() {
    let mut child = Command::new(BIN)
        .arg("--help")
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "railcni-ipam --help is waiting for stdin"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("IPAM plugin"));
}

/// The IPAM binary logs like railcni: to the config's `logFile` inside
/// RAILCNI_LOG_DIR, one timestamped line per event naming the invocation.
#[test]
fn the_binary_logs_to_the_config_log_file() {
    let t = tempfile::tempdir().unwrap();
    let mut c = conf(31);
    c["logFile"] = json!("ipam.log");
    c["logLevel"] = json!("debug");
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_IFNAME", "net1")
        .env("CNI_NETNS", "/var/run/netns/ipam-test")
        .env("RAILCNI_STATE_DIR", t.path())
        .env("RAILCNI_LOG_DIR", t.path().join("logs"))
        .env("RAILCNI_NODE_NAME", "gpu-0")
        .env("RAILCNI_NODE_CONFIG", t.path().join("no-node-file.json"));
    // gpu-0's /31: one address and the gateway; the second ADD finds it full.
    for cid in ["c1", "c2"] {
        let mut cmd2 = Command::new(BIN);
        cmd2.envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("CNI_CONTAINERID", cid);
        let _ = support::run_with_stdin(cmd2, &c);
    }
    let logged = std::fs::read_to_string(t.path().join("logs/ipam.log")).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains(" error "))
        .unwrap_or_else(|| panic!("the exhausted pool is logged: {logged}"));
    assert!(
        line.contains("railcni-ipam error [Add rail1 c2 net1]"),
        "{line}"
    );
    assert!(
        line.as_bytes()[..4].iter().all(u8::is_ascii_digit)
            && line.contains('T')
            && line.contains("Z "),
        "{line}"
    );
}

/// `matchMasterSubnet` finds the PF from the VF: without a deviceID the
/// binary says so (7), and changes nothing.
#[test]
fn match_master_subnet_needs_a_device_id() {
    let t = tempfile::tempdir().unwrap();
    let c = json!({"cniVersion": "1.1.0", "name": "rail1",
                   "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/16", "matchMasterSubnet": true}});
    let (ok, reply) = reply(spawn(t.path(), "ADD", "c1", &c));
    assert!(!ok);
    assert_eq!(reply["code"], 7, "{reply}");
    assert!(
        reply["details"].as_str().unwrap_or("").contains("deviceID"),
        "{reply}"
    );
    assert!(!t.path().join("ipam/rail1.leases.json").exists());
}

/// DEL releases the attachment's lease by the network's name alone: it
/// neither loads nor validates the pool, so a config that no longer
/// validates (here: the node left the pool) still gets its lease back, and
/// another attachment's lease stays.
#[test]
fn del_releases_by_the_network_whatever_the_pool_says() {
    let t = tempfile::tempdir().unwrap();
    let good = conf(29);
    assert!(reply(spawn(t.path(), "ADD", "keep", &good)).0);
    assert!(reply(spawn(t.path(), "ADD", "gone", &good)).0);
    assert_eq!(assert_store_sound(t.path()), 2);
    let mut broken = good.clone();
    broken["ipam"]["nodes"] = json!(["another-node"]);
    let (ok, out) = reply(spawn(t.path(), "ADD", "third", &broken));
    assert!(!ok, "ADD refuses the broken pool: {out}");
    let (ok, out) = reply(spawn(t.path(), "DEL", "gone", &broken));
    assert!(ok, "DEL with the broken pool: {out}");
    assert_eq!(
        assert_store_sound(t.path()),
        1,
        "only the deleted lease went"
    );
    // Repeated: nothing left to release, still success.
    assert!(reply(spawn(t.path(), "DEL", "gone", &broken)).0);
}
