//! docs/by-hand.md as written: its shell blocks, run in order on a fake node
//! of this test's own (its names made unique), must succeed and show what
//! the page says they show. Needs root.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// The page's `sh` blocks, in order.
fn blocks(page: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in page.lines() {
        match (inside, line.trim_start()) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, _) => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_by_hand_page_runs_as_written() {
    let page = std::fs::read_to_string(repo().join("docs/by-hand.md")).unwrap();
    let script = blocks(&page);
    assert!(
        script.contains("CNI_COMMAND=ADD") && script.contains("CNI_COMMAND=DEL"),
        "{script}"
    );
    let unique = format!("bh{}", std::process::id());
    let bin = Path::new(PLUGIN).parent().unwrap().display().to_string();
    let script = script
        .replace("byhand", &unique)
        .replace("$PWD/target/debug", &bin);
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(repo())
        .env_remove("CNI_COMMAND")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if !out.status.success() {
        // Leave nothing behind whatever step failed.
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ip netns del {unique}-pod; for d in /tmp/by-hand.*; do scripts/fake-node.sh down {unique} $d/sys; done"
            ))
            .current_dir(repo())
            .output();
        panic!("the page's commands failed:\n{stdout}\n{stderr}");
    }
    for shown in ["net1", "172.16.0.0/31", "pf1v0"] {
        assert!(stdout.contains(shown), "{shown} not shown:\n{stdout}");
    }
    assert!(!stdout.contains("error"), "{stdout}");
    println!("{stdout}");
}
