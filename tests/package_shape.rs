//! The plugin's package links only what the plugin runs: no async runtime,
//! HTTP server, argument parser, YAML or metrics encoder (those are the
//! operator tool's, in `ctl/`), and the recording fake hardware is a
//! feature the tests turn on, not something a shipped binary can select.

use std::process::Command;

/// `cargo tree -e normal` of one package: its crates' names.
fn normal_dependencies(package: &str, features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .args(features.iter().flat_map(|f| ["--features", f]))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

const TOOL_ONLY: [&str; 7] = [
    "tokio",
    "axum",
    "hyper",
    "clap",
    "serde_yaml_ng",
    "prometheus-client",
    "comfy-table",
];

/// An async runtime's parts: the plugin never awaits, so it builds its
/// netlink messages with netlink-packet-route and sends them on one plain
/// socket (rtnetlink would bring these for three builders).
const ASYNC_ONLY: [&str; 10] = [
    "rtnetlink",
    "netlink-proto",
    "futures-channel",
    "futures-core",
    "futures-macro",
    "futures-sink",
    "futures-task",
    "futures-util",
    "slab",
    "pin-project-lite",
];

#[test]
fn the_plugin_package_links_none_of_the_tools_crates() {
    let plugin = normal_dependencies("railcni", &[]);
    for crate_name in TOOL_ONLY.into_iter().chain(ASYNC_ONLY) {
        assert!(
            !plugin.iter().any(|c| c == crate_name),
            "the plugin's package links {crate_name}: {plugin:?}"
        );
    }
    // The tool does link them: the check above looks at the right tree.
    let tool = normal_dependencies("railcnictl", &[]);
    for crate_name in ["tokio", "axum", "clap"] {
        assert!(tool.iter().any(|c| c == crate_name), "{tool:?}");
    }
}

/// The `cni` crate is the CNI protocol: it links no railcni crate, and none
/// of its sources reads a `RAILCNI_*` variable or a railcni state file
/// (those are `railcni-base`'s).
#[test]
fn the_cni_crate_is_the_protocol_and_nothing_of_railcni() {
    let cni = normal_dependencies("railcni-cni", &[]);
    let ours: Vec<&String> = (cni.iter())
        .filter(|c| c.starts_with("railcni") && *c != "railcni-cni")
        .collect();
    assert!(ours.is_empty(), "railcni-cni links {ours:?}");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cni/src");
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for word in ["RAILCNI_", "state_dir", "boot_id", "railcni-ipam"] {
            assert!(
                !text.contains(word),
                "{} names {word}",
                entry.path().display()
            );
        }
        modules.push(entry.file_name().to_string_lossy().into_owned());
    }
    modules.sort();
    assert_eq!(
        modules,
        [
            "args.rs",
            "env.rs",
            "error.rs",
            "io_failure.rs",
            "lib.rs",
            "result.rs",
            "skeleton.rs",
            "version.rs"
        ]
    );
    // And the split holds the other way: the base crate is where they went.
    assert!(normal_dependencies("railcni", &[])
        .iter()
        .any(|c| c == "railcni-base"));
}
