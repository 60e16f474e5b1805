//! VF settings set on ADD, and on detach restored to what the record
//! saved, and only that.
//! An InfiniBand GUID takes effect only when the VF's driver binds again.
//!
//! The order is the drivers' (igb, found on the emulated SR-IOV node): an
//! untrusted VF may change its own MAC only while the PF holds no admin MAC
//! for it. So ADD sets the netdev's MAC before the admin MAC, and detach
//! clears the admin MAC (`restore_admin_mac`), then puts the netdev's MAC
//! back, then the rest (`restore`), `trust off` last among them.

use std::fs;
use std::time::{Duration, Instant};

use super::{VfAttr, VfSettings};
use crate::attr_set::Attr as _;
use crate::error::{Error, Result, VfRefusal};
use crate::hw::Hardware;
use crate::net::Mac;
use crate::vf::{Sysfs, Vf};

/// The PF's netdev, through which VF settings are set.
pub fn pf_netdev(vf: &Vf) -> Result<&str> {
    vf.pf_netdev.as_deref().ok_or_else(|| {
        Error::DeviceNotFound(format!(
            "PF {} of VF {} has no netdev; VF settings are set through it",
            vf.pf_pci, vf.pci
        ))
    })
}

/// The values to restore for the fields `request` sets, from the PF's
/// report `current`. A PF-side MAC equal to the netdev's own (`netdev_mac`)
/// is no admin MAC: igb reports a VF's current MAC there whether or not an
/// admin MAC was set, and writing it back would pin it. "None" is saved as
/// 00:00:00:00:00:00, which clears an admin MAC on igb and mlx5 alike.
pub fn originals(request: &VfSettings, current: &VfSettings, netdev_mac: &[u8]) -> VfSettings {
    let mut saved = request.originals(current);
    if saved.mac().is_some_and(|m| m.0[..] == *netdev_mac) {
        saved.set(VfAttr::Mac(Mac([0; 6])));
    }
    saved
}

/// Set `settings` on the PF for `vf` one at a time, rebinding an
/// InfiniBand VF whose GUID changed (mlx5 applies it only then). When the
/// driver refuses one, those already set are restored to `originals` and
/// the refusal names the setting and the driver: nothing is left changed.
pub fn apply(
    hw: &dyn Hardware,
    sysfs: &Sysfs,
    vf: &Vf,
    settings: &VfSettings,
    originals: &VfSettings,
    rebind_timeout: Duration,
) -> Result<()> {
    let pf = pf_netdev(vf)?;
    let mut applied = VfSettings::default();
    for one in settings.attrs() {
        if let Err(e) = hw.set_vf(pf, vf.index, one) {
            restore_originals(hw, pf, vf, &applied.originals(originals));
            return Err(refusal(sysfs, vf, pf, one, e));
        }
        applied.set(*one);
    }
    if vf.infiniband && settings.ib_guid().is_some() {
        if let Err(e) = rebind(sysfs, vf, rebind_timeout) {
            // The GUID never took effect: what was set goes back.
            restore_originals(hw, pf, vf, &applied.originals(originals));
            return Err(e);
        }
    }
    Ok(())
}

/// Undo a partly applied request; a failure here is logged (the refusal is
/// what the caller reports).
fn restore_originals(hw: &dyn Hardware, pf: &str, vf: &Vf, saved: &VfSettings) {
    for one in saved.attrs() {
        if let Err(e) = hw.set_vf(pf, vf.index, one) {
            crate::log_error!(
                "restoring VF {} setting {} on PF {pf} failed: {}",
                vf.pci,
                one.describe(),
                e.details()
            );
        }
    }
}

/// A driver's refusal as the typed error that names setting and driver.
fn refusal(sysfs: &Sysfs, vf: &Vf, pf: &str, one: &VfAttr, e: Error) -> Error {
    match e {
        Error::Kernel { errno, said, .. } => Error::VfSettingRefused(VfRefusal {
            setting: one.describe(),
            pf: pf.to_string(),
            driver: sysfs.driver(&vf.pf_pci).unwrap_or_default(),
            vf: vf.index,
            errno,
            said,
        }),
        other => other,
    }
}

/// Clear or restore the PF-side MAC the record saved (`saved`; first of
/// detach's VF steps: until it is cleared an untrusted VF cannot change
/// its MAC).
pub fn restore_admin_mac(hw: &dyn Hardware, vf: &Vf, saved: Option<&VfSettings>) -> Result<()> {
    match saved.and_then(VfSettings::mac) {
        Some(mac) => hw.set_vf(pf_netdev(vf)?, vf.index, &VfAttr::Mac(mac)),
        None => Ok(()),
    }
}

/// Restore the other PF-side attributes the record saved (`saved`), and
/// only those (the admin MAC is `restore_admin_mac`'s).
pub fn restore(
    hw: &dyn Hardware,
    sysfs: &Sysfs,
    vf: &Vf,
    saved: Option<&VfSettings>,
    rebind_timeout: Duration,
) -> Result<()> {
    let Some(saved) = saved else {
        return Ok(());
    };
    let rest = VfSettings::from_attrs(
        (saved.attrs().iter())
            .filter(|a| !matches!(a, VfAttr::Mac(_)))
            .copied(),
    );
    if rest.is_empty() {
        return Ok(());
    }
    // Each setting on its own: one the driver refuses does not keep the
    // others from going back.
    let pf = pf_netdev(vf)?;
    let mut first_failure = None;
    for one in rest.attrs() {
        if let Err(e) = hw.set_vf(pf, vf.index, one) {
            first_failure.get_or_insert(refusal(sysfs, vf, pf, one, e));
        }
    }
    if let Some(e) = first_failure {
        return Err(e);
    }
    if vf.infiniband && rest.ib_guid().is_some() {
        rebind(sysfs, vf, rebind_timeout)?;
    }
    Ok(())
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
            Error::os(
                format!(
                    "cannot {op} VF {} from driver {driver} ({})",
                    vf.pci,
                    dir.join(op).display()
                ),
                &e,
            )
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
