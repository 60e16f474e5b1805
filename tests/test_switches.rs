//! No test switch in a shipped binary: the variables that exist for tests
//! (`RAILCNI_BOOT_ID`, `RAILCNI_DEVINFO_DIR`, `RAILCNI_FAKE_HARDWARE`) are
//! read only by a build with the test features. The static release
//! binaries (scripts/build-static.sh) do not hold their names, and their gc,
//! pointed at another boot's id, leaves a live pod alone. Those binaries
//! also list the crates inside them (cargo-auditable's `.dep-v0`), for a
//! scanner. Needs root.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use common::*;

const TEST_SWITCHES: [&str; 3] = [
    "RAILCNI_BOOT_ID",
    "RAILCNI_DEVINFO_DIR",
    "RAILCNI_FAKE_HARDWARE",
];

/// The shipped binaries, built once for this file's tests.
fn static_bins() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    BUILT
        .get_or_init(|| {
            let out = Command::new(script("build-static.sh")).output().unwrap();
            assert!(
                out.status.success(),
                "build-static.sh: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/x86_64-unknown-linux-gnu/release")
        })
        .clone()
}

/// The crates a binary says it holds: cargo-auditable's `.dep-v0` section
/// (zlib-compressed JSON), read the way a scanner reads it.
fn crates_inside(bin: &Path) -> Vec<String> {
    let dir = tempfile::Builder::new()
        .prefix("railcni-dep-v0-")
        .tempdir()
        .unwrap();
    let dump = dir.path().join("dep-v0");
    let out = Command::new("objcopy")
        .arg(format!("--dump-section=.dep-v0={}", dump.display()))
        .arg(bin)
        .arg(dir.path().join("copy"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "objcopy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = Command::new("python3")
        .args(["-c", "import sys, zlib; sys.stdout.write(zlib.decompress(open(sys.argv[1], 'rb').read()).decode())"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        json.status.success(),
        "{} has no readable .dep-v0 section: {}",
        bin.display(),
        String::from_utf8_lossy(&json.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    doc["packages"]
        .as_array()
        .unwrap_or_else(|| panic!("no packages in {}'s .dep-v0: {doc}", bin.display()))
        .iter()
        // Build-time crates (proc macros, build scripts) are listed too, marked.
        .filter(|p| p["kind"] != "build")
        .map(|p| {
            format!(
                "{} {}",
                p["name"].as_str().unwrap_or("?"),
                p["version"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_shipped_binaries_list_the_crates_inside_them() {
    require_root();
    let bins = static_bins();
    for (bin, inside, never) in [
        ("railcni", "netlink-packet-route", "tokio"),
        ("railcni-ipam", "serde_json", "netlink-packet-route"),
        ("railcnictl", "tokio", "rtnetlink"),
    ] {
        let crates = crates_inside(&bins.join(bin));
        let names: Vec<&str> = crates.iter().filter_map(|c| c.split(' ').next()).collect();
        assert!(
            names.contains(&bin),
            "{bin} does not list itself: {crates:?}"
        );
        assert!(
            names.contains(&inside),
            "{bin} does not list {inside}: {crates:?}"
        );
        assert!(
            !names.contains(&never),
            "{bin} lists {never}, which it does not link: {crates:?}"
        );
    }
}

fn holds(bytes: &[u8], name: &str) -> bool {
    bytes.windows(name.len()).any(|w| w == name.as_bytes())
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_shipped_binaries_hold_no_test_switch() {
    require_root();
    let dir = static_bins();
    for bin in ["railcni", "railcni-ipam", "railcnictl"] {
        let bytes = std::fs::read(dir.join(bin)).unwrap();
        for name in TEST_SWITCHES {
            assert!(!holds(&bytes, name), "the shipped {bin} holds {name}");
        }
        // The scan sees variable names: a real setting's is there.
        assert!(holds(&bytes, "RAILCNI_STATE_DIR"), "{bin}");
    }
    // A test build reads them, so it holds them.
    let test_build = std::fs::read(PLUGIN).unwrap();
    for name in TEST_SWITCHES {
        assert!(holds(&test_build, name), "the test build lacks {name}");
    }
}

/// What made the switch dangerous: gc takes a holder of another boot for
/// provably gone. A record of this boot, and `RAILCNI_BOOT_ID` naming a file
/// with another boot's id: the shipped gc reads the kernel's boot id and
/// leaves the live pod's record, lease and VF alone; a test build's gc
/// (the control) believes the file and detaches it.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_shipped_gc_pointed_at_another_boot_leaves_a_live_pod_alone() {
    let node = Node::new(1, 1);
    let this_boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    node.reboot(this_boot.trim());
    let vf = &node.vfs[0];
    let pod = node.pod("live");
    let add = Req::new(
        "ADD",
        "live",
        &pod,
        "net1",
        conf("1.0.0", "rail1", &vf.pci, Node::embedded_ipam(1)),
    );
    node.cni(&add).ok();
    let other_boot = node.dir.path().join("other-boot");
    std::fs::write(&other_boot, "00000000-0000-0000-0000-000000000000\n").unwrap();
    let leases = node.state_dir().join("ipam/rail1.leases.json");
    let gc = |ctl: &Path| {
        let out = Command::new("ip")
            .args(["netns", "exec", &node.host()])
            .arg(ctl)
            .args(["gc", "--apply", "--json"])
            .env_clear()
            .envs(node.env_vars())
            .env("RAILCNI_BOOT_ID", &other_boot)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let shipped = gc(&static_bins().join("railcnictl"));
    assert!(
        node.record_exists(&vf.pci),
        "the record was dropped: {shipped}"
    );
    let held = std::fs::read_to_string(&leases).unwrap();
    assert!(held.contains("\"live\""), "the lease was released: {held}");
    assert!(
        link_in(&Node::ns_of(&pod), "net1").is_some(),
        "the VF left the pod: {shipped}"
    );

    assert!(
        !acts_on_live(&shipped),
        "the shipped gc acted on the live pod: {shipped}"
    );

    // The control: a test build's gc believes the stray boot id and goes
    // for the live pod's VF. (Since leases go only with their VF, it then
    // finds the namespace out of its reach and keeps record and lease.)
    let test_build = gc(Path::new(ctl()));
    assert!(
        acts_on_live(&test_build),
        "the control: a test build's gc believes the stray boot id: {test_build}"
    );
}

/// Whether gc's `--json` answer holds an action on the container `live`.
fn acts_on_live(gc_json: &str) -> bool {
    let answer: serde_json::Value = serde_json::from_str(gc_json).unwrap_or_default();
    answer["actions"]
        .as_array()
        .is_some_and(|actions| actions.iter().any(|a| a["containerId"] == "live"))
}
