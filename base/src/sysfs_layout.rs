//! Where the kernel's sysfs keeps what railcni reads, under a root that
//! tests point at a fake tree of the same layout: the one place a sysfs
//! path is spelt (`railcni::vf::Sysfs` reads through it, as do the IPAM's
//! `matchMasterSubnet` and the doctor).
//!
//! The layout is the kernel's ABI (Documentation/ABI/stable/sysfs-bus-pci,
//! testing/sysfs-class-net, stable/sysfs-class-infiniband).

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsLayout {
    root: PathBuf,
}

impl SysfsLayout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SysfsLayout { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A PCI device's directory (`bus/pci/devices/<pci>`): its `driver`,
    /// `net/`, `infiniband/`, a VF's `physfn`, a PF's `virtfn<N>` and
    /// `sriov_*` files.
    pub fn pci_device(&self, pci: &str) -> PathBuf {
        self.root.join("bus/pci/devices").join(pci)
    }

    /// The netdevs of a VF's PF (`bus/pci/devices/<vf>/physfn/net`).
    pub fn pf_netdevs_of_vf(&self, vf_pci: &str) -> PathBuf {
        self.pci_device(vf_pci).join("physfn/net")
    }

    /// A netdev's directory in this namespace's view (`class/net/<name>`):
    /// `flags`, `mtu`, `type`, `carrier`, `operstate`.
    pub fn netdev(&self, name: &str) -> PathBuf {
        self.netdevs().join(name)
    }

    /// A netdev's PCI device (`class/net/<name>/device`, a link to it).
    pub fn netdev_device(&self, name: &str) -> PathBuf {
        self.netdev(name).join("device")
    }

    pub fn netdevs(&self) -> PathBuf {
        self.root.join("class/net")
    }

    /// An RDMA device's directory in this namespace's view
    /// (`class/infiniband/<name>`).
    pub fn rdma_device(&self, name: &str) -> PathBuf {
        self.rdma_devices().join(name)
    }

    pub fn rdma_devices(&self) -> PathBuf {
        self.root.join("class/infiniband")
    }

    /// A PCI driver's directory (`bus/pci/drivers/<driver>`), with its
    /// `bind` and `unbind` files.
    pub fn pci_driver(&self, driver: &str) -> PathBuf {
        self.root.join("bus/pci/drivers").join(driver)
    }
}
