//! What reading a file through the pod's own sysfs view costs
//! (`net::pod_sysfs`: a thread enters the pod's namespace, a private mount
//! namespace, mounts sysfs), beside reading the same kind of file from the
//! host's sysfs. Used by scripts/bench-qos.sh; the p50 of N runs each,
//! taking turns.
//!
//!   pod-sysfs-bench NETNS-PATH N

use std::path::Path;
use std::time::Instant;

use railcni::net::pod_sysfs::with_sysfs_of;
use railcni::net::NetNs;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        return Err("usage: pod-sysfs-bench NETNS-PATH N".into());
    };
    let pod = NetNs::open(Path::new(path))?;
    let (mut host, mut view) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        std::fs::read_to_string("/sys/class/net/lo/mtu")?;
        host.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        with_sysfs_of(&pod, |sys| {
            std::fs::read_to_string(sys.join("class/net/lo/mtu"))
        })??;
        view.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (h, p) = (p50(&mut host), p50(&mut view));
    println!("reading one sysfs file, p50 of {n}, taking turns:");
    println!("  the host's sysfs                              {h:8.3} ms");
    println!(
        "  the pod's own sysfs view (thread, mount)      {p:8.3} ms   {:+8.3} ms",
        p - h
    );
    Ok(())
}
