//! The plugin's package links only what the plugin runs: no async runtime,
//! HTTP server, argument parser, YAML or metrics encoder (those are the
//! operator tool's, in `ctl/`), and the recording fake hardware is a
//! feature the tests turn on, not something a shipped binary can select.

use std::path::Path;
use std::process::Command;

/// `cargo tree -e normal` of one package: its crates' names.
fn normal_dependencies(package: &str, features: &[&str]) -> Vec<String> {
    let mut args = vec!["-p", package];
    args.extend(features.iter().flat_map(|f| ["--features", *f]));
    crates_of_tree(Path::new(env!("CARGO_MANIFEST_DIR")), &args, false)
}

/// The crate names `cargo tree -e normal --prefix none ARGS` lists in the
/// workspace at `dir`, sorted, without the package itself when `skip_root`.
fn crates_of_tree(dir: &Path, args: &[&str], skip_root: bool) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(usize::from(skip_root))
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

/// What the protocol crate may depend on directly.
const PROTOCOL: [&str; 5] = ["bytes", "ipnet", "nix", "serde", "serde_json"];

/// The `cni` crate is the CNI protocol: its direct dependencies are what a
/// protocol needs (JSON, addresses, errno, a shared buffer) and no railcni
/// crate, and none of its sources reads a `RAILCNI_*` variable or a railcni
/// state file (those are `railcni-base`'s). Modules may come and go; a
/// dependency that drags railcni in may not.
#[test]
fn the_cni_crate_is_the_protocol_and_nothing_of_railcni() {
    let beyond = beyond_protocol(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        beyond.is_empty(),
        "railcni-cni depends on {beyond:?} beyond {PROTOCOL:?}"
    );
    let all = normal_dependencies("railcni-cni", &[]);
    let ours: Vec<&String> = (all.iter())
        .filter(|c| c.starts_with("railcni") && *c != "railcni-cni")
        .collect();
    assert!(ours.is_empty(), "railcni-cni links {ours:?}");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cni/src");
    for path in support::rust_files(&src) {
        let text = std::fs::read_to_string(&path).unwrap();
        for word in ["RAILCNI_", "state_dir", "boot_id", "railcni-ipam"] {
            assert!(!text.contains(word), "{} names {word}", path.display());
        }
    }
    // And the split holds the other way: the base crate is where they went.
    assert!(normal_dependencies("railcni", &[])
        .iter()
        .any(|c| c == "railcni-base"));
}

/// The crates' arrows point down: base links neither the IPAM nor the
/// plugin, the IPAM not the plugin, the plugin not the operator tool.
#[test]
fn no_crate_links_one_above_it() {
    for (lower, above) in [
        (
            "railcni-base",
            &["railcni-ipam", "railcni", "railcnictl"][..],
        ),
        ("railcni-ipam", &["railcni", "railcnictl"][..]),
        ("railcni", &["railcnictl"][..]),
    ] {
        let links = normal_dependencies(lower, &[]);
        for up in above {
            assert!(
                !links.iter().any(|c| c == up),
                "{lower} links {up}: {links:?}"
            );
        }
    }
}

/// `railcni-cni`'s direct dependencies beyond `PROTOCOL`, in the workspace at `dir`.
fn beyond_protocol(dir: &Path) -> Vec<String> {
    beyond(dir, "railcni-cni", &PROTOCOL)
}

/// `package`'s direct normal dependencies beyond `allowed`, in the
/// workspace at `dir`.
fn beyond(dir: &Path, package: &str, allowed: &[&str]) -> Vec<String> {
    let direct = direct_dependencies(dir, package);
    direct
        .into_iter()
        .filter(|d| !allowed.contains(&d.as_str()))
        .collect()
}

/// Each package's direct dependencies, allowed by name (the guide's list:
/// netlink, nix, serde, ipnet, clap, caps; tokio and HTTP for the agent
/// only): a new crate is a decision taken here, with its reason, never one
/// that slips in. A list a deny-list cannot be: it names what may be.
const ALLOWED: [(&str, &[&str]); 4] = [
    (
        "railcni-base",
        // humantime: the log's timestamps.
        &[
            "humantime",
            "ipnet",
            "nix",
            "railcni-cni",
            "serde",
            "serde_json",
        ],
    ),
    (
        "railcni-ipam",
        // blake3: the validated-pool marks' digests.
        &[
            "blake3",
            "ipnet",
            "nix",
            "railcni-base",
            "railcni-cni",
            "serde",
            "serde_json",
        ],
    ),
    (
        "railcni",
        &[
            "caps",
            "ipnet",
            "netlink-packet-core",
            "netlink-packet-route",
            "netlink-sys",
            "nix",
            "railcni-base",
            "railcni-cni",
            "railcni-ipam",
            "serde",
            "serde_json",
        ],
    ),
    (
        "railcnictl",
        // axum, tokio: the agent's HTTP; comfy-table: tables; prometheus
        // and prometheus-client: the exposition; serde_yaml_ng: plans and
        // manifests; humantime: durations on the command line.
        &[
            "axum",
            "clap",
            "comfy-table",
            "humantime",
            "ipnet",
            "nix",
            "prometheus",
            "prometheus-client",
            "railcni",
            "railcni-base",
            "railcni-cni",
            "railcni-ipam",
            "serde",
            "serde_json",
            "serde_yaml_ng",
            "tokio",
        ],
    ),
];

#[test]
fn every_package_depends_only_on_what_its_list_allows() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (package, allowed) in ALLOWED {
        let extra = beyond(here, package, allowed);
        assert!(
            extra.is_empty(),
            "{package} depends on {extra:?}, which its list in tests/package_shape.rs does not allow"
        );
    }
}

/// The check on a scratch workspace whose protocol crate took a railcni
/// crate as a dependency: named, whatever its modules.
#[test]
fn a_dependency_beyond_the_protocol_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (name, package, deps) in [
        (
            "cni",
            "railcni-cni",
            "railcni-base = { path = \"../base\" }",
        ),
        ("base", "railcni-base", ""),
    ] {
        std::fs::create_dir_all(root.join(name).join("src")).unwrap();
        let manifest = format!(
            "[package]\nname = \"{package}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}\n"
        );
        std::fs::write(root.join(name).join("Cargo.toml"), manifest).unwrap();
        std::fs::write(root.join(name).join("src/lib.rs"), "").unwrap();
    }
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"cni\", \"base\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    assert_eq!(beyond_protocol(root), ["railcni-base"]);
    // A new heavy dependency of any package, named by the allow-list.
    assert_eq!(
        beyond(root, "railcni-base", &["humantime"]),
        Vec::<String>::new()
    );
    std::fs::create_dir_all(root.join("heavy/src")).unwrap();
    std::fs::write(
        root.join("heavy/Cargo.toml"),
        "[package]\nname = \"heavy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(root.join("heavy/src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("base/Cargo.toml"),
        "[package]\nname = \"railcni-base\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nheavy = { path = \"../heavy\" }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"cni\", \"base\", \"heavy\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    assert_eq!(beyond(root, "railcni-base", &["humantime"]), ["heavy"]);
}

/// A package's direct normal dependencies (`cargo tree --depth 1`) in the
/// workspace at `dir`.
fn direct_dependencies(dir: &Path, package: &str) -> Vec<String> {
    crates_of_tree(dir, &["--depth", "1", "-p", package], true)
}
