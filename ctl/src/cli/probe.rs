//! `railcnictl probe`: prove a pod's rails from the node, changing nothing in
//! the pod. For each rail interface (rail order): link up, carrier, MTU as
//! recorded; the gateway's ARP answer; ICMP echoes with don't-fragment at
//! 1500 bytes and at full size from the rail's address (so its source rule
//! routes them), to the gateway and to each `--peers` address on that rail.
//! Every problem is said in words that name the cause.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};
use railcni::attachment::verify::Expected;
use railcni::net::{Link, Mac, NetNs, Netlink};
use railcni::probe::arp::ArpSocket;
use railcni::probe::icmp::{Echo, Pinger};
use railcni::state::Record;

#[derive(clap::Args)]
pub struct Args {
    /// The pod's network namespace path, or its container ID.
    target: String,
    /// Addresses to ping from the rail whose routes reach them (e.g. another node's pod).
    #[arg(long, value_delimiter = ',')]
    peers: Vec<IpAddr>,
    /// The IP packet size of the full-size ping (default: the interface's MTU).
    #[arg(long, value_parser = clap::value_parser!(u16).range(68..))]
    size: Option<u16>,
    #[arg(long)]
    json: bool,
}

/// How long one echo or ARP try waits; each is tried twice.
const WAIT: Duration = Duration::from_millis(500);
const TRIES: u32 = 2;
const SMALL: usize = 1500;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub target: String,
    pub rails: Vec<ProbedRail>,
    pub problems: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbedRail {
    pub network: String,
    pub ifname: String,
    pub vf: String,
    pub address: Option<String>,
    pub up: bool,
    pub carrier: Option<bool>,
    pub mtu: u32,
    pub recorded_mtu: Option<u32>,
    pub targets: Vec<Target>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// `gateway` or `peer`.
    pub kind: String,
    pub address: String,
    /// The MAC that answered ARP (gateways only).
    pub neighbour: Option<String>,
    /// `ok`, `no answer`, `too big` (the pod's own route is smaller) or `skipped`.
    pub df1500: String,
    pub full: String,
    /// The full-size ping's IP packet size.
    pub size: usize,
    pub rtt_ms: Option<f64>,
}

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let records = state.pod_records_of(&args.target)?;
    let peers: Vec<Ipv4Addr> = args
        .peers
        .iter()
        .filter_map(|p| match p {
            IpAddr::V4(a) => Some(*a),
            IpAddr::V6(_) => None,
        })
        .collect();
    let mut report = Report {
        target: args.target.clone(),
        rails: Vec::new(),
        problems: Vec::new(),
    };
    for r in &records {
        let mine: Vec<Ipv4Addr> = peers
            .iter()
            .copied()
            .filter(|p| best_rail(&records, *p).is_some_and(|b| b.pci == r.pci))
            .collect();
        match probe_rail(r, &mine, args.size.map(usize::from)) {
            Ok((rail, problems)) => {
                report.rails.push(rail);
                report.problems.extend(problems);
            }
            Err(why) => report
                .problems
                .push(format!("{} {}: {why}", r.network, r.ifname)),
        }
    }
    for p in &args.peers {
        let reached = records
            .iter()
            .any(|r| best_rail(&records, to_v4(*p)).is_some_and(|b| b.pci == r.pci));
        if !reached {
            report
                .problems
                .push(format!("peer {p}: no rail of this pod routes to it"));
        }
    }
    emit(&report, args.json, print);
    Ok(Outcome::found(!report.problems.is_empty()))
}

fn to_v4(p: IpAddr) -> Ipv4Addr {
    match p {
        IpAddr::V4(a) => a,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

/// The rail whose routes reach `peer` most specifically (a supernet route
/// every rail holds loses to the rail's own CIDR).
fn best_rail<'r>(records: &[&'r Record], peer: Ipv4Addr) -> Option<&'r Record> {
    let reach = |r: &Record| {
        r.routing.as_ref().and_then(|plan| {
            plan.routes
                .iter()
                .filter(|route| route.dst.prefix_len() > 0 && route.dst.contains(&IpAddr::V4(peer)))
                .map(|route| route.dst.prefix_len())
                .max()
        })
    };
    records
        .iter()
        .filter_map(|r| reach(r).map(|len| (len, *r)))
        .max_by_key(|(len, r)| (*len, std::cmp::Reverse(super::node::rail_order(&r.ifname))))
        .map(|(_, r)| r)
}

fn probe_rail(
    r: &Record,
    peers: &[Ipv4Addr],
    size: Option<usize>,
) -> Result<(ProbedRail, Vec<String>), String> {
    let netns = r.netns().ok_or("the record names no network namespace")?;
    let ns = NetNs::open(Path::new(netns)).map_err(|e| e.details())?;
    let nl = Netlink::connect_in(&ns).map_err(|e| e.details())?;
    let link = nl
        .link_by_name(&r.ifname)
        .map_err(|e| e.details())?
        .ok_or_else(|| format!("{} is not in the pod", r.ifname))?;
    let ip = ipv4_of(r)?;
    let mut rail = ProbedRail {
        network: r.network.clone(),
        ifname: r.ifname.clone(),
        vf: r.pci.clone(),
        address: ip.map(|(a, _)| a.to_string()),
        up: link.up,
        carrier: link.carrier,
        mtu: link.mtu,
        recorded_mtu: Expected::from_record(r).ok().and_then(|e| e.mtu),
        targets: Vec::new(),
    };
    let mut problems = link_problems(&rail);
    let Some((ours, gateway)) = ip else {
        problems.push(format!(
            "{} {}: no IPv4 address to probe from",
            r.network, r.ifname
        ));
        return Ok((rail, problems));
    };
    let full = size.unwrap_or(link.mtu as usize);
    let pinger = Pinger::open(&ns, ours).map_err(|e| e.details())?;
    let who = format!("{} {}", r.network, r.ifname);
    if let Some(IpAddr::V4(gw)) = gateway {
        let mut target = ping(&pinger, "gateway", gw, full);
        target.neighbour = resolve(&ns, &link, ours, gw).map(|m| m.to_string());
        problems.extend(words(&who, &target, full));
        rail.targets.push(target);
    }
    for peer in peers {
        let target = ping(&pinger, "peer", *peer, full);
        problems.extend(words(&who, &target, full));
        rail.targets.push(target);
    }
    Ok((rail, problems))
}

/// The rail's IPv4 address and its gateway, from the result ADD recorded.
fn ipv4_of(r: &Record) -> Result<Option<(Ipv4Addr, Option<IpAddr>)>, String> {
    Ok(r.result.as_ref().and_then(|res| {
        res.ips.iter().find_map(|ip| match ip.address.addr() {
            IpAddr::V4(a) => Some((a, ip.gateway)),
            IpAddr::V6(_) => None,
        })
    }))
}

fn resolve(ns: &NetNs, link: &Link, ours: Ipv4Addr, gw: Ipv4Addr) -> Option<Mac> {
    let socket = ArpSocket::open(ns, link.index, Mac::from_slice(&link.mac)?).ok()?;
    socket.resolve(ours, gw, TRIES, WAIT).ok().flatten()
}

fn ping(pinger: &Pinger, kind: &str, to: Ipv4Addr, full: usize) -> Target {
    let echo = |size: usize, seq: u16| {
        let mut last = Echo::NoAnswer;
        for attempt in 0..TRIES {
            last = pinger
                .echo(to, size, seq * 4 + attempt as u16, WAIT)
                .unwrap_or(Echo::NoAnswer);
            if !matches!(last, Echo::NoAnswer) {
                break;
            }
        }
        last
    };
    let small = echo(SMALL.min(full), 1);
    let big = echo(full, 2);
    let rtt = match big {
        Echo::Reply(t) => Some(t),
        _ => match small {
            Echo::Reply(t) => Some(t),
            _ => None,
        },
    };
    Target {
        kind: kind.into(),
        address: to.to_string(),
        neighbour: None,
        df1500: outcome(small),
        full: outcome(big),
        size: full,
        rtt_ms: rtt.map(|t| (t.as_secs_f64() * 1e6).round() / 1e3),
    }
}

fn outcome(e: Echo) -> String {
    match e {
        Echo::Reply(_) => "ok",
        Echo::NoAnswer => "no answer",
        Echo::TooBig => "too big",
    }
    .into()
}

fn link_problems(rail: &ProbedRail) -> Vec<String> {
    let who = format!("{} {}", rail.network, rail.ifname);
    let mut out = Vec::new();
    if !rail.up {
        out.push(format!(
            "{who}: the link is down (ip link set {} up, or DEL and ADD again)",
            rail.ifname
        ));
    }
    if rail.carrier == Some(false) {
        out.push(format!(
            "{who}: no carrier (cable, transceiver or the switch port is down)"
        ));
    }
    if let Some(want) = rail.recorded_mtu.filter(|m| *m != rail.mtu) {
        out.push(format!(
            "{who}: MTU is {}, ADD set {want} (something changed it since)",
            rail.mtu
        ));
    }
    out
}

/// The cause of a target's failures, in words.
fn words(who: &str, t: &Target, full: usize) -> Vec<String> {
    let to = &t.address;
    let ok = |s: &str| s == "ok";
    let mut out = Vec::new();
    if t.kind == "gateway" && t.neighbour.is_none() {
        out.push(format!(
            "{who}: gateway {to} does not answer ARP (cable, switch port or VLAN)"
        ));
    } else if t.full == "too big" {
        out.push(format!(
            "{who}: the pod's own route towards {to} does not take {full}-byte packets (its MTU is smaller; check the rail's routes)"
        ));
    } else if ok(&t.df1500) && !ok(&t.full) {
        out.push(format!(
            "{who}: MTU black hole towards {to}: 1500-byte pings pass, {full}-byte don't-fragment pings get no answer (a hop on the path has a smaller MTU)"
        ));
    } else if !ok(&t.df1500) && !ok(&t.full) {
        let why = if t.kind == "gateway" {
            "it answers ARP but not pings (an ACL dropping ICMP, or the leaf's routing)"
        } else {
            "check the peer's rail, the leaf's routes between the rails, and that the peer is up"
        };
        out.push(format!("{who}: {to} does not answer pings: {why}"));
    }
    out
}

fn print(r: &Report) {
    let size_header = r
        .rails
        .iter()
        .flat_map(|rail| rail.targets.first())
        .map(|t| format!("{} DF", t.size))
        .next()
        .unwrap_or_else(|| "FULL DF".into());
    let mut t = table::new(&[
        "RAIL",
        "IF",
        "LINK",
        "MTU",
        "TARGET",
        "NEIGHBOUR",
        "1500 DF",
        &size_header,
        "RTT ms",
    ]);
    for rail in &r.rails {
        let link = match (rail.up, rail.carrier) {
            (false, _) => "DOWN",
            (true, Some(false)) => "NO-CARRIER",
            (true, _) => "UP",
        };
        let rows = rail.targets.len().max(1);
        for i in 0..rows {
            let target = rail.targets.get(i);
            t.add_row(vec![
                rail.network.clone(),
                rail.ifname.clone(),
                link.to_string(),
                rail.mtu.to_string(),
                target.map_or_else(|| "-".into(), |t| format!("{} {}", t.kind, t.address)),
                or_dash(target.and_then(|t| t.neighbour.as_ref())),
                target.map_or_else(|| "-".into(), |t| t.df1500.clone()),
                target.map_or_else(|| "-".into(), |t| t.full.clone()),
                or_dash(target.and_then(|t| t.rtt_ms).map(|ms| format!("{ms:.3}"))),
            ]);
        }
    }
    println!("{t}");
    if r.problems.is_empty() {
        println!("\nall rails pass");
    } else {
        println!("\nproblems:");
        for p in &r.problems {
            println!("  {p}");
        }
    }
}
