//! Which `Hardware` a call gets.

#[cfg(feature = "fake-hardware")]
use super::fake;
use super::{kernel, Hardware};

/// The kernel; in a build with the `fake-hardware` feature, the recording
/// fake when `RAILCNI_FAKE_HARDWARE` names its state file.
pub fn backend() -> Box<dyn Hardware> {
    #[cfg(feature = "fake-hardware")]
    if let Some(path) = std::env::var_os("RAILCNI_FAKE_HARDWARE").filter(|p| !p.is_empty()) {
        return Box::new(fake::Recorder::new(path.into()));
    }
    Box::new(kernel::Kernel)
}
