//! PF-side VF settings (MAC, VLAN, spoof check, trust, rates, GUID): set on
//! ADD, and on teardown put back to what the record saved, and only that.
//! An InfiniBand GUID takes effect only when the VF's driver binds again.

use std::fs;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::hw::{Hardware, VfSettings};
use crate::state::Record;

use super::{Sysfs, Vf};

/// The PF's netdev, through which VF settings are set.
pub fn pf_netdev(vf: &Vf) -> Result<&str> {
    vf.pf_netdev.as_deref().ok_or_else(|| {
        Error::DeviceNotFound(format!(
            "PF {} of VF {} has no netdev; VF settings are set through it",
            vf.pf_pci, vf.pci
        ))
    })
}

/// Set `settings` on the PF for `vf`, rebinding an InfiniBand VF whose GUID
/// changed (mlx5 applies it only then).
pub fn apply(
    hw: &dyn Hardware,
    sysfs: &Sysfs,
    vf: &Vf,
    settings: &VfSettings,
    rebind_timeout: Duration,
) -> Result<()> {
    hw.set_vf(pf_netdev(vf)?, vf.index, settings)?;
    if vf.infiniband && settings.ib_guid.is_some() {
        rebind(sysfs, vf, rebind_timeout)?;
    }
    Ok(())
}

/// Put back the PF-side attributes the record saved, and only those.
pub fn restore(
    hw: &dyn Hardware,
    sysfs: &Sysfs,
    vf: &Vf,
    record: &Record,
    rebind_timeout: Duration,
) -> Result<()> {
    match &record.vf_restore {
        Some(saved) if !saved.is_empty() => apply(hw, sysfs, vf, saved, rebind_timeout),
        _ => Ok(()),
    }
}

/// Rebind the VF's driver (`drivers/<drv>/unbind`, then `bind`) and wait up
/// to `timeout` for its netdev to reappear. The netdev's name afterwards.
pub fn rebind(sysfs: &Sysfs, vf: &Vf, timeout: Duration) -> Result<String> {
    let driver = vf
        .driver
        .as_deref()
        .ok_or_else(|| Error::DeviceNotFound(format!("VF {} has no driver to rebind", vf.pci)))?;
    let dir = sysfs.driver_dir(driver);
    for op in ["unbind", "bind"] {
        fs::write(dir.join(op), &vf.pci).map_err(|e| {
            Error::Netlink(format!(
                "cannot {op} VF {} from driver {driver} ({}): {e}",
                vf.pci,
                dir.join(op).display()
            ))
        })?;
    }
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(name) = sysfs.netdevs(&vf.pci).into_iter().next() {
            return Ok(name);
        }
        if Instant::now() >= deadline {
            return Err(Error::DeviceNotFound(format!(
                "VF {}'s netdev did not come back within {timeout:?} after rebinding driver {driver}; \
                 check `dmesg` and the VF's driver",
                vf.pci
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
