//! Where the kernel keeps each `RoceAttr` of a device's port: mlx5's
//! traffic class file in sysfs, rdma_cm's group and ToS in configfs. The
//! `Hardware` trait's RoCE half (the kernel's, and the fake's over a fake
//! sysfs and configfs tree).

use std::path::PathBuf;

use super::{rdma_cm, traffic_class, Reading, RoceAttr, RoceSettings};
use crate::error::{Error, Result};

/// An RDMA device's port and where its files are.
#[derive(Debug, Clone)]
pub struct RocePort {
    pub device: String,
    pub port: u32,
    /// The device's sysfs directory as seen now (`None`: not found).
    pub device_dir: Option<PathBuf>,
    pub configfs: PathBuf,
}

impl RocePort {
    /// Port `port` of `device`, whose sysfs directory is `device_dir` as
    /// the caller sees it (the host's, or a pod's view), under `configfs`.
    pub fn new(
        device: &str,
        port: u32,
        device_dir: Option<PathBuf>,
        configfs: &std::path::Path,
    ) -> Self {
        RocePort {
            device: device.to_string(),
            port,
            device_dir,
            configfs: configfs.to_path_buf(),
        }
    }

    fn traffic_class_file(&self) -> Option<PathBuf> {
        let dir = self.device_dir.as_deref()?;
        Some(traffic_class::path(dir, self.port))
    }
}

/// What the port holds now of `kind`'s kind, as the attributes that put
/// it back: the ToS comes with whether rdma_cm had a group for the device
/// (read `ToChange` through one made for the moment). `UnsupportedDevice`
/// says why a device cannot take it, or, `Observe`d, why it is unknown.
pub fn read(at: &RocePort, kind: &RoceAttr, how: Reading) -> Result<RoceSettings> {
    match kind {
        RoceAttr::TrafficClass(_) => {
            let file = at.traffic_class_file().filter(|f| f.is_file());
            let file = file.ok_or_else(|| {
                Error::UnsupportedDevice(format!(
                    "RDMA device {} has no tc/{}/traffic_class (a forced traffic class needs \
                     NVIDIA's mlx5 driver stack)",
                    at.device, at.port
                ))
            })?;
            let class = traffic_class::read(&file)?;
            Ok(RoceSettings::from_attrs([RoceAttr::TrafficClass(class)]))
        }
        RoceAttr::DefaultTos(_) if how == Reading::Observe => observe_tos(at),
        RoceAttr::DefaultTos(_) => {
            rdma_cm::available(&at.configfs).map_err(|why| {
                Error::UnsupportedDevice(format!(
                    "rdma_cm's default ToS cannot be set for {}: {why}",
                    at.device
                ))
            })?;
            let (tos, had_group) = rdma_cm::read_in_force(&at.configfs, &at.device, at.port)?;
            Ok(RoceSettings::from_attrs([
                RoceAttr::DefaultTos(tos),
                RoceAttr::RdmaCmGroup(had_group),
            ]))
        }
        RoceAttr::RdmaCmGroup(_) => Ok(RoceSettings::from_attrs([RoceAttr::RdmaCmGroup(
            rdma_cm::group(&at.configfs, &at.device).is_dir(),
        )])),
    }
}

/// rdma_cm's ToS as it can be read without changing anything: through the
/// device's group when it has one, else unknown.
fn observe_tos(at: &RocePort) -> Result<RoceSettings> {
    let unknown = |why: String| Error::UnsupportedDevice(format!("unknown: {why}"));
    if !at.configfs.join("rdma_cm").is_dir() {
        return Err(unknown(format!(
            "{} is not there (configfs not mounted, or rdma_cm not loaded); a read mounts nothing",
            at.configfs.join("rdma_cm").display()
        )));
    }
    match rdma_cm::read(&at.configfs, &at.device, at.port)? {
        Some(tos) => Ok(RoceSettings::from_attrs([
            RoceAttr::DefaultTos(tos),
            RoceAttr::RdmaCmGroup(true),
        ])),
        None => Err(unknown(format!(
            "rdma_cm has no group for {}; reading its ToS would make one",
            at.device
        ))),
    }
}

/// Write one attribute.
pub fn write(at: &RocePort, attr: &RoceAttr) -> Result<()> {
    match *attr {
        RoceAttr::TrafficClass(class) => {
            let file = at.traffic_class_file().ok_or_else(|| {
                Error::DeviceVanished(format!("RDMA device {} left sysfs", at.device))
            })?;
            traffic_class::write(&file, class)
        }
        RoceAttr::RdmaCmGroup(true) => rdma_cm::make_group_if_absent(&at.configfs, &at.device),
        RoceAttr::RdmaCmGroup(false) => rdma_cm::remove_group(&at.configfs, &at.device),
        RoceAttr::DefaultTos(tos) => rdma_cm::write(&at.configfs, &at.device, at.port, tos),
    }
}

/// Why a failed restore of `attr` means nothing is left to restore, if it
/// does: the device left sysfs (a driver reload took it, its class with
/// it), rdma_cm answers ENODEV for a device it no longer has, or configfs
/// has no `rdma_cm/` (the module, and every value it held, was unloaded).
/// A configfs that is not mounted here is not that: the value may still be
/// in force.
pub fn went_with_its_device(at: &RocePort, attr: &RoceAttr, e: &Error) -> Option<String> {
    match attr {
        RoceAttr::TrafficClass(_) => {
            (!at.traffic_class_file().is_some_and(|f| f.exists())).then(|| {
                format!(
                    "RDMA device {} is gone; its traffic class went with it",
                    at.device
                )
            })
        }
        RoceAttr::RdmaCmGroup(_) | RoceAttr::DefaultTos(_) => {
            let gone = e.errno() == Some(nix::errno::Errno::ENODEV)
                || (rdma_cm::is_configfs(&at.configfs) && !at.configfs.join("rdma_cm").is_dir());
            gone.then(|| {
                format!(
                    "rdma_cm no longer knows RDMA device {} ({}); its ToS went with it",
                    at.device,
                    e.details()
                )
            })
        }
    }
}
