//! The CNI verbs. Each takes the validated request and returns a result or a typed error.

pub mod add;
pub mod check;
pub mod del;
pub mod detach;
pub mod gc;
mod home;
mod rail;
pub mod status;
pub mod verify;

use std::cell::OnceCell;

use cni::{Env, Settings};

use crate::config::NetConf;
use crate::hw::Hardware;
use crate::ipam::Ipam;
use crate::net::NetNs;
use crate::sriov::Sysfs;
use crate::state::Store;

/// Everything a command needs: the request, and where the system is.
pub struct Ctx {
    pub env: Env,
    pub conf: NetConf,
    pub settings: Settings,
    pub store: Store,
    pub sysfs: Sysfs,
    pub hw: Box<dyn Hardware>,
    /// The namespace the plugin runs in; VFs return here.
    pub host: NetNs,
    ipam_pool: OnceCell<railcni_ipam::Ipam>,
}

impl Ctx {
    pub fn new(env: Env, conf: NetConf, settings: Settings, host: NetNs) -> Self {
        Ctx {
            store: Store::new(&settings),
            sysfs: Sysfs::new(&settings.sysfs_root),
            hw: crate::hw::backend(&settings),
            env,
            conf,
            settings,
            host,
            ipam_pool: OnceCell::new(),
        }
    }

    /// This attachment's IPAM, if the network has one.
    pub fn ipam(&self) -> Option<Ipam<'_>> {
        Ipam::new(&self.conf, &self.env, &self.settings, &self.ipam_pool)
    }
}
