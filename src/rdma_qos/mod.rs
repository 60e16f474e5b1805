//! RoCE QoS of a rail's RDMA device (`rdmaQoS`): the device's forced
//! traffic class and rdma_cm's default ToS, attributes of the device's
//! port in the VF settings' shape (`net::roce`), saved before the first
//! write, written and restored through the `Hardware` trait.
//!
//! Order (each where the kernel lets it be written):
//! 1. `prepare`, before any change: what the device can take and what it
//!    holds now ("unset" and "no rdma_cm group" included), into the record;
//! 2. `apply(.., Moment::OnHost)`: the traffic class, before the device moves;
//! 3. `apply(.., Moment::AfterMove)`: the ToS (rdma_cm forgets the value
//!    when the device changes namespace). configfs finds the device by name
//!    in every namespace (cma_configfs looks it up in rdma_cm's global
//!    device list), so the write is made from the host: entering the pod's
//!    namespace for it gains nothing and cost an ADD 0.4 to 1.5 ms of wall
//!    time (scripts/bench-qos.sh);
//! 4. `restore`, once the device is home (DEL, gc, rollback): newest first.

pub mod conf;

use crate::net::roce::files;
pub use crate::net::roce::{RoceAttr, RocePort, RoceSettings};
pub use conf::{describe, parse};

use crate::attr_set::Attr as _;
use crate::error::{Error, Result};
use crate::hw::Hardware;
use crate::{log_info, log_warn};

/// What an attachment did to its RDMA device's QoS (kept in its record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosRecord {
    pub device: String,
    pub port: u32,
    /// What the port held before, of the kinds railcni writes.
    pub restore: RoceSettings,
    /// What railcni writes.
    pub applied: RoceSettings,
}

impl QosRecord {
    /// The traffic class railcni forces, when it does.
    pub fn traffic_class(&self) -> Option<u8> {
        self.applied
            .get(&RoceAttr::TrafficClass(None))
            .and_then(|a| a.byte())
    }

    /// The class the rail's RDMA traffic carries: the traffic class
    /// railcni forces, else the ToS it gives rdma_cm (on RoCE v2 both are
    /// the IP ToS byte).
    pub fn class(&self) -> Option<u8> {
        self.traffic_class().or(self.tos())
    }

    /// rdma_cm's default ToS railcni sets, when it does.
    pub fn tos(&self) -> Option<u8> {
        self.applied
            .get(&RoceAttr::DefaultTos(0))
            .and_then(|a| a.byte())
    }

    /// The settings a user asked for (not the means, the rdma_cm group).
    pub fn asked(&self) -> RoceSettings {
        RoceSettings::from_attrs(
            self.applied
                .attrs()
                .iter()
                .filter(|a| a.is_asked())
                .copied(),
        )
    }

    /// Whether any is written before the device moves.
    pub fn writes_before_move(&self) -> bool {
        self.applied.attrs().iter().any(RoceAttr::before_move)
    }
}

/// When a write is made: on the host before the device moves, or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    OnHost,
    AfterMove,
}

/// What the device can take of `asked`, and what it holds now. A setting
/// it cannot take fails when `required` (nothing has changed yet) and is
/// reported and left out otherwise. `None`: nothing to write.
pub fn prepare(
    hw: &dyn Hardware,
    at: &RocePort,
    asked: &RoceSettings,
    required: bool,
) -> Result<Option<QosRecord>> {
    let mut restore = RoceSettings::default();
    let mut applied = RoceSettings::default();
    for want in asked.attrs() {
        match hw.roce_state(at, want, crate::net::roce::Reading::ToChange) {
            Ok(before) => {
                restore.overlay(&before);
                for held in before.attrs() {
                    applied.set(held.as_written());
                }
                applied.set(*want);
            }
            Err(Error::UnsupportedDevice(why)) => {
                cannot(required, &format!("{}: {why}", want.name()))?
            }
            Err(e) => return Err(e),
        }
    }
    Ok((!applied.is_empty()).then(|| QosRecord {
        device: at.device.clone(),
        port: at.port,
        restore,
        applied,
    }))
}

/// A setting the device cannot take: an error when the rail's RDMA is
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

/// Write what `r` applies at `moment`.
pub fn apply(hw: &dyn Hardware, at: &RocePort, r: &QosRecord, moment: Moment) -> Result<()> {
    let now = |a: &&RoceAttr| a.before_move() == (moment == Moment::OnHost);
    for attr in r.applied.attrs().iter().filter(now) {
        hw.set_roce(at, attr)?;
        if attr.is_asked() {
            log_info!(
                "RDMA device {} port {}: {}",
                at.device,
                at.port,
                attr.describe()
            );
        }
    }
    Ok(())
}

/// Put everything back as `prepare` found it, newest first, once the
/// device is home; one that fails does not keep the others from going
/// back. What went with a device that is gone has nothing to restore.
pub fn restore(hw: &dyn Hardware, at: &RocePort, r: &QosRecord) -> Result<()> {
    let mut first_failure = None;
    for attr in r.restore.attrs().iter().rev() {
        let Err(e) = hw.set_roce(at, attr) else {
            continue;
        };
        match files::went_with_its_device(at, attr, &e) {
            Some(why) => log_info!("{why}; nothing to restore"),
            None => {
                first_failure.get_or_insert(e);
            }
        }
    }
    first_failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::kernel::Kernel;
    use std::path::{Path, PathBuf};

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

    fn target(dir: &Path, configfs: &Path) -> RocePort {
        RocePort {
            device: "mlx5_3".into(),
            device_dir: Some(dir.to_path_buf()),
            port: 1,
            configfs: configfs.to_path_buf(),
        }
    }

    fn both() -> RoceSettings {
        RoceSettings::from_attrs([RoceAttr::TrafficClass(Some(96)), RoceAttr::DefaultTos(96)])
    }

    fn write_all(r: &QosRecord, at: &RocePort) {
        apply(&Kernel, at, r, Moment::OnHost).unwrap();
        apply(&Kernel, at, r, Moment::AfterMove).unwrap();
    }

    #[test]
    fn a_missing_group_is_read_through_one_made_for_the_moment() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), None);
        // A plain directory gets no ports/ from mkdir as configfs does:
        // the read fails, and the group made for it is gone again.
        let err = prepare(&Kernel, &target(&dir, &configfs), &both(), true).unwrap_err();
        assert!(err.to_string().contains("default_roce_tos"), "{err}");
        assert!(!configfs.join("rdma_cm/mlx5_3").exists());
    }

    #[test]
    fn unset_then_set_then_restored_to_unset() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), Some("0"));
        let at = target(&dir, &configfs);
        let r = prepare(&Kernel, &at, &both(), true).unwrap().unwrap();
        assert_eq!(
            r.restore.attrs(),
            [
                RoceAttr::TrafficClass(None),
                RoceAttr::RdmaCmGroup(true),
                RoceAttr::DefaultTos(0)
            ]
        );
        assert_eq!((r.traffic_class(), r.tos()), (Some(96), Some(96)));
        apply(&Kernel, &at, &r, Moment::OnHost).unwrap();
        let tc_file = dir.join("tc/1/traffic_class");
        let tos_file = configfs.join("rdma_cm/mlx5_3/ports/1/default_roce_tos");
        assert_eq!(std::fs::read_to_string(&tc_file).unwrap(), "96");
        assert_eq!(
            std::fs::read_to_string(&tos_file).unwrap(),
            "0",
            "after the move"
        );
        apply(&Kernel, &at, &r, Moment::AfterMove).unwrap();
        assert_eq!(std::fs::read_to_string(&tos_file).unwrap(), "96");
        restore(&Kernel, &at, &r).unwrap();
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
        let at = target(&dir, &configfs);
        let r = prepare(&Kernel, &at, &both(), true).unwrap().unwrap();
        write_all(&r, &at);
        restore(&Kernel, &at, &r).unwrap();
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
        let at = target(&dir, &configfs);
        let err = prepare(&Kernel, &at, &both(), true).unwrap_err();
        assert_eq!(err.code(), 103);
        let msg = err.to_string();
        assert!(
            msg.contains("rdmaQoS.tc: RDMA device mlx5_3 has no tc/1/traffic_class")
                && msg.contains("nothing was changed"),
            "{msg}"
        );
        let r = prepare(&Kernel, &at, &both(), false).unwrap().unwrap();
        assert_eq!(r.traffic_class(), None, "left out");
        assert_eq!(r.tos(), Some(96));

        let no_cm = t.path().join("empty-config");
        std::fs::create_dir_all(&no_cm).unwrap();
        let only_tos = RoceSettings::from_attrs([RoceAttr::DefaultTos(96)]);
        let at = target(&dir, &no_cm);
        let err = prepare(&Kernel, &at, &only_tos, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("modprobe rdma_cm"), "{err}");
        assert_eq!(prepare(&Kernel, &at, &only_tos, false).unwrap(), None);
    }

    #[test]
    fn a_failed_restore_is_an_error_with_its_errno_and_the_rest_still_goes_back() {
        let t = tempfile::tempdir().unwrap();
        let (dir, configfs) = device(t.path(), Some(""), None);
        let at = target(&dir, &configfs);
        // What a record of a made group says (a plain directory cannot
        // make configfs's ports/, so the record is written out).
        let r = QosRecord {
            device: "mlx5_3".into(),
            port: 1,
            restore: RoceSettings::from_attrs([
                RoceAttr::TrafficClass(Some(24)),
                RoceAttr::RdmaCmGroup(false),
                RoceAttr::DefaultTos(0),
            ]),
            applied: RoceSettings::from_attrs([
                RoceAttr::TrafficClass(Some(96)),
                RoceAttr::RdmaCmGroup(true),
                RoceAttr::DefaultTos(96),
            ]),
        };
        std::fs::create_dir_all(configfs.join("rdma_cm/mlx5_3/ports/1")).unwrap();
        apply(&Kernel, &at, &r, Moment::AfterMove).unwrap();
        // The ToS file is replaced by a directory: its write fails (EISDIR),
        // the traffic class is still restored.
        let tos = configfs.join("rdma_cm/mlx5_3/ports/1/default_roce_tos");
        std::fs::remove_file(&tos).unwrap();
        std::fs::create_dir(&tos).unwrap();
        let err = restore(&Kernel, &at, &r).unwrap_err();
        assert_eq!(err.errno(), Some(nix::errno::Errno::EISDIR), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(dir.join("tc/1/traffic_class")).unwrap(),
            "24"
        );
    }

    #[test]
    fn a_device_rdma_cm_no_longer_knows_has_nothing_to_restore() {
        let gone = Error::Kernel {
            what: "write 0 to default_roce_tos".into(),
            errno: nix::errno::Errno::ENODEV,
            said: None,
        };
        let t = tempfile::tempdir().unwrap();
        let at = target(t.path(), t.path());
        let tos = RoceAttr::DefaultTos(0);
        let why = files::went_with_its_device(&at, &tos, &gone).unwrap();
        assert!(
            why.contains("rdma_cm no longer knows RDMA device mlx5_3"),
            "{why}"
        );
        let refused = Error::Kernel {
            what: "write 0 to default_roce_tos".into(),
            errno: nix::errno::Errno::EROFS,
            said: None,
        };
        // A plain directory is no configfs: a missing rdma_cm/ there is not
        // proof the module went.
        assert_eq!(files::went_with_its_device(&at, &tos, &refused), None);
        // A traffic class file that left with its device.
        let class = RoceAttr::TrafficClass(None);
        let why = files::went_with_its_device(&at, &class, &refused).unwrap();
        assert!(why.contains("its traffic class went with it"), "{why}");
    }
}
