//! ADD: move the VF into the pod as CNI_IFNAME, configure it, address it.
//! A DPDK VF (no netdev) only gets its PF-side settings and an address.
//!
//! The phases, in order:
//! 1. `intent`: the VF and what the config asks of it, checked (no change);
//! 2. `previous`: judge a record the VF already has (replay, refuse, clear);
//! 3. `prepare`: the host link and preflight checks (no change);
//! 4. `steps`: the ordered host changes, each with its undo (`attach`),
//!    on the system (`system`; its RDMA decisions and GID wait: `rdma`);
//! 5. `report`: device-info file and the closing log line.

mod intent;
mod previous;
mod rdma;
mod report;
mod steps;
mod system;
mod whole_nic;

use cni::CniResult;

use crate::commands::ctx::Ctx;
use crate::error::Result;
use crate::net::{NetNs, Netlink};
use intent::Intent;
use previous::Previous;
use system::KernelAttach;

pub use report::summary_addresses;

pub fn add(ctx: &Ctx) -> Result<CniResult> {
    let intent = Intent::resolve(ctx)?;
    let _lock = ctx.node.store.lock_vf(&intent.vf.pci)?;
    let pod = NetNs::open(intent.netns)?;
    let host_nl = Netlink::connect_in(&ctx.node.host)?;
    let pod_nl = Netlink::connect_in(&pod)?;
    let sockets = system::Sockets {
        pod: &pod,
        pod_nl: &pod_nl,
        host_nl: &host_nl,
    };
    let cleared = match ctx.node.store.load(&intent.vf.pci)? {
        Some(existing) => match previous::settle(ctx, &intent, &sockets, &existing)? {
            Previous::Replay(result) => return Ok(result),
            Previous::Cleared(link) => link,
        },
        None => None,
    };
    let mut system = KernelAttach::prepare(ctx, &intent, sockets, cleared)?;
    let result = steps::attach(&mut system)?;
    report::attached(ctx, &intent, system.record(), &result, system.gid_index());
    Ok(result)
}
