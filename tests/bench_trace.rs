//! The benchmark's optional ftrace instrumentation (scripts/trace-moves.sh)
//! never fails the run it measures: a tracefs that refuses a write during
//! set-up or restore is reported, skipped, and the state it changed is put
//! back. Runs the shell functions against a stand-in tracefs directory.

use std::fs;
use std::path::Path;
use std::process::Command;

fn fake_tracefs(root: &Path) {
    for e in ["sys_enter", "sys_exit"] {
        let dir = root.join("events/raw_syscalls").join(e);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("filter"), "none\n").unwrap();
        fs::write(dir.join("enable"), "0\n").unwrap();
    }
    fs::write(root.join("tracing_on"), "1\n").unwrap();
    // As a fresh kernel shows it, before the buffer was first used.
    fs::write(root.join("buffer_size_kb"), "7 (expanded: 1408)\n").unwrap();
    fs::write(root.join("trace"), "").unwrap();
}

/// Run `script` under `set -euo pipefail` with the functions sourced.
fn run(tracefs: &Path, script: &str) -> (bool, String, String) {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/trace-moves.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; . {}; {script}; echo survived",
            lib.display()
        ))
        .env("TRACEFS", tracefs)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_refused_write_during_set_up_is_reported_and_undone() {
    let t = tempfile::tempdir().unwrap();
    fake_tracefs(t.path());
    // A directory where a file should be: every write to it fails, as the
    // kernel's EINVAL did, and root's `-w` test still passes.
    let exit_filter = t.path().join("events/raw_syscalls/sys_exit/filter");
    fs::remove_file(&exit_filter).unwrap();
    fs::create_dir(&exit_filter).unwrap();
    let dest = t.path().join("moves.trace");
    let (ok, out, err) = run(
        t.path(),
        &format!(
            "trace_moves on || echo n/a; trace_moves off {}",
            dest.display()
        ),
    );
    assert!(
        ok && out.contains("n/a") && out.contains("survived"),
        "{out}{err}"
    );
    assert!(
        err.contains("sys_exit/filter"),
        "the failed write is named: {err}"
    );
    assert!(
        !dest.exists(),
        "no trace from a failed set-up: its figure is n/a"
    );
    let read = |p: &str| fs::read_to_string(t.path().join(p)).unwrap();
    assert_eq!(read("buffer_size_kb"), "7\n", "restored to the size it had");
    assert_eq!(read("events/raw_syscalls/sys_enter/enable"), "0\n");
    assert_eq!(read("tracing_on"), "0\n");
}

#[test]
fn a_refused_write_during_restore_does_not_stop_the_rest() {
    let t = tempfile::tempdir().unwrap();
    fake_tracefs(t.path());
    let enter_filter = t.path().join("events/raw_syscalls/sys_enter/filter");
    let dest = t.path().join("moves.trace");
    let script = format!(
        "trace_moves on; echo 'ip-1 [000] 1.0: sys_enter: x' >> $TRACEFS/trace; \
         rm {f} && mkdir {f}; trace_moves off {d}",
        f = enter_filter.display(),
        d = dest.display()
    );
    let (ok, out, err) = run(t.path(), &script);
    assert!(ok && out.contains("survived"), "{out}{err}");
    assert!(err.contains("sys_enter/filter"), "{err}");
    assert!(
        fs::read_to_string(&dest).unwrap().contains("sys_enter"),
        "the trace was kept"
    );
    let read = |p: &str| fs::read_to_string(t.path().join(p)).unwrap();
    assert_eq!(
        read("buffer_size_kb"),
        "7\n",
        "restored after the failed write"
    );
    assert_eq!(read("events/raw_syscalls/sys_exit/filter"), "0\n");
    assert_eq!(read("events/raw_syscalls/sys_exit/enable"), "0\n");
}
