//! Load generator for scripts/bench-ipam.sh.
//!
//!   ipam-bench pairs <state-dir> <count> <worker-id>   allocate+release pairs in-process
//!   ipam-bench fill  <state-dir> <count>               write <count> realistic leases, print the file size
//!   ipam-bench load  <state-dir> <count>               per-call cost of a pool of <count> static allocations
//!   ipam-bench typed <config-file> <count>             p50 ns of serde_json's typed parse of a config, <count> times
//!   ipam-bench prefixes <state-dir> <rounds>           allocate+release on a /31, IPv6 /127, /120 and /64, interleaved

use std::time::Instant;

use railcni_ipam::store::{Lease, LeaseStore, Leases};
use railcni_ipam::{Holder, Ipam};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: ipam-bench pairs|fill|load <state-dir> <count> [worker-id]";
    let (mode, dir, count) = match (
        args.get(1),
        args.get(2),
        args.get(3).and_then(|c| c.parse::<usize>().ok()),
    ) {
        (Some(m), Some(d), Some(c)) => (m.as_str(), std::path::PathBuf::from(d), c),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    match mode {
        "typed" => {
            // The floor the plugin's big-NAD cost is held against: the same
            // bytes parsed straight into types, allocations included.
            #[derive(serde::Deserialize)]
            #[allow(dead_code)]
            struct Typed {
                name: String,
                ipam: TypedIpam,
            }
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            #[allow(dead_code)]
            struct TypedIpam {
                cidr: ipnet::IpNet,
                static_allocations: Vec<railcni_ipam::config::StaticAllocation>,
            }
            let text = std::fs::read(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let mut took: Vec<u128> = (0..count)
                .map(|_| {
                    let t = Instant::now();
                    let typed: Typed =
                        serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{e}"));
                    drop(std::hint::black_box(typed));
                    t.elapsed().as_nanos()
                })
                .collect();
            took.sort();
            println!("{}", took[took.len() / 2]);
        }
        "pairs" => {
            let worker = args.get(4).cloned().unwrap_or_default();
            let settings = base::Settings {
                state_dir: dir.clone(),
                node_name: Some("gpu-0".into()),
                node_config: dir.join("none.json"),
                ..base::Settings::default()
            };
            let conf = json!({"cidr": "10.0.0.0/8", "perNodePrefix": 24, "nodes": ["gpu-0"]});
            let ipam = Ipam::load("rail1", &conf, &settings).unwrap_or_else(|e| panic!("{e}"));
            let start = Instant::now();
            for i in 0..count {
                let holder = Holder {
                    container_id: format!("w{worker}-{i}"),
                    ifname: "net1".into(),
                    ..Holder::default()
                };
                ipam.allocate(&holder, &[])
                    .unwrap_or_else(|e| panic!("{e}"));
                ipam.release(&holder.container_id, "net1")
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{count} pairs in {secs:.3}s: {:.0} pairs/s",
                count as f64 / secs
            );
        }
        "prefixes" => prefixes(&dir, count),
        "load" => {
            let allocations: Vec<_> = (0..count)
                .map(|i| {
                    json!({"nodeName": format!("gpu-{i}"),
                           "prefix": format!("172.{}.{}.{}/31", 16 + (i >> 15), (i >> 7) & 0xff, (i << 1) & 0xff)})
                })
                .collect();
            let text = json!({"cniVersion": "1.1.0", "name": "rail1",
                "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15", "staticAllocations": allocations}})
            .to_string();
            let node = format!("gpu-{}", count - 1);
            let (mut parse, mut load) = (Vec::new(), Vec::new());
            for _ in 0..31 {
                let t = Instant::now();
                let v: serde_json::Value =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
                parse.push(t.elapsed());
                let t = Instant::now();
                let pool = railcni_ipam::config::PoolConfig::parse(&v["ipam"])
                    .unwrap_or_else(|e| panic!("{e}"));
                let n = railcni_ipam::pool::NodePool::resolve(
                    "rail1",
                    &node,
                    &pool,
                    &railcni_ipam::config::NodePrefixes::default(),
                )
                .unwrap_or_else(|e| panic!("{e}"));
                load.push(t.elapsed());
                assert_eq!(n.usable.count(), 1);
            }
            parse.sort();
            load.sort();
            println!(
                "config {} KB; load+validate p50 {:.2} ms (JSON parse of stdin p50 {:.2} ms)",
                text.len() / 1024,
                load[15].as_secs_f64() * 1e3,
                parse[15].as_secs_f64() * 1e3
            );
            let _ = dir;
        }
        "fill" => {
            let store = LeaseStore::new(&dir, "rail1", base::settings::DEFAULT_LOCK_TIMEOUT);
            let leases = (0..count)
                .map(|i| Lease {
                    container_id: format!("{i:064x}"),
                    ifname: "net1".into(),
                    address: format!("fd00::{i:x}")
                        .parse()
                        .unwrap_or_else(|e| panic!("{e}")),
                    address6: None,
                    pod_namespace: Some("training".into()),
                    pod_name: Some(format!("llm-pretrain-worker-{i}")),
                    pod_uid: Some(format!("{i:08x}-1b2c-4d5e-8f90-123456789abc")),
                    allocated_unix: 1_795_000_000,
                    proof: base::liveness::Proof {
                        netns: Some(format!("/var/run/netns/cni-{i:08x}-1b2c-4d5e-8f90")),
                        netns_id: Some(base::liveness::NsId {
                            dev: 4,
                            ino: 4_026_532_000 + i as u64,
                        }),
                        netns_cookie: Some(8_192 + i as u64),
                        boot_id: Some("6f2b1a3e-8c1d-4b7e-9a0f-2d3c4b5a6e7f".into()),
                    },
                })
                .collect();
            let data = Leases {
                last_allocated: None,
                leases,
                pool: None,
                ..Leases::default()
            };
            store
                .lock()
                .and_then(|l| l.write(&data))
                .unwrap_or_else(|e| panic!("{e}"));
            let size = std::fs::metadata(&store.path).map(|m| m.len()).unwrap_or(0);
            println!(
                "{count} leases: {size} bytes ({} bytes/lease)",
                size / count.max(1) as u64
            );
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
}

/// One allocate+release pair per pool per round, the pools taking turns
/// (so a noisy moment hits each alike): a /31 and an IPv6 /127 (one
/// address each), an IPv6 /120 (the largest before /64 was allowed) and an
/// IPv6 /64, the last two with 3 live leases.
/// Prints each pool's median pair in microseconds and its ratio to the /31.
fn prefixes(dir: &std::path::Path, rounds: usize) {
    let settings = base::Settings {
        state_dir: dir.to_path_buf(),
        node_name: Some("gpu-0".into()),
        node_config: dir.join("none.json"),
        ..base::Settings::default()
    };
    let pools = [
        (
            "/31",
            json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"]}),
            0,
        ),
        (
            "/127",
            json!({"cidr": "fd00:16::/48", "perNodePrefix": 127, "nodes": ["gpu-0"]}),
            0,
        ),
        (
            "/120",
            json!({"cidr": "fd00:17::/48", "perNodePrefix": 120, "nodes": ["gpu-0"]}),
            3,
        ),
        (
            "/64",
            json!({"cidr": "fd02:1::/40", "perNodePrefix": 64, "nodes": ["gpu-0"]}),
            3,
        ),
    ];
    let holder = |id: String| Holder {
        container_id: id,
        ifname: "net1".into(),
        ..Holder::default()
    };
    let loaded: Vec<(&str, Ipam)> = (pools.iter())
        .map(|(name, conf, live)| {
            let ipam = Ipam::load(
                &format!("bench{}", name.trim_start_matches('/')),
                conf,
                &settings,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            for i in 0..*live {
                ipam.allocate(&holder(format!("live-{i}")), &[])
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            (*name, ipam)
        })
        .collect();
    let mut took = vec![Vec::new(); loaded.len()];
    for round in 0..rounds {
        for (k, (_, ipam)) in loaded.iter().enumerate() {
            let h = holder(format!("r{round}"));
            let t = Instant::now();
            ipam.allocate(&h, &[]).unwrap_or_else(|e| panic!("{e}"));
            ipam.release(&h.container_id, "net1")
                .unwrap_or_else(|e| panic!("{e}"));
            took[k].push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let floor = median(&mut took[0].clone());
    for ((name, _), t) in loaded.iter().zip(&mut took) {
        let m = median(t);
        println!(
            "{name:>5}: {m:.1} us per allocate+release (x{:.2} of the /31)",
            m / floor
        );
    }
}
