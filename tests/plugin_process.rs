//! The plugin as a process, with nothing but itself: how it ends when
//! its runtime misbehaves. Needs nothing but the tree.

mod common;

use common::PLUGIN;

/// A runtime that stopped reading: railcni's reply fails to write, and it
/// exits with an error instead of being killed by SIGPIPE (std's start-up
/// ignores SIGPIPE; a C `main` would have to do it itself).
#[test]
fn a_runtime_that_stopped_reading_gets_an_exit_not_a_kill() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(PLUGIN)
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(br#"{"cniVersion":"1.0.0"}"#).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), None, "{status:?}");
}
