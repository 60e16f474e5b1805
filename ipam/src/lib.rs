//! railcni's per-node rail IPAM: one point-to-point prefix per node per rail
//! (a /31 by default, the leaf switch port being the gateway), leased from a
//! local file. The plugin calls it in-process; `railcni-ipam` wraps it as a
//! CNI IPAM plugin.

pub mod allocator;
pub mod config;
pub mod error;
pub mod inline;
pub mod master;
pub mod operator;
pub mod pool;
pub mod store;

pub use allocator::{AllocatedIp, Allocation, Holder, Ipam, PoolRoute, Released};
pub use error::IpamError;
pub use operator::{release_lease, repair, stores, Repaired, StoreView};
pub use store::repair_command;
