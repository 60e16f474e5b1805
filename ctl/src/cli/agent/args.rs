//! `railcnictl agent`'s command line.

use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Where to serve /metrics and /healthz. Loopback by default: what the
    /// agent serves names every pod on the node, so only a proxy that
    /// authorizes each scrape (kube-rbac-proxy, deploy/daemonset.yaml)
    /// should face the network.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9476")]
    pub(super) listen: String,
    /// Run what `railcnictl gc --apply` does this often (e.g. 60s); off by default.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub(super) gc_interval: Option<Duration>,
    /// Also write DIR/railcni.prom every --interval, for node_exporter's textfile collector.
    #[arg(long, value_name = "DIR")]
    pub(super) textfile: Option<PathBuf>,
    /// How often the textfile is written.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    pub(super) interval: Duration,
    /// How often `railcnictl doctor`'s checks run again (they run at start),
    /// exported as railcni_node_check.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    pub(super) doctor_interval: Duration,
    /// The mounted plan ConfigMap: this node's node file is computed from it
    /// at start and again whenever it changes (checked every --plan-interval).
    #[arg(long, value_name = "DIR")]
    pub(super) plan_dir: Option<PathBuf>,
    /// How often the plan ConfigMap is looked at.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub(super) plan_interval: Duration,
    /// This node, for --plan-dir; default: $NODE_NAME (downward API spec.nodeName).
    #[arg(long, env = "NODE_NAME")]
    pub(super) node: Option<String>,
    /// Where --plan-dir's node file goes.
    #[arg(long, default_value = "/etc/cni/railcni/node.json")]
    pub(super) node_file: PathBuf,
    /// Its copy for a CNI caller without the host's /etc (dra-driver-sriov); "" for none.
    #[arg(long, default_value = "/var/lib/cni/railcni/node.json", value_parser = crate::cli::plan_dir::path_or_none)]
    pub(super) node_file_copy: PathBuf,
}
