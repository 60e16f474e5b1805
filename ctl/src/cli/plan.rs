//! `railcnictl plan`: the glue between files and `crate::fabric`.

use std::path::PathBuf;

use crate::cli::outcome::{Outcome, Usage};
use crate::fabric::dra::DraOptions;
use crate::fabric::launch_kit::{self, Layout};
use crate::fabric::{cidrpool, Plan, Resolved};

#[derive(clap::Args)]
pub struct Args {
    /// The plan (JSON or YAML): rails and nodes.
    plan_file: Option<PathBuf>,
    /// Import nv-ipam CIDRPool manifests instead of a plan file.
    #[arg(long, value_name = "CIDRPOOL.yaml")]
    from_cidrpool: Option<PathBuf>,
    /// Import NVIDIA k8s-launch-kit's cluster-config.yaml instead of a plan
    /// file (what it cannot map is named on stderr; `--emit plan` shows the plan).
    #[arg(long, value_name = "CLUSTER-CONFIG.yaml")]
    from_launch_kit: Option<PathBuf>,
    /// With --from-launch-kit: how the rails are addressed.
    #[arg(
        long,
        value_enum,
        default_value = "nv-ipam",
        requires = "from_launch_kit"
    )]
    layout: Layout,
    #[arg(long, value_enum)]
    emit: Emit,
    /// The node, for --emit node-file.
    #[arg(long)]
    node: Option<String>,
    /// With --emit dra: claim each rail's VF(s) together with one GPU of
    /// this DeviceClass on the same PCIe root (`resource.kubernetes.io/pcieRoot`).
    #[arg(long, value_name = "DEVICECLASS", num_args = 0..=1, default_missing_value = "gpu.nvidia.com")]
    pair_gpus: Option<String>,
    /// The plan in force now: refuse a plan that moves any node's prefix
    /// (a changed index; its pods' addresses would move), naming each.
    #[arg(long, value_name = "PLAN")]
    previous: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Emit {
    /// NetworkAttachmentDefinitions, one per rail (YAML).
    Nads,
    /// The ConfigMap the installer and agent read: the plan, from which each node computes its node file (YAML).
    Configmap,
    /// One node's /etc/cni/railcni/node.json (needs --node).
    NodeFile,
    /// node,rail,host_address,switch_port_address,prefix for the switch team.
    Csv,
    /// A training pod's networks annotation (each rail's interface named) and resource requests (YAML).
    Pod,
    /// dra-driver-sriov's objects: per rail a DeviceAttributes and NAD, one SriovResourcePolicy, per rail a ResourceClaimTemplate (with --pair-gpus, a GPU too); a pod (YAML).
    Dra,
    /// Every allocation, as JSON.
    Json,
    /// The plan itself (YAML): what --from-cidrpool or --from-launch-kit made of their input.
    Plan,
}

fn read(p: &PathBuf) -> Result<String, Usage> {
    std::fs::read_to_string(p).map_err(|e| Usage(format!("cannot read {}: {e}", p.display())))
}

pub fn run(args: &Args) -> Result<Outcome, Usage> {
    let plan = match (&args.plan_file, &args.from_cidrpool, &args.from_launch_kit) {
        (Some(p), None, None) => Plan::parse(&read(p)?),
        (None, Some(p), None) => cidrpool::import(&read(p)?),
        (None, None, Some(p)) => launch_kit::import(&read(p)?, args.layout).map(|imported| {
            for what in &imported.unmapped {
                eprintln!("railcnictl plan: not mapped from {}: {what}", p.display());
            }
            imported.plan
        }),
        _ => {
            return Err(Usage(
                "give one of PLAN-FILE, --from-cidrpool FILE, --from-launch-kit FILE".into(),
            ))
        }
    }
    .map_err(|e| Usage(e.0))?;
    if matches!(args.emit, Emit::Nads | Emit::Pod) {
        let imported = args.from_launch_kit.is_some() || args.from_cidrpool.is_some();
        resources_named(&plan, imported)?;
    }
    if args.pair_gpus.is_some() && !matches!(args.emit, Emit::Dra) {
        return Err(Usage("--pair-gpus goes with --emit dra".into()));
    }
    let dra = DraOptions {
        gpu_class: args.pair_gpus.clone(),
    };
    let text = match (args.emit, args.node.as_deref()) {
        // One node: only its allocations are worked out.
        (Emit::NodeFile, Some(node)) => plan
            .resolve_for(Some(node))
            .and_then(|r| r.node_file_text(node)),
        (Emit::NodeFile, None) => return Err(Usage("--emit node-file needs --node NAME".into())),
        (emit, _) => emit_whole(plan, emit, args.previous.as_ref(), &dra),
    }
    .map_err(|e| Usage(e.0))?;
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(Outcome::Clean)
}

/// NADs and the pod are for Multus, whose device plugin hands a pod its VFs
/// by resource. A rail an import could not name one for is refused here
/// rather than emitted without it; a hand-written plan's is said on stderr
/// (its NADs may be for dra-driver-sriov, which needs no annotation).
fn resources_named(plan: &Plan, imported: bool) -> Result<(), Usage> {
    let unnamed: Vec<&str> = (plan.rails.iter())
        .filter(|r| r.resource_name.is_none())
        .map(|r| r.name.as_str())
        .collect();
    if unnamed.is_empty() {
        return Ok(());
    }
    let lack = format!(
        "rails {} have no SR-IOV resource name, so their NADs carry no k8s.v1.cni.cncf.io/resourceName \
         and Multus would pass no deviceID",
        unnamed.join(", ")
    );
    if !imported {
        eprintln!(
            "railcnictl plan: {lack}: set each rail's resourceName in the plan (the device plugin's \
             resource of its VFs), unless dra-driver-sriov calls railcni with them"
        );
        return Ok(());
    }
    Err(Usage(format!(
        "{lack}: write the plan (--emit plan), set each rail's resourceName (the device plugin's \
         resource of its VFs), and emit from it"
    )))
}

/// What needs every node's allocations, checked against `previous`.
fn emit_whole(
    plan: Plan,
    emit: Emit,
    previous: Option<&PathBuf>,
    dra: &DraOptions,
) -> Result<String, crate::fabric::PlanError> {
    let written = plan.clone();
    let resolved = plan.resolve()?;
    if let Some(p) = previous {
        let text = read(p).map_err(|Usage(why)| crate::fabric::PlanError(why))?;
        resolved.keeps_prefixes_of(&Plan::parse(&text)?.resolve()?)?;
    }
    match emit {
        Emit::Nads => resolved.nads(),
        Emit::Configmap => Resolved::config_map(&written),
        Emit::Csv => Ok(resolved.csv()),
        Emit::Pod => resolved.pod(),
        Emit::Dra => resolved.dra(dra),
        Emit::Plan => serde_yaml_ng::to_string(&written)
            .map_err(|e| crate::fabric::PlanError(format!("cannot write YAML: {e}"))),
        Emit::Json => serde_json::to_string_pretty(&resolved.allocations)
            .map_err(|e| crate::fabric::PlanError(e.to_string())),
        Emit::NodeFile => Err(crate::fabric::PlanError(
            "--emit node-file needs --node NAME".into(),
        )),
    }
}
