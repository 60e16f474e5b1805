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

    /// Move VF `pci`'s RDMA device from the host into `to`, named by the
    /// VF's PCI address at that moment (a driver rebind registers it under
    /// the first free `mlx5_%d`, and udev may rename it just after): a name
    /// that vanished between the read and the move is read again, a few
    /// times. `named` hears each name before its move (ADD records it, so
    /// DEL knows the device whatever happens next). The name that moved;
    /// `None` when sysfs lists no RDMA device for the VF.
    pub fn move_rdma_device_of(
        &self,
        pci: &str,
        to: std::os::fd::BorrowedFd<'_>,
        mut named: impl FnMut(&str) -> Result<()>,
    ) -> Result<Option<String>> {
        let mut tries = 0;
        loop {
            let Some(device) = self.sysfs.rdma_devices(pci).into_iter().next() else {
                return Ok(None);
            };
            named(&device)?;
            match self.hw.move_rdma_device(&device, &self.host, to) {
                Err(crate::error::Error::DeviceNotFound(why)) if tries < 3 => {
                    crate::log_info!("{why}; reading VF {pci}'s RDMA device again");
                    tries += 1;
                }
                moved => return moved.map(|()| Some(device)),
            }
        }
    }

    /// Port `port` of VF `pci`'s RDMA device `device`, as the host sees it.
    pub fn roce_port(&self, pci: &str, device: &str, port: u32) -> crate::rdma_qos::RocePort {
        let dir = self.sysfs.rdma_device_dir(pci, device);
        crate::rdma_qos::RocePort::new(device, port, dir, &self.settings.configfs_root)
    }
}
