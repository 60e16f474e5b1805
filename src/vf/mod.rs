//! The VF: found through sysfs (`sysfs`), its PF-side settings applied and
//! restored with the driver rebind InfiniBand needs (`settings`), and its
//! netdev found wherever it is and brought home (`home`).

pub mod home;
pub mod ipoib;
pub mod settings;
pub mod sysfs;

pub use sysfs::{Sysfs, Vf};
