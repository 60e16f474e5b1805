//! The test harness's own readings, which the root-only tiers rely on to
//! tell a pass from a failure: an strace's disk use (`common::strace`,
//! tests/reliability.rs) and an emulated-node scenario's verdict
//! (`common::vm`, tests/emulated_sriov.rs). Needs nothing but the tree.

mod common;

use common::strace::{disk_use, DiskUse};
use common::vm::verdict;

#[test]
fn disk_use_reads_strace_lines() {
    let trace = r#"
7 renameat2(AT_FDCWD, "/s/.a.json.1.tmp", AT_FDCWD, "/s/a.json", RENAME_EXCHANGE) = -1 ENOENT (No such file or directory)
7 rename("/s/.a.json.1.tmp", "/s/a.json") = 0
7 fdatasync(3)                      = 0
7 renameat2(AT_FDCWD, "/s/.a.json.2.tmp", AT_FDCWD, "/s/a.json", RENAME_EXCHANGE) = 0
7 rename("/s/.b.json.1.tmp", "/s/b.json") = 0
"#;
    assert_eq!(
        disk_use(trace),
        DiskUse {
            syncs: 1,
            exchanges: 1,
            renames_over_existing: 1
        }
    );
}

/// The verdict on outputs a scenario can leave (needs nothing but itself).
#[test]
fn a_scenario_that_ends_early_fails() {
    let whole = "# guest up\nok 1 - a\nok 2 - b\nemulated-sriov: 2 passed, 0 failed\n";
    assert_eq!(verdict(whole), Ok(2));
    let early = "# guest up\nok 1 - a\nok 2 - b\n";
    assert!(verdict(early).unwrap_err().contains("ended early"));
    let miscounted = "ok 1 - a\nemulated-sriov: 2 passed, 0 failed\n";
    assert!(verdict(miscounted).is_err());
    let failing = "ok 1 - a\nnot ok 2 - b\nemulated-sriov: 1 passed, 1 failed\n";
    assert!(verdict(failing).unwrap_err().contains("not ok 2"));
}
