//! What railcni and railcni-ipam stand on beside the CNI protocol (the
//! `cni` crate): `settings` (`RAILCNI_*`, read once), `log` (the one
//! logger, and where a config's `logFile` may point), `files` (locks with a
//! deadline, atomic writes), `liveness` (a netns's identity and the boot
//! it lives in, the proof a record and a lease carry), `netns_cookie` (the
//! namespace identity the kernel never reuses), `stats` (call counts
//! for `railcnictl metrics`), `fnv` (the lease file's hash), `node_file`
//! (the node file, its one type), `rdma_policy` (a rail's `rdma`) and
//! `sysfs_layout` (where sysfs keeps what railcni reads).

pub mod files;
pub mod fnv;
pub mod liveness;
pub mod log;
pub mod netns_cookie;
pub mod node_file;
pub mod plugin;
pub mod rdma_policy;
pub mod settings;
pub mod stats;
pub mod sysfs_layout;

pub use settings::Settings;
