//! A PCI address as configs name VFs (`deviceID`, `pciBusID`), checked:
//! below every module that reads one (config, vf, the verbs).

use crate::error::{Error, Result};

/// `DDDD:BB:DD.F`, lowercased; anything else is refused so it can never
/// address a path outside `bus/pci/devices`.
pub fn normalize(pci: &str) -> Result<String> {
    let lower = pci.to_ascii_lowercase();
    let b = lower.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    let ok = b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11]);
    if !ok {
        return Err(Error::config(
            "deviceID",
            format!("{pci:?} is not a PCI address like 0000:3b:02.0"),
        ));
    }
    Ok(lower)
}
