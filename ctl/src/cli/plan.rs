//! `railcnictl plan`: the glue between files and `crate::plan`.

use std::path::PathBuf;

use super::{Outcome, Usage};
use crate::fabric::{cidrpool, Plan};

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Emit {
    /// NetworkAttachmentDefinitions, one per rail (YAML).
    Nads,
    /// The ConfigMap of per-node allocations the installer reads (YAML).
    Configmap,
    /// One node's /etc/cni/railcni/node.json (needs --node).
    NodeFile,
    /// node,rail,host_address,switch_port_address,prefix for the switch team.
    Csv,
    /// A training pod's networks annotation (each rail's interface named) and resource requests (YAML).
    Pod,
    /// dra-driver-sriov's objects: a SriovResourceFilter, and per rail a NAD, DeviceClass and ResourceClaimTemplate; a pod (YAML).
    Dra,
    /// Every allocation, as JSON.
    Json,
}

pub fn run(
    plan_file: Option<PathBuf>,
    from_cidrpool: Option<PathBuf>,
    emit: Emit,
    node: Option<&str>,
) -> Result<Outcome, Usage> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).map_err(|e| Usage(format!("cannot read {}: {e}", p.display())))
    };
    let plan = match (&plan_file, &from_cidrpool) {
        (Some(p), None) => Plan::parse(&read(p)?),
        (None, Some(p)) => cidrpool::import(&read(p)?),
        _ => {
            return Err(Usage(
                "give a PLAN-FILE or --from-cidrpool FILE (one of them)".into(),
            ))
        }
    };
    let resolved = plan.and_then(Plan::resolve).map_err(|e| Usage(e.0))?;
    let text = match emit {
        Emit::Nads => resolved.nads(),
        Emit::Configmap => resolved.config_map(),
        Emit::Csv => Ok(resolved.csv()),
        Emit::Pod => resolved.pod(),
        Emit::Dra => resolved.dra(),
        Emit::Json => serde_json::to_string_pretty(&resolved.allocations)
            .map_err(|e| crate::fabric::PlanError(e.to_string())),
        Emit::NodeFile => {
            let node = node.ok_or_else(|| Usage("--emit node-file needs --node NAME".into()))?;
            resolved.node_file(node).and_then(|v| {
                serde_json::to_string_pretty(&v)
                    .map_err(|e| crate::fabric::PlanError(e.to_string()))
            })
        }
    }
    .map_err(|e| Usage(e.0))?;
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(Outcome::Clean)
}
