//! rdma_cm's per-device settings in configfs:
//! `<configfs>/rdma_cm/<device>/ports/<port>/default_roce_tos`. The
//! device's group exists only once someone makes it (`mkdir`, named after
//! the device; the kernel then adds its `ports/`). The value lives in the
//! kernel's rdma_cm device, not in the group: removing the group leaves it
//! in force (seen on the emulated node), so what was there is read through
//! a group made for the moment, and restored before railcni's own group
//! goes. It is lost when the device changes namespace, so it is written
//! after the move.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// configfs's `f_type` (`CONFIGFS_MAGIC`).
const CONFIGFS_MAGIC: nix::sys::statfs::FsType = nix::sys::statfs::FsType(0x6265_6570);

pub fn group(configfs: &Path, device: &str) -> PathBuf {
    configfs.join("rdma_cm").join(device)
}

fn tos_file(configfs: &Path, device: &str, port: u32) -> PathBuf {
    group(configfs, device)
        .join("ports")
        .join(port.to_string())
        .join("default_roce_tos")
}

/// Whether rdma_cm's configfs is there, mounting configfs at its usual
/// place first when nothing is mounted there (a node whose init did not).
/// `Err` says why not: configfs or the rdma_cm module missing.
pub fn available(configfs: &Path) -> std::result::Result<(), String> {
    if configfs == Path::new(base::settings::DEFAULT_CONFIGFS) && !is_configfs(configfs) {
        nix::mount::mount(
            Some("configfs"),
            configfs,
            Some("configfs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| {
            format!(
                "configfs is not mounted at {} and mounting it failed: {e}",
                configfs.display()
            )
        })?;
        crate::log_info!("mounted configfs at {}", configfs.display());
    }
    if configfs.join("rdma_cm").is_dir() {
        Ok(())
    } else {
        Err(format!(
            "{} is missing: load the rdma_cm module (modprobe rdma_cm)",
            configfs.join("rdma_cm").display()
        ))
    }
}

pub fn is_configfs(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir).is_ok_and(|s| s.filesystem_type() == CONFIGFS_MAGIC)
}

/// The port's default ToS in force now, and whether the device had a
/// group; a missing group is made to read it and removed again.
pub fn read_in_force(configfs: &Path, device: &str, port: u32) -> Result<(u8, bool)> {
    if let Some(tos) = read(configfs, device, port)? {
        return Ok((tos, true));
    }
    let dir = group(configfs, device);
    make_group(&dir, device)?;
    let tos = read(configfs, device, port);
    let removed = remove_group(configfs, device);
    let tos = tos?.ok_or_else(|| Error::internal(format!("{} vanished", dir.display())))?;
    removed.map(|()| (tos, false))
}

fn make_group(dir: &Path, device: &str) -> Result<()> {
    std::fs::create_dir(dir).map_err(|e| {
        Error::os(
            format!(
                "make rdma_cm group {} (does rdma_cm know {device}?)",
                dir.display()
            ),
            &e,
        )
    })
}

/// The port's default ToS now; `None` when the device has no group.
pub fn read(configfs: &Path, device: &str, port: u32) -> Result<Option<u8>> {
    if !group(configfs, device).is_dir() {
        return Ok(None);
    }
    let file = tos_file(configfs, device, port);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| Error::os(format!("read {}", file.display()), &e))?;
    text.trim().parse().map(Some).map_err(|_| {
        Error::UnsupportedDevice(format!(
            "{} holds {:?}, not a ToS byte",
            file.display(),
            text.trim()
        ))
    })
}

/// Make the device's group unless it is there.
pub fn make_group_if_absent(configfs: &Path, device: &str) -> Result<()> {
    let dir = group(configfs, device);
    if dir.is_dir() {
        return Ok(());
    }
    make_group(&dir, device)
}

/// Set the port's default ToS, making the device's group when absent.
pub fn write(configfs: &Path, device: &str, port: u32, tos: u8) -> Result<()> {
    make_group_if_absent(configfs, device)?;
    let file = tos_file(configfs, device, port);
    std::fs::write(&file, tos.to_string())
        .map_err(|e| Error::os(format!("write {tos} to {}", file.display()), &e))
}

/// Remove the device's group (one railcni made); already gone is fine.
pub fn remove_group(configfs: &Path, device: &str) -> Result<()> {
    let dir = group(configfs, device);
    match std::fs::remove_dir(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::os(
            format!("remove rdma_cm group {}", dir.display()),
            &e,
        )),
        _ => Ok(()),
    }
}
