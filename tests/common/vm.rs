//! The emulated SR-IOV node's scenarios as `tests/emulated_sriov.rs` runs
//! them: what their output says.

/// A scenario passed: it reached its end (`vm_finish`'s summary line, which
/// a scenario that stopped early, or a guest that died, never prints), the
/// summary counts the checks printed, and none failed. The number passed.
pub fn verdict(stdout: &str) -> Result<usize, String> {
    let passed = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("not ok")).collect();
    let summary = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("emulated-sriov: "))
        .ok_or_else(|| {
            format!("it ended early: no summary after {passed} checks, failed: {failed:#?}")
        })?;
    let expected = format!("{passed} passed, {} failed", failed.len());
    if summary != expected {
        return Err(format!(
            "its summary says {summary:?}, its checks {expected:?}"
        ));
    }
    if !failed.is_empty() || passed == 0 {
        return Err(format!("{passed} checks passed, failed: {failed:#?}"));
    }
    Ok(passed)
}
