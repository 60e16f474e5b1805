//! Resolving a VF from its PCI address through sysfs, read under a root
//! that tests point at a fake tree (it reads files; it changes nothing).
//!
//! Only paths of the real kernel layout are read:
//! `bus/pci/devices/<vf>/{physfn,driver,net/<ifname>}` and
//! `bus/pci/devices/<pf>/{sriov_offset,sriov_stride,virtfn<N>,net/<ifname>/mtu}`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use base::rdma_policy::LinkType;
use base::sysfs_layout::SysfsLayout;

/// Drivers that leave a VF without a netdev (DPDK / userspace I/O).
pub const DPDK_DRIVERS: &[&str] = &["vfio-pci", "uio_pci_generic", "igb_uio"];
const ARPHRD_INFINIBAND: &str = "32";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vf {
    pub pci: String,
    pub pf_pci: String,
    pub index: u32,
    pub driver: Option<String>,
    /// Netdev names sysfs lists for the VF (empty when it has none here).
    pub netdevs: Vec<String>,
    /// RDMA devices of the VF (`infiniband/<dev>`).
    pub rdma_devices: Vec<String>,
    pub pf_netdev: Option<String>,
    /// An InfiniBand VF: its netdev's `type` is 32 (ARPHRD_INFINIBAND).
    pub infiniband: bool,
    /// Not a VF: a whole PF the node file grants a rail (`wholeNic`),
    /// moved into the pod itself. `pf_pci` is its own address, `index` 0
    /// and `pf_netdev` none: nothing is set on a parent.
    pub whole: bool,
}

pub struct Sysfs {
    layout: SysfsLayout,
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Sysfs {
            layout: SysfsLayout::new(root),
        }
    }

    /// A PCI device's directory (`bus/pci/devices/<pci>`).
    pub fn device(&self, pci: &str) -> PathBuf {
        self.layout.pci_device(pci)
    }

    /// A netdev's directory as this namespace sees it (`class/net/<name>`).
    pub fn netdev_dir(&self, name: &str) -> PathBuf {
        self.layout.netdev(name)
    }

    /// The PCI device directory of the netdev `name` (its `device` link).
    pub fn netdev_device_dir(&self, name: &str) -> PathBuf {
        self.layout.netdev_device(name)
    }

    /// Where this namespace's RDMA devices are listed (`class/infiniband`).
    pub fn rdma_class_dir(&self) -> PathBuf {
        self.layout.rdma_devices()
    }

    pub fn resolve(&self, pci: &str) -> Result<Vf> {
        let pci = crate::pci::normalize(pci)?;
        let dev = self.device(&pci);
        if !dev.exists() {
            return Err(Error::DeviceNotFound(format!(
                "PCI device {pci} does not exist ({} is missing); check the deviceID the SR-IOV device plugin allocated",
                dev.display()
            )));
        }
        let pf_pci = link_target_name(&dev.join("physfn")).ok_or_else(|| {
            Error::DeviceNotFound(format!(
                "PCI device {pci} is not an SR-IOV VF (no physfn link); railcni moves VFs, and a whole \
                 PF only where the node file grants it to the network (networks.<name>.wholeNic)"
            ))
        })?;
        let index = self.vf_index(&pf_pci, &pci)?;
        let pf_netdev = list_dir(&self.device(&pf_pci).join("net"))
            .into_iter()
            .next();
        Ok(self.described(pci, pf_pci, index, pf_netdev))
    }

    /// A device as sysfs lists it: its driver, netdevs (and their link
    /// type), RDMA devices, beside what the caller found of its parent.
    fn described(&self, pci: String, pf_pci: String, index: u32, pf_netdev: Option<String>) -> Vf {
        let dev = self.device(&pci);
        let netdevs = list_dir(&dev.join("net"));
        let infiniband = (netdevs.first())
            .is_some_and(|n| link_type(&dev.join("net").join(n)) == LinkType::InfiniBand);
        Vf {
            driver: link_target_name(&dev.join("driver")),
            infiniband,
            netdevs,
            rdma_devices: list_dir(&dev.join("infiniband")),
            whole: pci == pf_pci,
            pf_netdev,
            pci,
            pf_pci,
            index,
        }
    }

    /// The PCI device at `pci` as a whole-NIC rail: a PF (or any device
    /// with a netdev) moved into the pod itself. Only for a device the
    /// node file grants (ADD checks the grant) or a record names.
    pub fn resolve_whole(&self, pci: &str) -> Result<Vf> {
        let pci = crate::pci::normalize(pci)?;
        let dev = self.device(&pci);
        if !dev.exists() {
            return Err(Error::DeviceNotFound(format!(
                "PCI device {pci} does not exist ({} is missing)",
                dev.display()
            )));
        }
        Ok(self.described(pci.clone(), pci, 0, None))
    }

    /// The device an attachment record names: a VF, else (no physfn) the
    /// whole PF a whole-NIC rail moved. DEL, re-attach and `status` read
    /// records; only ADD decides what may be attached.
    pub fn resolve_recorded(&self, pci: &str) -> Result<Vf> {
        let pci = crate::pci::normalize(pci)?;
        match link_target_name(&self.device(&pci).join("physfn")) {
            Some(_) => self.resolve(&pci),
            None => self.resolve_whole(&pci),
        }
    }

    /// The PCI address of the netdev `ifname` as sysfs lists it on the
    /// host (`class/net/<ifname>/device`).
    pub fn pci_of_netdev(&self, ifname: &str) -> Option<String> {
        link_target_name(&self.layout.netdev_device(ifname))
    }

    /// The VFs of the PF netdev `pf` (its `virtfn<N>` links), by PCI
    /// address in VF order.
    pub fn vf_pcis_of(&self, pf: &str) -> Vec<String> {
        let device = self.layout.netdev_device(pf);
        let mut links: Vec<(u32, String)> = list_dir(&device)
            .into_iter()
            .filter_map(|n| {
                let index = n.strip_prefix("virtfn")?.parse().ok()?;
                Some((index, link_target_name(&device.join(&n))?))
            })
            .collect();
        links.sort();
        links.into_iter().map(|(_, pci)| pci).collect()
    }

    /// The sysfs directory of the RDMA device `device` in this namespace's
    /// view (`class/infiniband/<device>`), when it is there.
    pub fn class_rdma_device_dir(&self, device: &str) -> Option<PathBuf> {
        let dir = self.layout.rdma_device(device);
        (!device.contains('/') && dir.is_dir()).then_some(dir)
    }

    /// How many VFs the PF at `pci` has enabled (`sriov_numvfs`; 0 for a
    /// device without SR-IOV).
    pub fn numvfs(&self, pci: &str) -> u32 {
        fs::read_to_string(self.device(pci).join("sriov_numvfs"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The VF's index on its PF: the one its routing ID gives, confirmed by
    /// that `virtfn<N>` link, else by reading every `virtfn` link (one
    /// readlink each, up to 127 of them on a PF with every VF enabled).
    fn vf_index(&self, pf_pci: &str, vf_pci: &str) -> Result<u32> {
        let pf = self.device(pf_pci);
        let read = |name: &str| -> Option<u32> {
            fs::read_to_string(pf.join(name)).ok()?.trim().parse().ok()
        };
        if let Some(index) = read("sriov_offset")
            .zip(read("sriov_stride"))
            .and_then(|(offset, stride)| index_by_rid(pf_pci, vf_pci, offset, stride))
        {
            let link = pf.join(format!("virtfn{index}"));
            if link_target_name(&link).as_deref() == Some(vf_pci) {
                return Ok(index);
            }
        }
        let entries = fs::read_dir(&pf).map_err(|e| {
            Error::DeviceNotFound(format!(
                "cannot read PF {pf_pci} of VF {vf_pci} ({}): {e}",
                pf.display()
            ))
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(n) = name.to_str().and_then(|n| n.strip_prefix("virtfn")) else {
                continue;
            };
            let Ok(index) = n.parse::<u32>() else {
                continue;
            };
            if link_target_name(&entry.path()).as_deref() == Some(vf_pci) {
                return Ok(index);
            }
        }
        Err(Error::DeviceNotFound(format!(
            "PF {pf_pci} has no virtfn link to VF {vf_pci}; is SR-IOV still enabled on it?"
        )))
    }

    /// The driver bound to a PCI device (`igb`, `mlx5_core`).
    pub fn driver(&self, pci: &str) -> Option<String> {
        link_target_name(&self.device(pci).join("driver"))
    }

    /// The VF's netdev names now (after a driver rebind they may differ).
    pub fn netdevs(&self, pci: &str) -> Vec<String> {
        list_dir(&self.device(pci).join("net"))
    }

    /// The VF's RDMA devices as sysfs lists them now: after a driver
    /// rebind the kernel may have registered them under other names.
    pub fn rdma_devices(&self, pci: &str) -> Vec<String> {
        list_dir(&self.device(pci).join("infiniband"))
    }

    /// The `ports/` directory of the VF's RDMA device `dev`: under the VF's
    /// own `infiniband/` (visible whichever namespace holds the device),
    /// else `class/infiniband/<dev>`.
    pub fn rdma_ports(&self, pci: &str, dev: &str) -> Option<PathBuf> {
        [
            self.device(pci).join("infiniband").join(dev).join("ports"),
            self.layout.rdma_device(dev).join("ports"),
        ]
        .into_iter()
        .find(|p| p.is_dir())
    }

    /// Whether this is the kernel's own `/sys` (not a test tree).
    pub fn is_kernels(&self) -> bool {
        self.layout.root() == Path::new(base::settings::DEFAULT_SYSFS_ROOT)
    }

    /// The sysfs directory of the VF's RDMA device `dev` as the host sees
    /// it (its `ports/`, and on mlx5 its `tc/`).
    pub fn rdma_device_dir(&self, pci: &str, dev: &str) -> Option<PathBuf> {
        [
            self.device(pci).join("infiniband").join(dev),
            self.layout.rdma_device(dev),
        ]
        .into_iter()
        .find(|p| p.is_dir())
    }

    /// Run `f` on the sysfs directory of `pci`'s RDMA device `device`: the
    /// host's, when it shows the device (shared mode, a test tree), else
    /// the pod's own view when this is the kernel's sysfs (a device that
    /// moved is shown only there); `None` when neither does.
    pub fn with_rdma_device_dir<T: Send>(
        &self,
        pod: &crate::net::NetNs,
        pci: &str,
        device: &str,
        f: impl FnOnce(Option<&Path>) -> T + Send,
    ) -> Result<T> {
        if let Some(dir) = self.rdma_device_dir(pci, device) {
            return Ok(f(Some(&dir)));
        }
        if !self.is_kernels() {
            return Ok(f(None));
        }
        crate::net::pod_sysfs::with_sysfs_of(pod, |root| {
            let dir = Sysfs::new(root).rdma_device_dir(pci, device);
            f(dir.as_deref())
        })
    }

    /// The directory of a PCI driver (`bus/pci/drivers/<driver>`).
    pub fn driver_dir(&self, driver: &str) -> PathBuf {
        self.layout.pci_driver(driver)
    }

    /// The PF netdev's MTU, the ceiling for the VF's (none for a whole
    /// PF: its own MTU is what ADD changes; the driver's maximum bounds it).
    pub fn pf_mtu(&self, vf: &Vf) -> Option<u32> {
        let pf_if = vf.pf_netdev.as_ref()?;
        let path = self.device(&vf.pf_pci).join("net").join(pf_if).join("mtu");
        fs::read_to_string(path).ok()?.trim().parse().ok()
    }
}

/// The port of the RDMA device at `device_dir` whose GID table names one
/// of `netdevs` (the VF's netdev, under its host and its pod name): a
/// multi-port device (ConnectX-8 in multiplane mode, a PF's device shared
/// by its planes) carries the VF on one port only, not always the first.
/// Else its only port; else its lowest, as before ports were matched; 1
/// when sysfs shows none.
pub fn port_of(device_dir: Option<&Path>, netdevs: &[&str]) -> u32 {
    let ports_dir = device_dir.map(|d| d.join("ports"));
    let mut ports: Vec<u32> = (ports_dir.as_deref())
        .map(list_dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    ports.sort_unstable();
    let names_the_vf = |port: &u32| {
        let ndevs = ports_dir
            .as_deref()
            .map(|d| d.join(port.to_string()).join("gid_attrs/ndevs"));
        let entries = ndevs.as_deref().map(list_dir).unwrap_or_default();
        entries.iter().any(|i| {
            let name = ndevs
                .as_deref()
                .and_then(|d| fs::read_to_string(d.join(i)).ok());
            name.is_some_and(|n| netdevs.contains(&n.trim()))
        })
    };
    match ports.iter().find(|p| names_the_vf(p)) {
        Some(port) => *port,
        None => ports.first().copied().unwrap_or(1),
    }
}

/// A netdev's link type, from its sysfs directory's `type` (32 is
/// ARPHRD_INFINIBAND; anything else, or nothing to read, Ethernet).
pub fn link_type(netdev_dir: &Path) -> LinkType {
    match fs::read_to_string(netdev_dir.join("type")) {
        Ok(t) if t.trim() == ARPHRD_INFINIBAND => LinkType::InfiniBand,
        _ => LinkType::Ethernet,
    }
}

impl Vf {
    pub fn link_type(&self) -> LinkType {
        match self.infiniband {
            true => LinkType::InfiniBand,
            false => LinkType::Ethernet,
        }
    }

    /// The VF's netdev under every name it goes by: the host's (sysfs) and
    /// `pod_ifname`, what an RDMA device's GID table may name it.
    pub fn netdev_names<'a>(&'a self, pod_ifname: &'a str) -> Vec<&'a str> {
        let mut names: Vec<&str> = self.netdevs.iter().map(String::as_str).collect();
        names.push(pod_ifname);
        names
    }

    pub fn is_dpdk(&self) -> bool {
        self.driver
            .as_deref()
            .is_some_and(|d| DPDK_DRIVERS.contains(&d))
    }

    /// Bound to a netdev driver: its netdev exists somewhere (the host or
    /// a namespace), even when sysfs here lists none.
    pub fn has_netdev_driver(&self) -> bool {
        self.driver.is_some() && !self.is_dpdk()
    }
}

/// The index of VF `vf` of PF `pf` by the SR-IOV capability's rule: the
/// n-th VF's routing ID (bus << 8 | device << 3 | function) is the PF's
/// plus First VF Offset plus n times VF Stride (`sriov_offset`,
/// `sriov_stride`). `None` when the addresses do not fit that rule.
fn index_by_rid(pf: &str, vf: &str, offset: u32, stride: u32) -> Option<u32> {
    let (pf_domain, pf_rid) = routing_id(pf)?;
    let (vf_domain, vf_rid) = routing_id(vf)?;
    if pf_domain != vf_domain || stride == 0 {
        return None;
    }
    let from_first = vf_rid.checked_sub(pf_rid)?.checked_sub(offset)?;
    (from_first % stride == 0).then_some(from_first / stride)
}

/// A normalized `DDDD:BB:DD.F` as (domain, routing ID).
fn routing_id(pci: &str) -> Option<(u32, u32)> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let domain = hex(pci.get(0..4)?)?;
    let bus = hex(pci.get(5..7)?)?;
    let device = hex(pci.get(8..10)?)?;
    let function = hex(pci.get(11..12)?)?;
    Some((domain, bus << 8 | device << 3 | function))
}

pub fn link_target_name(link: &Path) -> Option<String> {
    let target = fs::read_link(link).ok()?;
    Some(target.file_name()?.to_str()?.to_string())
}

/// A directory's entry names, sorted (none when it cannot be read).
pub fn list_dir(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Build `root` like the kernel: a PF with VFs under `devices/pci0000:00`,
    /// `bus/pci/devices/<bdf>` links, drivers and net dirs.
    pub fn fake_vf(root: &Path, pf: &str, pf_if: &str, vfs: &[(&str, Option<&str>, &str)]) {
        let devices = root.join("devices/pci0000:00");
        let bus = root.join("bus/pci/devices");
        fs::create_dir_all(&bus).unwrap();
        let pf_dir = devices.join(pf);
        fs::create_dir_all(pf_dir.join("net").join(pf_if)).unwrap();
        fs::write(pf_dir.join("net").join(pf_if).join("mtu"), "9000\n").unwrap();
        symlink(format!("../../../devices/pci0000:00/{pf}"), bus.join(pf)).unwrap();
        for (i, (vf, netdev, driver)) in vfs.iter().enumerate() {
            let d = devices.join(vf);
            fs::create_dir_all(&d).unwrap();
            symlink(format!("../{pf}"), d.join("physfn")).unwrap();
            symlink(format!("../{vf}"), pf_dir.join(format!("virtfn{i}"))).unwrap();
            let drv = root.join("bus/pci/drivers").join(driver);
            fs::create_dir_all(&drv).unwrap();
            symlink(
                format!("../../../bus/pci/drivers/{driver}"),
                d.join("driver"),
            )
            .unwrap();
            if let Some(n) = netdev {
                fs::create_dir_all(d.join("net").join(n)).unwrap();
            }
            symlink(format!("../../../devices/pci0000:00/{vf}"), bus.join(vf)).unwrap();
        }
    }

    #[test]
    fn resolves_pf_index_netdev_and_driver() {
        let t = tempfile::tempdir().unwrap();
        fake_vf(
            t.path(),
            "0000:3b:00.0",
            "ens1f0",
            &[
                ("0000:3b:00.2", Some("ens1f0v0"), "mlx5_core"),
                ("0000:3b:00.3", Some("ens1f0v1"), "mlx5_core"),
            ],
        );
        let vf = Sysfs::new(t.path()).resolve("0000:3B:00.3").unwrap();
        assert_eq!(vf.pf_pci, "0000:3b:00.0");
        assert_eq!(vf.index, 1);
        assert_eq!(vf.netdevs, vec!["ens1f0v1"]);
        assert_eq!(vf.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(vf.pf_netdev.as_deref(), Some("ens1f0"));
        assert_eq!(Sysfs::new(t.path()).pf_mtu(&vf), Some(9000));
    }

    #[test]
    fn refuses_a_device_without_physfn() {
        let t = tempfile::tempdir().unwrap();
        fake_vf(t.path(), "0000:3b:00.0", "ens1f0", &[]);
        let e = Sysfs::new(t.path()).resolve("0000:3b:00.0").unwrap_err();
        assert_eq!(e.code(), 102);
        assert!(e.details().contains("not an SR-IOV VF"), "{e}");
    }

    #[test]
    fn missing_device_and_bad_address() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            Sysfs::new(t.path())
                .resolve("0000:3b:00.5")
                .unwrap_err()
                .code(),
            102
        );
        for bad in ["../../etc", "0000:3b:00.8", "3b:00.1", "0000:3b:00.2/x"] {
            assert_eq!(
                Sysfs::new(t.path()).resolve(bad).unwrap_err().code(),
                7,
                "{bad}"
            );
        }
    }

    #[test]
    fn dpdk_drivers_and_rdma_devices() {
        let t = tempfile::tempdir().unwrap();
        fake_vf(
            t.path(),
            "0000:3b:00.0",
            "ens1f0",
            &[
                ("0000:3b:00.2", None, "vfio-pci"),
                ("0000:3b:00.3", Some("ens1f0v1"), "mlx5_core"),
            ],
        );
        fs::create_dir_all(
            t.path()
                .join("devices/pci0000:00/0000:3b:00.3/infiniband/mlx5_3"),
        )
        .unwrap();
        let dpdk = Sysfs::new(t.path()).resolve("0000:3b:00.2").unwrap();
        assert!(dpdk.netdevs.is_empty() && dpdk.is_dpdk());
        let rdma = Sysfs::new(t.path()).resolve("0000:3b:00.3").unwrap();
        assert!(!rdma.is_dpdk());
        assert_eq!(rdma.rdma_devices, vec!["mlx5_3"]);
    }

    #[test]
    fn the_routing_id_gives_the_vf_index() {
        let pf = "0000:3b:00.0";
        assert_eq!(index_by_rid(pf, "0000:3b:00.2", 2, 1), Some(0));
        assert_eq!(index_by_rid(pf, "0000:3b:00.7", 2, 1), Some(5));
        assert_eq!(
            index_by_rid(pf, "0000:3b:01.0", 2, 1),
            Some(6),
            "next device"
        );
        assert_eq!(
            index_by_rid(pf, "0000:3c:00.0", 8, 1),
            Some(248),
            "next bus"
        );
        assert_eq!(index_by_rid(pf, "0000:3b:00.6", 2, 2), Some(2));
        assert_eq!(
            index_by_rid(pf, "0000:3b:00.5", 2, 2),
            None,
            "between strides"
        );
        assert_eq!(
            index_by_rid(pf, "0000:3b:00.1", 2, 1),
            None,
            "before the first VF"
        );
        assert_eq!(
            index_by_rid(pf, "0001:3b:00.2", 2, 1),
            None,
            "another domain"
        );
        assert_eq!(index_by_rid(pf, "0000:3b:00.2", 2, 0), None, "no stride");
    }

    #[test]
    fn a_pf_whose_offset_does_not_fit_is_still_read_link_by_link() {
        let t = tempfile::tempdir().unwrap();
        let vfs = [
            ("0000:3b:00.2", Some("ens1f0v0"), "mlx5_core"),
            ("0000:3b:00.3", Some("ens1f0v1"), "mlx5_core"),
        ];
        fake_vf(t.path(), "0000:3b:00.0", "ens1f0", &vfs);
        let pf = t.path().join("devices/pci0000:00/0000:3b:00.0");
        let sysfs = Sysfs::new(t.path());
        for (offset, stride) in [("2", "1"), ("1", "1"), ("7", "1"), ("x", "1")] {
            fs::write(pf.join("sriov_offset"), offset).unwrap();
            fs::write(pf.join("sriov_stride"), stride).unwrap();
            let index = sysfs.resolve("0000:3b:00.3").unwrap().index;
            assert_eq!(index, 1, "offset {offset}");
        }
    }
}
