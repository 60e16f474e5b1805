//! A real Prometheus (Debian's) scrapes `railcnictl agent` on the fake node
//! every second; the test asks it, through its HTTP query API, what an
//! operator's dashboard and alerts would: leases, refused ADDs, bytes over
//! a rail, RDMA counters, and every expression of
//! `deploy/grafana-dashboard.json`. Both run in the node's host namespace,
//! as the agent does with `hostNetwork`. Needs root.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const AGENT_PORT: u16 = 9476;
const PROMETHEUS_PORT: u16 = 9090;

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn in_host(node: &Node, program: &str) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &node.host(), program]);
    cmd
}

fn start_prometheus(node: &Node) -> Running {
    let dir = node.dir.path().join("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n  - job_name: railcni\n    static_configs:\n      \
             - targets: ['127.0.0.1:{AGENT_PORT}']\n"
        ),
    )
    .unwrap();
    let child = in_host(node, "prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus (Debian's package; scripts/install-test-deps.sh)");
    Running(child)
}

/// The answer of an instant query (`status` must be "success").
fn query(node: &Node, promql: &str) -> Value {
    let out = in_host(node, "curl")
        .args(["-s", "--get", "--data-urlencode"])
        .arg(format!("query={promql}"))
        .arg(format!("http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/query"))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// The first sample's value of `promql`, once Prometheus has one that
/// `accept`s, waiting up to 20 s (a scrape a second).
fn wait_for(node: &Node, promql: &str, accept: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = query(node, promql);
        let value = answer["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok());
        match value {
            Some(v) if accept(v) => return v,
            _ if Instant::now() > deadline => panic!("{promql}: {answer}"),
            _ => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

#[test]
#[ignore = "root: Prometheus on the fake node; scripts/test.sh runs it"]
fn prometheus_scrapes_the_agent_and_every_dashboard_query_evaluates() {
    let node = Node::new(1, 2);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let (a, b) = (node.vfs[0].clone(), node.vfs[1].clone());
    node.give_rdma_device(&a, "mlx5_3");
    let hw = node.sysfs().join(format!(
        "devices/pci0000:00/{}/infiniband/mlx5_3/ports/1/hw_counters",
        a.pci
    ));
    std::fs::create_dir_all(&hw).unwrap();
    std::fs::write(hw.join("np_ecn_marked_roce_packets"), "42\n").unwrap();

    let listen = format!("127.0.0.1:{AGENT_PORT}");
    let _agent = Running(
        node.operator_command(&["agent", "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _prometheus = start_prometheus(&node);

    let mut ipam = Node::embedded_ipam(1);
    ipam["perNodePrefix"] = json!(29);
    let attach = |cid: &str, vf: &FakeVf| {
        let pod = node.pod(cid);
        let mut req = Req::new(
            "ADD",
            cid,
            &pod,
            "net1",
            conf("1.1.0", "rail1", &vf.pci, ipam.clone()),
        );
        req.args = Some(format!(
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME={cid}"
        ));
        (req, pod)
    };
    let (add_a, pod_a) = attach("a", &a);
    let (add_b, _) = attach("b", &b);
    node.cni(&add_a).ok();
    node.cni(&add_b).ok();
    let mut refused = add_b.clone();
    refused.container_id = "c".into();
    refused.conf["rdma"] = json!("sometimes");
    node.cni(&refused).err(7);

    assert_eq!(
        wait_for(&node, r#"railcni_ipam_leased{network="rail1"}"#, |v| v
            == 2.0),
        2.0
    );
    let errors = r#"sum(railcni_operations_total{network="rail1",result="error",code="7"})"#;
    assert_eq!(wait_for(&node, errors, |v| v >= 1.0), 1.0);
    let rdma = r#"railcni_rdma_np_ecn_marked_roce_packets{network="rail1",ifname="net1",pod="ml/a",rdma_device="mlx5_3",port="1"}"#;
    assert_eq!(wait_for(&node, rdma, |_| true), 42.0);

    // Bytes over the rail: the leaf answers on pod A's gateway.
    let tx = r#"railcni_interface_transmit_bytes_total{network="rail1",ifname="net1",pod="ml/a"}"#;
    let before = wait_for(&node, tx, |_| true);
    sh(&format!(
        "ip -n {} addr add 172.16.0.1/29 dev r1v0",
        node.fabric()
    ));
    let ping = sh(&format!(
        "ip netns exec {} ping -c 3 -i 0.2 -M do -s 8972 172.16.0.1",
        Node::ns_of(&pod_a)
    ));
    assert!(
        ping.status.success(),
        "{}",
        String::from_utf8_lossy(&ping.stdout)
    );
    let after = wait_for(&node, tx, |v| v >= before + 3.0 * 9000.0);
    assert!(after >= before + 27000.0, "{before} -> {after}");

    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/grafana-dashboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut exprs = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            // The dashboard's rail variable, at "All".
            let expr = target["expr"].as_str().unwrap().replace("$network", ".*");
            let answer = query(&node, &expr);
            assert_eq!(
                answer["status"], "success",
                "{}: {expr}: {answer}",
                panel["title"]
            );
            exprs += 1;
        }
    }
    assert!(exprs >= 10, "{exprs} expressions");
    for req in [add_a, add_b] {
        node.cni(&req.cmd("DEL")).ok();
    }
}
