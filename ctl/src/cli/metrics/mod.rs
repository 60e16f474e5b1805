//! `railcnictl metrics`: this node's railcni state and counters in the
//! Prometheus text format (docs/monitoring.md). The same text is what
//! `railcnictl agent` serves on `/metrics` and writes for node_exporter.
//!
//! Reading takes no VF or lease lock: records and lease files are replaced
//! atomically (a reader sees the old or the new file), and each stats file
//! is locked only for the microseconds of one read. A scrape therefore
//! never holds up an ADD.

pub mod exposition;
mod interfaces;
mod labels;
mod rdma;

use std::collections::BTreeSet;

use base::stats::{self, NetworkStats, BUCKETS};
use base::Settings;

use super::node::NodeState;
use crate::cli::outcome::{Outcome, Usage};
pub use exposition::{Exposition, Kind};
use railcni::state::{Phase, Record};

pub fn run(settings: &Settings, network: Option<&str>) -> Result<Outcome, Usage> {
    // For files and people: the text format node_exporter's textfile reads.
    print!("{}", collect(settings, network, &[])?.text_format());
    Ok(Outcome::Clean)
}

/// The whole exposition (only `only`'s samples when given), for either
/// format. `node_checks`: the agent's last `doctor` run, as (check, result).
pub fn collect(
    settings: &Settings,
    only: Option<&str>,
    node_checks: &[(String, &'static str)],
) -> Result<Exposition, Usage> {
    let state = NodeState::load(settings)?;
    let counted = stats::load_all(settings);
    let wanted = |n: &str| only.is_none_or(|o| o == n);
    let mut e = Exposition::default();
    e.sample(
        "railcni_build_info",
        "railcni's version on this node (always 1).",
        Kind::Gauge,
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    for network in networks(&state, &counted).iter().filter(|n| wanted(n)) {
        // A network with no pool and no attachment on this node (gone, or a
        // typo in a NAD that only ever failed) keeps its call counts, not
        // gauges of nothing.
        let here = state.stores.iter().any(|v| &v.network == network)
            || state.records.iter().any(|r| &r.network == network);
        if here {
            pools(&mut e, &state, network);
            attachments(&mut e, &state, network);
        }
        let own = counted.iter().find(|(n, _)| n == network);
        let ops = own.and_then(|(_, s)| s.as_ref().ok());
        operations(&mut e, network, ops);
    }
    // Calls whose config named no network are counted under "".
    if let Some((_, Ok(s))) = counted.iter().find(|(n, _)| n.is_empty() && only.is_none()) {
        operations(&mut e, "", Some(s));
    }
    let attached: Vec<&Record> = state
        .records
        .iter()
        .filter(|r| wanted(&r.network) && r.phase == Phase::Attached && state.alive(r))
        .collect();
    interfaces::export(&mut e, &attached);
    let help = "The agent's last railcnictl doctor run: 1 for each finding (label `check`, kept from earlier builds), its result as a label (ok, broken, skipped).";
    for (check, result) in node_checks {
        let labels = [("check", check.as_str()), ("result", *result)];
        e.sample("railcni_node_check", help, Kind::Gauge, &labels, 1.0);
    }
    rdma::export(
        &mut e,
        &railcni::vf::Sysfs::new(&settings.sysfs_root),
        &attached,
    );
    Ok(e)
}

/// Every network this node knows: from its pools, records and counts.
fn networks(
    state: &NodeState,
    counted: &[(String, Result<NetworkStats, String>)],
) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = state.stores.iter().map(|v| v.network.clone()).collect();
    out.extend(state.records.iter().map(|r| r.network.clone()));
    out.extend(counted.iter().map(|(n, _)| n.clone()));
    out.remove("");
    out
}

fn pools(e: &mut Exposition, state: &NodeState, network: &str) {
    let view = state.stores.iter().find(|v| v.network == network);
    let data = view.and_then(|v| v.leases.as_ref().ok());
    let capacity = data.and_then(|d| d.pool.as_ref()).map_or(0, |p| p.capacity);
    let leased = data.map_or(0, |d| d.leases.len());
    let labels = [("network", network)];
    let help = "Addresses this node's pool of the network holds (embedded IPAM; 0 without one).";
    e.sample(
        "railcni_ipam_capacity",
        help,
        Kind::Gauge,
        &labels,
        capacity as f64,
    );
    let help = "Addresses leased from this node's pool of the network.";
    e.sample(
        "railcni_ipam_leased",
        help,
        Kind::Gauge,
        &labels,
        leased as f64,
    );
}

fn attachments(e: &mut Exposition, state: &NodeState, network: &str) {
    let of_network = || state.records.iter().filter(|r| r.network == network);
    for (phase, word) in [(Phase::Adding, "adding"), (Phase::Attached, "attached")] {
        let n = of_network().filter(|r| r.phase == phase).count();
        let help = "Attachment records by phase (adding: an ADD in progress or interrupted).";
        let labels = [("network", network), ("phase", word)];
        e.sample("railcni_attachments", help, Kind::Gauge, &labels, n as f64);
    }
    let stale = of_network().filter(|r| !state.alive(r)).count();
    let help =
        "Attachments whose pod network namespace is gone (`railcnictl gc --apply` detaches them).";
    e.sample(
        "railcni_stale_attachments",
        help,
        Kind::Gauge,
        &[("network", network)],
        stale as f64,
    );
}

fn operations(e: &mut Exposition, network: &str, counted: Option<&NetworkStats>) {
    let help = "CNI calls by verb, result and CNI error code (0 when ok).";
    e.declare("railcni_operations_total", help, Kind::Counter);
    let default = NetworkStats::default();
    let s = counted.unwrap_or(&default);
    for (key, n) in &s.operations {
        let Some((verb, code)) = stats::split_key(key) else {
            continue;
        };
        let result = if code == 0 { "ok" } else { "error" };
        let code = code.to_string();
        let labels = [
            ("verb", verb),
            ("network", network),
            ("result", result),
            ("code", &code),
        ];
        e.sample(
            "railcni_operations_total",
            help,
            Kind::Counter,
            &labels,
            *n as f64,
        );
    }
    for (verb, h) in &s.durations {
        let labels = [("verb", verb.as_str()), ("network", network)];
        let help = "How long CNI calls took, from the plugin's start to its answer.";
        let cumulative = h.cumulative();
        e.histogram(
            "railcni_operation_duration_seconds",
            help,
            &labels,
            (&BUCKETS, &cumulative),
            h.sum,
            h.count,
        );
    }
    if !network.is_empty() {
        reclaims(e, network, s);
    }
}

/// Leases of gone holders released and VFs re-attached after driver reloads.
fn reclaims(e: &mut Exposition, network: &str, s: &NetworkStats) {
    let help = "Leases of provably gone holders released (by ADD, `railcnictl gc --apply` and the agent's gc).";
    let labels = [("network", network)];
    e.sample(
        "railcni_reclaimed_leases_total",
        help,
        Kind::Counter,
        &labels,
        s.reclaimed_leases as f64,
    );
    let help = "VFs a PF driver reload tore out of a live pod, by what the agent did: reattached, released (the pod was gone), error.";
    e.declare("railcni_reattach_total", help, Kind::Counter);
    // Earlier builds counted a re-attach as `put_back`: one series.
    let mut by_result: std::collections::BTreeMap<&str, u64> = Default::default();
    for (result, n) in &s.reattached {
        let result = if result == "put_back" {
            "reattached"
        } else {
            result
        };
        *by_result.entry(result).or_default() += n;
    }
    for (result, n) in by_result {
        let labels = [("network", network), ("result", result)];
        e.sample(
            "railcni_reattach_total",
            help,
            Kind::Counter,
            &labels,
            n as f64,
        );
    }
    let help = "What gc did (`railcnictl gc --apply`, the agent's --gc-interval), by action (detach, reattach, release) and result (done, error; the error is in the log).";
    e.declare("railcni_gc_actions_total", help, Kind::Counter);
    for (key, n) in &s.gc {
        let Some((action, result)) = key.split_once(' ') else {
            continue;
        };
        let labels = [("network", network), ("action", action), ("result", result)];
        e.sample(
            "railcni_gc_actions_total",
            help,
            Kind::Counter,
            &labels,
            *n as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_builds_put_back_count_is_read_as_reattached() {
        let mut s = NetworkStats::default();
        s.reattached.insert("put_back".into(), 2);
        s.reattached.insert("reattached".into(), 1);
        s.reattached.insert("released".into(), 4);
        let mut e = Exposition::default();
        reclaims(&mut e, "rail1", &s);
        let text = e.text_format();
        assert!(
            text.contains(r#"railcni_reattach_total{network="rail1",result="reattached"} 3"#),
            "{text}"
        );
        assert!(text.contains(r#"result="released"} 4"#), "{text}");
        assert!(!text.contains("put_back"), "{text}");
    }
}
