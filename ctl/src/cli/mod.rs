//! The human command line: day-2 operations on this node. Each command
//! reads the state the plugin writes (`RAILCNI_STATE_DIR`, the sysfs root,
//! the node file), prints a table that fits a terminal or, with `--json`,
//! the documented schema (docs/operations.md), changes nothing
//! unless changing is its job, and exits 0 (all well), 1 (a problem found)
//! or 2 (bad usage). CNI mode is chosen by the `CNI_*` environment instead.

mod agent;
pub mod doctor;
mod gc;
mod gids;
mod inspect;
mod install;
mod metrics;
mod nccl;
mod node;
mod outcome;
mod plan;
mod plan_dir;
mod probe;
mod records;
mod repair;
mod status;
mod table;

use base::Settings;
use clap::{Parser, Subcommand};
use outcome::{Outcome, Usage};

#[derive(Parser)]
#[command(
    name = "railcnictl",
    version,
    about = "Day-2 commands for railcni, the SR-IOV rail CNI plugin: what is attached on this node, and the tools around it",
    long_about = "railcnictl answers what railcni attached on this node, detaches what is stale, \
                  plans a fabric, installs the plugin and serves its metrics. The plugin itself is \
                  `railcni`, run by container runtimes.\n\nEvery command that reports takes --json (metrics, plan and agent write formats of \
                  their own); each exits 0 when \
                  all is well, 1 when it found a problem, 2 on bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Networks, leases and attachments on this node, and what is wrong with them.
    Status {
        /// Only this network.
        #[arg(long)]
        network: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// What railcni set up inside one pod, record versus kernel (OK or DRIFT).
    Inspect {
        /// The pod's network namespace path, or its container ID.
        target: String,
        #[arg(long)]
        json: bool,
    },
    /// Detach attachments whose pod is gone and release orphaned leases.
    Gc {
        /// Do it; without this, only print what would be done.
        #[arg(long)]
        apply: bool,
        #[arg(long)]
        json: bool,
    },
    /// Check the node link by link (IOMMU, PFs, VFs, RDMA, CNI files, Multus) and name the first broken one.
    Doctor(doctor::Args),
    /// Prove a pod's rails from the node: link, gateway ARP, don't-fragment pings at 1500 and full MTU.
    Probe(probe::Args),
    /// An RDMA device's GID table, each entry's address and type (the RoCE v2 index NCCL_IB_GID_INDEX names).
    Gids(gids::Args),
    /// This node's metrics in the Prometheus text format (docs/monitoring.md).
    Metrics {
        /// Only this network's samples.
        #[arg(long)]
        network: Option<String>,
    },
    /// Serve the metrics over HTTP (/metrics, /healthz); optionally gc and a node_exporter textfile.
    Agent(agent::Args),
    /// The embedded IPAM's lease files.
    Ipam {
        #[command(subcommand)]
        command: IpamCommand,
    },
    /// Turn a fabric plan (rails × nodes) into NADs, the per-node ConfigMap, a node file, a CSV.
    Plan(plan::Args),
    /// Install the binaries and this node's node file (the installer DaemonSet's entry point).
    Install(install::Args),
    /// The NCCL/UCX environment for a pod's rails, in rail order.
    NcclEnv(nccl::Args),
}

#[derive(Subcommand)]
enum IpamCommand {
    /// Rebuild a corrupt or missing lease file from the attachment records.
    Repair {
        network: String,
        #[arg(long)]
        json: bool,
    },
}

/// Whether `args` (without the program name) is a command line railcnictl
/// accepts: clap's verdict, nothing run. The docs' examples are held to it.
pub fn parses<I: IntoIterator<Item = String>>(args: I) -> Result<(), String> {
    let argv = std::iter::once("railcnictl".to_string()).chain(args);
    Cli::try_parse_from(argv)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Whether `path` (e.g. `["ipam", "repair"]`) names one of railcnictl's commands.
pub fn names_a_command(path: &[&str]) -> bool {
    use clap::CommandFactory;
    let mut command = Cli::command();
    for name in path {
        match command.find_subcommand(name) {
            Some(sub) => command = sub.clone(),
            None => return false,
        }
    }
    !path.is_empty()
}

pub fn main() {
    let cli = Cli::parse();
    let settings = Settings::from_env();
    let outcome = match cli.command {
        Command::Status { network, json } => status::run(&settings, network.as_deref(), json),
        Command::Inspect { target, json } => inspect::run(&settings, &target, json),
        Command::Gc { apply, json } => gc::run(&settings, apply, json),
        Command::Metrics { network } => metrics::run(&settings, network.as_deref()),
        Command::Agent(args) => agent::run(&settings, &args),
        Command::Probe(args) => probe::run(&settings, &args),
        Command::Gids(args) => gids::run(&settings, &args),
        Command::Doctor(args) => doctor::run(&settings, &args),
        Command::Ipam {
            command: IpamCommand::Repair { network, json },
        } => repair::run(&settings, &network, json),
        Command::Plan(args) => plan::run(&args),
        Command::Install(args) => install::run(args),
        Command::NcclEnv(args) => nccl::run(&settings, &args),
    };
    std::process::exit(match outcome {
        Ok(Outcome::Clean) => 0,
        Ok(Outcome::Problems) => 1,
        Err(Usage(msg)) => {
            eprintln!("railcnictl: {msg}");
            2
        }
    });
}
