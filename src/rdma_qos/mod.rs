//! RoCE QoS of a rail's RDMA device (`rdmaQoS`): the device's forced
//! traffic class and rdma_cm's default ToS, each saved before the first
//! write and put back exactly.
//!
//! Order (each half where the kernel lets it be written):
//! 1. `prepare`, before any change: what the device can take and what it
//!    holds now ("unset" and "no rdma_cm group" included), into the record;
//! 2. `write_traffic_class` on the host, before the device moves;
//! 3. `write_tos` after the move (rdma_cm forgets the value when the
//!    device changes namespace). configfs finds the device by name in
//!    every namespace (cma_configfs looks it up in rdma_cm's global device
//!    list), so the write is made from the host: entering the pod's
//!    namespace for it gains nothing and cost an ADD 0.4 to 1.5 ms of wall
//!    time (scripts/bench-qos.sh);
//! 4. `restore`, once the device is home (DEL, gc, rollback).

pub mod conf;
pub mod rdma_cm;
pub mod traffic_class;

use std::path::{Path, PathBuf};

pub use conf::{describe, RdmaQos};

use crate::error::{Error, Result};
use crate::{log_info, log_warn};

/// One value railcni writes and what it found before: `before: None` is
/// "no class set" for the traffic class (the ToS always has one in force).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub value: u8,
    pub before: Option<u8>,
}

/// What an attachment did to its RDMA device's QoS (kept in its record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosRecord {
    pub device: String,
    pub port: u32,
    pub traffic_class: Option<Change>,
    pub tos: Option<Change>,
    /// The device had no rdma_cm group: railcni makes it and removes it.
    pub tos_group_made: bool,
}

/// Where the device's two halves live.
pub struct Target<'a> {
    pub device: &'a str,
    /// The device's sysfs directory on the host (`None`: not found).
    pub device_dir: Option<PathBuf>,
    pub port: u32,
    pub configfs: &'a Path,
}

/// What the device can take of `asked`, and what it holds now. A half it
/// cannot take fails when `required` (nothing has changed yet) and is
/// reported and left out otherwise. `None`: nothing to write.
pub fn prepare(asked: RdmaQos, t: &Target<'_>, required: bool) -> Result<Option<QosRecord>> {
    let mut record = QosRecord {
        device: t.device.to_string(),
        port: t.port,
        traffic_class: None,
        tos: None,
        tos_group_made: false,
    };
    if let Some(value) = asked.tc {
        let file = t
            .device_dir
            .as_deref()
            .map(|d| traffic_class::path(d, t.port));
        match file.filter(|f| f.is_file()) {
            Some(file) => {
                let before = traffic_class::read(&file)?;
                record.traffic_class = Some(Change { value, before });
            }
            None => cannot(
                required,
                &format!(
                    "rdmaQoS.tc: RDMA device {} has no tc/{}/traffic_class (a forced traffic class \
                     needs NVIDIA's mlx5 driver stack)",
                    t.device, t.port
                ),
            )?,
        }
    }
    if let Some(value) = asked.tos {
        match rdma_cm::available(t.configfs) {
            Ok(()) => {
                let (before, had_group) = rdma_cm::read_in_force(t.configfs, t.device, t.port)?;
                record.tos = Some(Change {
                    value,
                    before: Some(before),
                });
                record.tos_group_made = !had_group;
            }
            Err(why) => cannot(
                required,
                &format!(
                    "rdmaQoS.tos: rdma_cm's default ToS cannot be set for {}: {why}",
                    t.device
                ),
            )?,
        }
    }
    Ok((record.traffic_class.is_some() || record.tos.is_some()).then_some(record))
}

/// A half the device cannot take: an error when the rail's RDMA is
/// `required`, else one warning.
fn cannot(required: bool, why: &str) -> Result<()> {
    if required {
        return Err(Error::UnsupportedDevice(format!(
            "{why}; nothing was changed"
        )));
    }
    log_warn!("{why}; left unset (rdma is auto)");
    Ok(())
}

/// The traffic class, on the host, before the device moves.
pub fn write_traffic_class(r: &QosRecord, device_dir: Option<&Path>) -> Result<()> {
    let Some(change) = r.traffic_class else {
        return Ok(());
    };
    let dir = device_dir.ok_or_else(|| {
        Error::DeviceVanished(format!("RDMA device {} left sysfs during ADD", r.device))
    })?;
    traffic_class::write(&traffic_class::path(dir, r.port), Some(change.value))?;
    log_info!(
        "RDMA device {} port {}: traffic class {}",
        r.device,
        r.port,
        describe(change.value)
    );
    Ok(())
}

/// rdma_cm's default ToS, once the device has moved.
pub fn write_tos(r: &QosRecord, configfs: &Path) -> Result<()> {
    let Some(change) = r.tos else { return Ok(()) };
    rdma_cm::write(configfs, &r.device, r.port, change.value)?;
    log_info!(
        "RDMA device {} port {}: rdma_cm default ToS {}",
        r.device,
        r.port,
        describe(change.value)
    );
    Ok(())
}

/// Put both back as `prepare` found them, once the device is home. A
/// device that is gone (a driver reload took it) has nothing to restore.
pub fn restore(r: &QosRecord, device_dir: Option<&Path>, configfs: &Path) -> Result<()> {
    let tc = match (r.traffic_class, device_dir) {
        (Some(change), Some(dir)) => {
            let file = traffic_class::path(dir, r.port);
            match traffic_class::write(&file, change.before) {
                Err(e) if !file.exists() => {
                    log_info!("RDMA device {} has no traffic class file any more ({e}); nothing to restore", r.device);
                    Ok(())
                }
                other => other,
            }
        }
        (Some(_), None) => {
            log_info!(
                "RDMA device {} is gone; its traffic class went with it",
                r.device
            );
            Ok(())
        }
        (None, _) => Ok(()),
    };
    let tos = match r.tos {
        // 0: the kernel's own default (every record railcni writes has one).
        Some(change) => rdma_cm::restore(
            configfs,
            &r.device,
            r.port,
            change.before.unwrap_or(0),
            r.tos_group_made,
        ),
        None => Ok(()),
    };
    match tos {
        Err(e) if tos_went_with_its_device(&e, configfs) => {
            log_info!(
                "rdma_cm no longer knows RDMA device {} ({}); its ToS went with it",
                r.device,
                e.details()
            );
            tc
        }
        other => tc.and(other),
    }
}

/// Whether a failed ToS restore means there is nothing left to restore:
/// rdma_cm answers ENODEV for a device it no longer has (the VF or its
/// driver is gone), and a configfs without `rdma_cm/` means the module,
/// and every value it held, was unloaded. A configfs that is not mounted
/// here is not that: the value may still be in force.
fn tos_went_with_its_device(e: &Error, configfs: &Path) -> bool {
    e.errno() == Some(nix::errno::Errno::ENODEV)
        || (rdma_cm::is_configfs(configfs) && !configfs.join("rdma_cm").is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(root: &Path, tc: Option<&str>, tos: Option<&str>) -> (PathBuf, PathBuf) {
        let dir = root.join("sys/mlx5_3");
        std::fs::create_dir_all(dir.join("ports/1")).unwrap();
        if let Some(tc) = tc {
            std::fs::create_dir_all(dir.join("tc/1")).unwrap();
            std::fs::write(dir.join("tc/1/traffic_class"), tc).unwrap();
        }
        let configfs = root.join("config");
        std::fs::create_dir_all(configfs.join("rdma_cm")).unwrap();
        if let Some(tos) = tos {
            let port = configfs.join("rdma_cm/mlx5_3/ports/1");
            std::fs::create_dir_all(&port).unwrap();
            std::fs::write(port.join("default_roce_tos"), tos).unwrap();
        }
        (dir, configfs)
    }

    fn target<'a>(dir: &Path, configfs: &'a Path) -> Target<'a> {
        Target {
            device: "mlx5_3",
            device_dir: Some(dir.to_path_buf()),
            port: 1,
            configfs,
        }
    }

    #[test]
    fn a_missing_group_is_read_through_one_made_for_the_moment() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), None);
        // A plain directory gets no ports/ from mkdir as configfs does:
        // the read fails, and the group made for it is gone again.
        let err = prepare(BOTH, &target(&dir, &configfs), true).unwrap_err();
        assert!(err.to_string().contains("default_roce_tos"), "{err}");
        assert!(!configfs.join("rdma_cm/mlx5_3").exists());
    }

    const BOTH: RdmaQos = RdmaQos {
        tc: Some(96),
        tos: Some(96),
    };

    #[test]
    fn unset_then_set_then_restored_to_unset() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), Some("0"));
        let r = prepare(BOTH, &target(&dir, &configfs), true)
            .unwrap()
            .unwrap();
        assert_eq!(
            r.traffic_class,
            Some(Change {
                value: 96,
                before: None
            })
        );
        assert_eq!(
            r.tos,
            Some(Change {
                value: 96,
                before: Some(0)
            })
        );
        write_traffic_class(&r, Some(&dir)).unwrap();
        write_tos(&r, &configfs).unwrap();
        let tc_file = dir.join("tc/1/traffic_class");
        let tos_file = configfs.join("rdma_cm/mlx5_3/ports/1/default_roce_tos");
        assert_eq!(std::fs::read_to_string(&tc_file).unwrap(), "96");
        assert_eq!(std::fs::read_to_string(&tos_file).unwrap(), "96");
        restore(&r, Some(&dir), &configfs).unwrap();
        assert_eq!(
            std::fs::read_to_string(&tc_file).unwrap(),
            "-1",
            "unset, not 0"
        );
        assert_eq!(std::fs::read_to_string(&tos_file).unwrap(), "0");
    }

    #[test]
    fn a_class_that_was_set_comes_back() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some("Global tclass=24\n"), Some("32"));
        let r = prepare(BOTH, &target(&dir, &configfs), true)
            .unwrap()
            .unwrap();
        write_traffic_class(&r, Some(&dir)).unwrap();
        restore(&r, Some(&dir), &configfs).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("tc/1/traffic_class")).unwrap(),
            "24"
        );
        assert_eq!(
            std::fs::read_to_string(configfs.join("rdma_cm/mlx5_3/ports/1/default_roce_tos"))
                .unwrap(),
            "32"
        );
    }

    #[test]
    fn what_the_device_cannot_take_is_refused_when_required_and_left_out_when_auto() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), None, Some("0"));
        let err = prepare(BOTH, &target(&dir, &configfs), true).unwrap_err();
        assert_eq!(err.code(), 103);
        let msg = err.to_string();
        assert!(
            msg.contains("no tc/1/traffic_class") && msg.contains("nothing was changed"),
            "{msg}"
        );
        let r = prepare(BOTH, &target(&dir, &configfs), false)
            .unwrap()
            .unwrap();
        assert_eq!(r.traffic_class, None, "left out");
        assert!(r.tos.is_some());

        let no_cm = t.path().join("empty-config");
        std::fs::create_dir_all(&no_cm).unwrap();
        let only_tos = RdmaQos {
            tc: None,
            tos: Some(96),
        };
        let err = prepare(only_tos, &target(&dir, &no_cm), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("modprobe rdma_cm"), "{err}");
        assert_eq!(
            prepare(only_tos, &target(&dir, &no_cm), false).unwrap(),
            None
        );
    }

    #[test]
    fn a_device_rdma_cm_no_longer_knows_has_nothing_to_restore() {
        let gone = Error::Kernel {
            what: "write 0 to default_roce_tos".into(),
            errno: nix::errno::Errno::ENODEV,
        };
        let t = tempfile::tempdir().unwrap();
        assert!(tos_went_with_its_device(&gone, t.path()));
        let refused = Error::Kernel {
            what: "write 0 to default_roce_tos".into(),
            errno: nix::errno::Errno::EROFS,
        };
        // A plain directory is no configfs: a missing rdma_cm/ there is not
        // proof the module went.
        assert!(!tos_went_with_its_device(&refused, t.path()));
    }

    #[test]
    fn a_failed_write_is_an_error_with_its_errno() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), Some("0"));
        let r = prepare(BOTH, &target(&dir, &configfs), true)
            .unwrap()
            .unwrap();
        // A directory where the value's file is: the write fails (EISDIR).
        let file = configfs.join("rdma_cm/mlx5_3/ports/1/default_roce_tos");
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        let err = write_tos(&r, &configfs).unwrap_err();
        assert_eq!(err.errno(), Some(nix::errno::Errno::EISDIR), "{err:?}");
    }
}
