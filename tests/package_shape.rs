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

#[test]
fn the_plugin_package_links_none_of_the_tools_crates() {
    let plugin = normal_dependencies("railcni", &[]);
    for crate_name in TOOL_ONLY {
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
