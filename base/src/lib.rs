//! What railcni and railcni-ipam stand on beside the CNI protocol (the
//! `cni` crate): `settings` (`RAILCNI_*`, read once), `log` (the one
//! logger, and where a config's `logFile` may point), `files` (locks with a
//! deadline, atomic writes), `liveness` (a netns's identity and the boot
//! it lives in, the proof a record and a lease carry), `stats` (call counts
//! for `railcnictl metrics`) and `fnv` (the lease file's hash).

pub mod files;
pub mod fnv;
pub mod liveness;
pub mod log;
pub mod plugin;
pub mod settings;
pub mod stats;

pub use settings::Settings;
