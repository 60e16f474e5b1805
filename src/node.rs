//! The node a command works on: where state lives, how the VFs and the PF
//! are reached, and the namespace VFs go home to. CNI verbs add the request
//! to it (`commands::Ctx`); detach and the day-2 commands need only this.

use base::Settings;

use crate::error::Result;
use crate::hw::Hardware;
use crate::net::NetNs;
use crate::state::AttachmentStore;
use crate::vf::Sysfs;

pub struct Node {
    pub settings: Settings,
    pub store: AttachmentStore,
    pub sysfs: Sysfs,
    pub hw: Box<dyn Hardware>,
    /// The namespace railcni runs in; VFs return here.
    pub host: NetNs,
}

impl Node {
    /// The node as the settings describe it, with the current namespace as host.
    pub fn new(settings: Settings) -> Result<Self> {
        Ok(Node {
            store: AttachmentStore::new(&settings),
            sysfs: Sysfs::new(&settings.sysfs_root),
            hw: crate::hw::backend(),
            host: NetNs::current()?,
            settings,
        })
    }

    /// Port `port` of VF `pci`'s RDMA device `device`, as the host sees it.
    pub fn roce_port(&self, pci: &str, device: &str, port: u32) -> crate::rdma_qos::RocePort {
        let dir = self.sysfs.rdma_device_dir(pci, device);
        crate::rdma_qos::RocePort::new(device, port, dir, &self.settings.configfs_root)
    }
}
