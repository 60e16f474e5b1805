//! Reading an strace of a CNI call (`tests/reliability.rs` traces ADD and
//! DEL; `tests/harness.rs` checks the reading).

/// What a CNI call did to the disk, from its strace.
#[derive(Debug, Default, PartialEq)]
pub struct DiskUse {
    /// Calls that wait for the disk.
    pub syncs: usize,
    /// Existing files replaced by `RENAME_EXCHANGE` (no writeback started).
    pub exchanges: usize,
    /// Plain renames over a target not first found missing: on ext4 each
    /// starts writing the new file out (`auto_da_alloc`).
    pub renames_over_existing: usize,
}

/// The quoted path arguments of an strace line, in order.
pub fn quoted(line: &str) -> Vec<&str> {
    line.split('"').skip(1).step_by(2).collect()
}

/// What the calls of an strace (`-f -qq`, one call a line) did to the disk.
pub fn disk_use(trace: &str) -> DiskUse {
    let mut found_missing = std::collections::HashSet::new();
    let mut usage = DiskUse::default();
    for line in trace.lines() {
        let call = line.split_whitespace().nth(1).unwrap_or("");
        let ok = line.trim_end().ends_with("= 0");
        let target = quoted(line).get(1).map(|t| t.to_string());
        if [
            "fsync(",
            "fdatasync(",
            "syncfs(",
            "sync(",
            "sync_file_range(",
        ]
        .iter()
        .any(|c| call.starts_with(c))
        {
            usage.syncs += 1;
        } else if line.contains("RENAME_EXCHANGE") {
            match (ok, target) {
                (true, _) => usage.exchanges += 1,
                (false, Some(t)) if line.contains("ENOENT") => {
                    found_missing.insert(t);
                }
                _ => {}
            }
        } else if call.starts_with("rename")
            && ok
            && !target.is_some_and(|t| found_missing.remove(&t))
        {
            usage.renames_over_existing += 1;
        }
    }
    usage
}
