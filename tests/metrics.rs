//! `railcnictl metrics` and `railcnictl agent` on the fake node: the families and
//! labels docs/monitoring.md promises, promtool's verdict, the plugin's
//! own counts under concurrency, the agent's HTTP surface and its
//! shutdown. Needs root; `tests/prometheus.rs` scrapes it with Prometheus.
//! The agent runs in the fake node's host namespace, as it does with
//! `hostNetwork` on a real node, so it is reached from there.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// ADD of container `cid` on `vf` as net<rail>, 1.1.0, embedded /29 pool.
fn add(cid: &str, pod: &str, vf: &FakeVf) -> Req {
    let mut ipam = Node::embedded_ipam(vf.rail);
    ipam["perNodePrefix"] = json!(29);
    let conf = conf("1.1.0", &format!("rail{}", vf.rail), &vf.pci, ipam);
    let mut req = Req::new("ADD", cid, pod, &format!("net{}", vf.rail), conf);
    req.args = Some(format!(
        "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME={cid}"
    ));
    req
}

/// The value of the sample whose line starts with `series` (name and labels).
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// RDMA counters for `vf`'s device `dev`, port 1, in the fake sysfs.
fn rdma_counters(node: &Node, vf: &FakeVf, dev: &str) {
    node.give_rdma_device(vf, dev);
    let port = node.sysfs().join(format!(
        "devices/pci0000:00/{}/infiniband/{dev}/ports/1",
        vf.pci
    ));
    std::fs::create_dir_all(port.join("hw_counters")).unwrap();
    std::fs::create_dir_all(port.join("counters")).unwrap();
    std::fs::write(port.join("hw_counters/np_ecn_marked_roce_packets"), "42\n").unwrap();
    std::fs::write(port.join("hw_counters/rp_cnp_handled"), "7\n").unwrap();
    std::fs::write(port.join("hw_counters/lifespan"), "10\n").unwrap();
    std::fs::write(port.join("counters/port_xmit_data"), "123456\n").unwrap();
    std::fs::write(port.join("counters/link_layer_note"), "Ethernet\n").unwrap();
}

fn promtool(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; scripts/install-test-deps.sh)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn metrics_show_pools_calls_interfaces_and_rdma_and_pass_promtool() {
    let node = Node::new(2, 2);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let rail1 = node.vfs.iter().find(|v| v.rail == 1).unwrap().clone();
    let rail2 = node.vfs.iter().find(|v| v.rail == 2).unwrap().clone();
    rdma_counters(&node, &rail1, "mlx5_3");
    let pod = node.pod("a");
    node.cni(&add("trainer-a", &pod, &rail1)).ok();
    node.cni(&add("trainer-a", &pod, &rail2)).ok();
    // A refused ADD: an MTU above the PF's is error 7, and is counted.
    let other = node
        .vfs
        .iter()
        .filter(|v| v.rail == 1)
        .nth(1)
        .unwrap()
        .clone();
    let pod_b = node.pod("b");
    let mut bad = add("trainer-b", &pod_b, &other);
    bad.conf["mtu"] = json!(9100);
    node.cni(&bad).err(7);

    let (code, text, err) = node.operator(&["metrics"]);
    assert_eq!(code, 0, "{err}");
    let (ok, said) = promtool(&text);
    assert!(ok, "promtool check metrics: {said}\n{text}");

    let v =
        |series: &str| value(&text, series).unwrap_or_else(|| panic!("{series} missing:\n{text}"));
    assert_eq!(v(r#"railcni_build_info{version="0.1.0"}"#), 1.0);
    assert_eq!(v(r#"railcni_ipam_leased{network="rail1"}"#), 1.0);
    assert_eq!(
        v(r#"railcni_ipam_capacity{network="rail1"}"#),
        5.0,
        "a /29 less network, broadcast, gateway"
    );
    assert_eq!(
        v(r#"railcni_attachments{network="rail1",phase="attached"}"#),
        1.0
    );
    assert_eq!(
        v(r#"railcni_attachments{network="rail1",phase="adding"}"#),
        0.0,
        "a zero gauge is exported"
    );
    assert_eq!(v(r#"railcni_stale_attachments{network="rail2"}"#), 0.0);
    assert_eq!(
        v(r#"railcni_operations_total{verb="ADD",network="rail1",result="ok",code="0"}"#),
        1.0
    );
    assert_eq!(
        v(r#"railcni_operations_total{verb="ADD",network="rail1",result="error",code="7"}"#),
        1.0
    );
    assert_eq!(
        v(r#"railcni_operation_duration_seconds_count{verb="ADD",network="rail1"}"#),
        2.0
    );
    assert_eq!(
        v(r#"railcni_operation_duration_seconds_bucket{verb="ADD",network="rail1",le="+Inf"}"#),
        2.0
    );
    assert_eq!(v(r#"railcni_reclaimed_leases_total{network="rail1"}"#), 0.0);
    let iface = format!(
        r#"{{network="rail1",ifname="net1",pod="ml/trainer-a",vf="{}"}}"#,
        rail1.pci
    );
    assert_eq!(v(&format!("railcni_interface_mtu{iface}")), 9000.0);
    assert_eq!(v(&format!("railcni_interface_up{iface}")), 1.0);
    assert!(v(&format!("railcni_interface_transmit_packets_total{iface}")) >= 0.0);
    let rdma =
        r#"{network="rail1",ifname="net1",pod="ml/trainer-a",rdma_device="mlx5_3",port="1"}"#;
    assert_eq!(
        v(&format!("railcni_rdma_np_ecn_marked_roce_packets{rdma}")),
        42.0
    );
    assert_eq!(v(&format!("railcni_rdma_rp_cnp_handled{rdma}")), 7.0);
    assert_eq!(v(&format!("railcni_rdma_port_xmit_data{rdma}")), 123456.0);
    assert!(
        text.contains("# TYPE railcni_rdma_rp_cnp_handled gauge"),
        "{text}"
    );
    assert!(
        !text.contains("link_layer_note"),
        "files that are not numbers are skipped"
    );

    let (_, only) = {
        let (c, t, _) = node.operator(&["metrics", "--network", "rail2"]);
        (c, t)
    };
    assert!(
        only.contains(r#"network="rail2""#) && !only.contains(r#"network="rail1""#),
        "{only}"
    );
    for req in [
        add("trainer-a", &pod, &rail1),
        add("trainer-a", &pod, &rail2),
    ] {
        node.cni(&req.cmd("DEL")).ok();
    }
}

/// Eight ADDs at once while the agent is scraped in a loop: every ADD
/// succeeds well inside its lock timeout and every one is counted.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn eight_adds_beside_a_scraped_agent_are_all_counted() {
    let node = Node::new(8, 1);
    let port = free_port();
    let agent = Agent::start(&node, port, &[]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let scrapes = std::thread::scope(|s| {
        let scraper = s.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert_eq!(http_get(&node, port, "/metrics").0, 200);
                n += 1;
            }
            n
        });
        let adds: Vec<_> = node
            .vfs
            .iter()
            .map(|vf| {
                let pod = node.pod(&format!("p{}", vf.rail));
                let mut req = add(&format!("c{}", vf.rail), &pod, vf);
                req.env
                    .push(("RAILCNI_LOCK_TIMEOUT_MS".into(), "2000".into()));
                let node = &node;
                s.spawn(move || node.cni(&req))
            })
            .collect();
        for a in adds {
            a.join().unwrap().ok();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        scraper.join().unwrap()
    });
    assert!(scrapes > 0);
    // A scrape answers from a pass at most a second old.
    let counted = |t: &str| {
        (1..=8).all(|r| {
            let series = format!(
                r#"railcni_operations_total{{verb="ADD",network="rail{r}",result="ok",code="0"}}"#
            );
            value(t, &series).is_some()
        })
    };
    let text = scraped_until(&node, port, counted);
    for rail in 1..=8 {
        let series = format!(
            r#"railcni_operations_total{{verb="ADD",network="rail{rail}",result="ok",code="0"}}"#
        );
        assert_eq!(value(&text, &series), Some(1.0), "{series}\n{text}");
    }
    drop(agent);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_agent_serves_health_and_404_and_stops_on_sigterm() {
    let node = Node::new(1, 1);
    let port = free_port();
    let textfile = node.dir.path().join("textfile");
    std::fs::create_dir_all(&textfile).unwrap();
    let tf = textfile.display().to_string();
    let mut agent = Agent::start(&node, port, &["--textfile", &tf, "--interval", "100ms"]);
    let (status, body) = http_get(&node, port, "/metrics");
    assert_eq!(status, 200);
    assert!(body.contains("railcni_build_info"), "{body}");
    // curl asks for nothing in particular: the 0.0.4 text format, which
    // promtool reads without a complaint.
    assert!(!body.contains("# EOF"), "{body}");
    let (_, said) = promtool(&body);
    assert!(!said.contains("error"), "{said}\n{body}");
    // Prometheus offers OpenMetrics first: it gets OpenMetrics.
    let offered = "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let om = curl(&node, port, "/metrics", &["-s", "-H", offered]);
    assert!(om.ends_with("# EOF\n"), "OpenMetrics ends so: {om}");
    // The doctor's checks, run at start: this node has no node file.
    let series = r#"railcni_node_check{check="cni/node-file",result="broken"} 1"#;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut body = body;
    while !body.contains(series) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        body = http_get(&node, port, "/metrics").1;
    }
    assert!(body.contains(series), "{body}");
    assert!(
        body.contains(r#"railcni_node_check{check="kernel/iommu",result="#),
        "{body}"
    );
    let head = curl(
        &node,
        port,
        "/metrics",
        &["-sS", "-o", "/dev/null", "-D", "-"],
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let head = curl(
        &node,
        port,
        "/metrics",
        &["-sS", "-o", "/dev/null", "-D", "-", "-H", offered],
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert_eq!(http_get(&node, port, "/healthz").0, 200);
    assert_eq!(http_get(&node, port, "/nope").0, 404);
    let prom = textfile.join("railcni.prom");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !prom.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let written = std::fs::read_to_string(&prom).unwrap();
    assert!(written.contains("railcni_build_info"), "{written}");
    // node_exporter's textfile collector parses the 0.0.4 text format as
    // promtool does: a parse error would drop every railcni metric.
    let (_, said) = promtool(&written);
    assert!(!said.contains("error"), "{said}\n{written}");
    assert!(!written.contains("# EOF"), "{written}");

    let pid = nix::unistd::Pid::from_raw(agent.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = agent.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");

    // The state dir unreadable (a file where the directory should be): 503.
    let state = node.dir.path().join("not-a-dir");
    std::fs::write(&state, "").unwrap();
    let port = free_port();
    let mut cmd = node.operator_command(&["agent", "--listen", &format!("127.0.0.1:{port}")]);
    cmd.env("RAILCNI_STATE_DIR", &state);
    let _broken = Agent::spawn(&node, cmd, port);
    let (status, body) = http_get(&node, port, "/healthz");
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("not-a-dir"),
        "the reason names the state dir: {body}"
    );
}

/// A running `railcnictl agent`, killed when dropped.
pub struct Agent {
    pub child: std::process::Child,
}

impl Agent {
    pub fn start(node: &Node, port: u16, extra: &[&str]) -> Agent {
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec!["agent", "--listen", &listen];
        args.extend_from_slice(extra);
        Agent::spawn(node, node.operator_command(&args), port)
    }

    pub fn spawn(node: &Node, mut cmd: Command, port: u16) -> Agent {
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let agent = Agent { child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while http_get(node, port, "/healthz").0 == 0 {
            assert!(
                Instant::now() < deadline,
                "the agent did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        agent
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port for this test: the node's namespace is its own, so any port
/// there is free; different per test for readable failures.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(9476);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// curl from the node's host namespace.
fn curl(node: &Node, port: u16, path: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &node.host(), "curl"])
        .args(args)
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl (scripts/install-test-deps.sh)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Status and body of a GET.
pub fn http_get(node: &Node, port: u16, path: &str) -> (u16, String) {
    let out = curl(node, port, path, &["-s", "-w", "\n%{http_code}"]);
    let (body, status) = out.rsplit_once('\n').unwrap_or(("", "0"));
    (status.trim().parse().unwrap_or(0), body.to_string())
}

/// `--gc-interval`: the agent detaches an attachment whose pod died
/// without a DEL, as `railcnictl gc --apply` would, and counts its lease.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_agents_gc_gives_back_a_dead_pods_vf_and_counts_the_lease() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let pod = node.pod("gone");
    node.cni(&add("gone", &pod, &vf)).ok();
    node.kill_pod(&pod, &[(&vf, "net1")]);
    let port = free_port();
    let _agent = Agent::start(&node, port, &["--gc-interval", "200ms"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while node.record_exists(&vf.pci) {
        assert!(Instant::now() < deadline, "the agent's gc did not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "the VF is home under its name"
    );
    // A scrape answers from a pass at most a second old.
    let text = scraped_until(&node, port, |t| {
        value(t, r#"railcni_reclaimed_leases_total{network="rail1"}"#) == Some(1.0)
    });
    assert_eq!(
        value(&text, r#"railcni_reclaimed_leases_total{network="rail1"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, r#"railcni_ipam_leased{network="rail1"}"#),
        Some(0.0)
    );
}

/// Counting never fails a call: with the stats directory unusable (a file
/// where it should be), ADD and DEL still succeed and say why in the log.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn calls_succeed_when_their_counts_cannot_be_written() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    std::fs::create_dir_all(node.state_dir()).unwrap();
    std::fs::write(node.state_dir().join("stats"), "not a directory").unwrap();
    let pod = node.pod("p");
    let req = add("p", &pod, &vf);
    let reply = node.cni(&req);
    assert!(
        reply.stderr.contains("cannot count this call"),
        "{}",
        reply.stderr
    );
    reply.ok();
    node.cni(&req.cmd("DEL")).ok();
    assert!(!node.record_exists(&vf.pci));
}

/// Anything that can reach the agent's port must not blind Prometheus or
/// fail the liveness probe: with 200 idle connections open and a client
/// that never finishes its request, /metrics and /healthz still answer (the
/// hand-written server it replaced never did; how fast is the bench's
/// business: `scripts/bench-metrics.sh --idle 200`).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn idle_and_slow_clients_never_hold_up_a_scrape() {
    let node = Node::new(1, 1);
    let port = free_port();
    let _agent = Agent::start(&node, port, &[]);
    let script = format!(
        "import socket, sys, time\n\
         held = []\n\
         for _ in range(200):\n    s = socket.create_connection(('127.0.0.1', {port})); held.append(s)\n\
         slow = socket.create_connection(('127.0.0.1', {port}))\n\
         slow.sendall(b'GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n')\n\
         held.append(slow)\n\
         print('ready', flush=True)\n\
         time.sleep(60)\n"
    );
    let mut clients = Command::new("ip")
        .args(["netns", "exec", &node.host(), "python3", "-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(clients.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    for path in ["/metrics", "/healthz"] {
        let out = curl(
            &node,
            port,
            path,
            &["-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}"],
        );
        assert_eq!(out, "200", "{path} answers beside idle and slow clients");
    }
    let _ = clients.kill();
    let _ = clients.wait();
}

/// /metrics until `done` holds of it (passes are reused for a second), at most 5 s.
fn scraped_until(node: &Node, port: u16, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, text) = http_get(node, port, "/metrics");
        if done(&text) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Threads of a process now.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

/// A pass over the node that hangs (an attachment record whose read
/// blocks, as on a hung disk: here a FIFO nobody writes) costs the agent
/// one worker: scrapes still answer, from the last pass and marked stale,
/// a burst of them starts no thread, and SIGTERM ends the agent within a
/// second all the same.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_hung_pass_costs_one_worker_and_scrapes_answer_stale() {
    let node = Node::new(1, 1);
    let port = free_port();
    let mut agent = Agent::start(&node, port, &[]);
    let (status, first) = http_get(&node, port, "/metrics");
    assert_eq!(status, 200, "{first}");
    let records = node.state_dir().join("attachments");
    std::fs::create_dir_all(&records).unwrap();
    nix::unistd::mkfifo(
        &records.join("0000:99:00.0.json"),
        nix::sys::stat::Mode::S_IRUSR,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    // The next scrape starts the pass that hangs, waits a bounded time and
    // answers from the last pass.
    let started = Instant::now();
    let head = curl(
        &node,
        port,
        "/metrics",
        &["-s", "-m", "10", "-D", "-", "-o", "/dev/null"],
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("warning: 110"),
        "marked stale: {head}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(200));
    let before = threads(agent.child.id());
    // Ten more: each answers at once from the last pass; no thread is added.
    for _ in 0..10 {
        let t0 = Instant::now();
        assert_eq!(http_get(&node, port, "/metrics").0, 200);
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "a stuck pass is not waited for again: {took:?}"
        );
    }
    assert!(
        threads(agent.child.id()) <= before,
        "{} threads after, {before} before",
        threads(agent.child.id())
    );
    // /healthz says the pass does not finish.
    assert_eq!(http_get(&node, port, "/healthz").0, 503);
    let pid = nix::unistd::Pid::from_raw(agent.child.id() as i32);
    let asked = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    while agent.child.try_wait().unwrap().is_none() {
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the agent did not stop"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "SIGTERM took {:?}",
        asked.elapsed()
    );
}

/// Twenty scrapes at once share one pass and all answer.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn twenty_concurrent_scrapes_share_one_pass() {
    let node = Node::new(1, 1);
    let port = free_port();
    let _agent = Agent::start(&node, port, &[]);
    std::thread::sleep(Duration::from_millis(1100));
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let all: Vec<_> = (0..20)
            .map(|_| s.spawn(|| http_get(&node, port, "/metrics").0))
            .collect();
        all.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
}

/// The agent listens on loopback unless told otherwise (a proxy that
/// authorizes each scrape faces the network), and says once, as a warning,
/// what a non-loopback address exposes.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_agent_serves_loopback_by_default_and_warns_off_it() {
    let node = Node::new(1, 1);
    let listening = || {
        let out = Command::new("ip")
            .args(["netns", "exec", &node.host(), "ss", "-Hltn"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let by_default = Agent::spawn(&node, node.operator_command(&["agent"]), 9476);
    let sockets = listening();
    assert!(sockets.contains("127.0.0.1:9476"), "{sockets}");
    assert!(
        !sockets.contains("0.0.0.0:9476") && !sockets.contains("*:9476"),
        "{sockets}"
    );
    drop(by_default);

    let port = free_port();
    let wide = format!("0.0.0.0:{port}");
    let mut cmd = node.operator_command(&["agent", "--listen", &wide]);
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while http_get(&node, port, "/healthz").0 == 0 {
        assert!(
            Instant::now() < deadline,
            "the agent did not listen on {wide}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("is not a loopback address"))
        .collect();
    assert_eq!(warnings.len(), 1, "{said}");
    assert!(
        warnings[0].contains("kube-rbac-proxy") && warnings[0].contains("warn"),
        "{said}"
    );
}

/// A network the node has no pool or attachment of (a NAD's typo whose ADD
/// only ever failed) keeps its call counts and leaves no gauge of nothing.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_network_with_nothing_on_the_node_leaves_no_gauges() {
    let node = Node::new(1, 1);
    let pod = node.pod("p");
    let mut c = conf("1.0.0", "rail5", "0000:99:00.9", Node::embedded_ipam(1));
    c["name"] = serde_json::json!("rail5");
    node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err_any();
    let (code, text, err) = node.operator(&["metrics"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("railcni_operations_total{verb=\"ADD\",network=\"rail5\",result=\"error\""),
        "{text}"
    );
    for gauge in [
        "railcni_stale_attachments",
        "railcni_attachments",
        "railcni_ipam_capacity",
    ] {
        let series = format!("{gauge}{{network=\"rail5\"");
        assert!(!text.contains(&series), "{series} left behind:\n{text}");
    }
}
