//! railcni on a real SR-IOV driver: the emulated SR-IOV node (scripts/vm.sh,
//! docs/testing.md, "Test on an emulated SR-IOV NIC"), a QEMU guest whose emulated
//! Intel 82576 NICs are served by the guest kernel's own igb and igbvf
//! drivers. Each test boots one guest and runs one scenario of
//! tests/vm/scenarios/, which prints a line per check; the test passes when
//! every check passed. Needs root, QEMU and the guest kernel
//! (`scripts/vm.sh prepare`, which scripts/install-test-deps.sh runs).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::{Condvar, Mutex};

use common::vm::verdict;
use common::*;

/// How many guests run at once: `RAILCNI_VM_GUESTS`, else 2. Each guest is
/// one TCG vCPU thread; the harness runs this file's tests two at a time
/// (one per core), and nothing else runs beside them.
fn guests_at_once() -> usize {
    std::env::var("RAILCNI_VM_GUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(2)
}

/// A place for one guest, held while it runs.
struct Slot;

static RUNNING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

impl Slot {
    fn take() -> Slot {
        let (count, freed) = &RUNNING;
        let mut running = count.lock().unwrap_or_else(|e| e.into_inner());
        while *running >= guests_at_once() {
            running = freed.wait(running).unwrap_or_else(|e| e.into_inner());
        }
        *running += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (count, freed) = &RUNNING;
        *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        freed.notify_one();
    }
}

/// Run scenario `name` in a fresh guest; its output.
fn scenario(name: &str) -> String {
    let _slot = Slot::take();
    require_root();
    let bin = Path::new(PLUGIN).parent().unwrap();
    for b in ["railcni", "railcni-ipam", "railcnictl"] {
        assert!(
            bin.join(b).exists(),
            "{b} is not built in {}",
            bin.display()
        );
    }
    let out = tempfile::Builder::new()
        .prefix(&format!("railcni-vm-{name}-"))
        .tempdir()
        .unwrap();
    let run = Command::new(script("vm.sh"))
        .args(["run", name])
        .arg(out.path())
        .env("RAILCNI_BIN_DIR", bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if let Err(why) = verdict(&stdout).and(
        run.status
            .success()
            .then_some(())
            .ok_or("vm.sh failed".into()),
    ) {
        panic!("scenario {name}: {why}\n{stdout}\n{stderr}");
    }
    println!("{stdout}");
    stdout.into_owned()
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn an_eight_rail_pod_attaches_checks_and_detaches_on_real_vfs() {
    scenario("attach");
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn every_vf_setting_on_igb_and_the_mac_defects_it_showed() {
    scenario("vf-settings");
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn a_dual_stack_rail_and_a_dpdk_vf_on_real_vfs() {
    scenario("dual-dpdk");
}

/// A whole-NIC rail on a real igb PF: granted by the node file, moved
/// whole into the pod, pinging the leaf, back home as it was (#61).
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn a_whole_nic_rail_on_a_real_pf() {
    scenario("whole-nic");
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn vfs_a_driver_reload_tore_out_of_a_live_pod_are_reattached() {
    scenario("reload");
}

/// The lines a scenario printed after `# readme: NAME` (each as `#   …`).
fn readme_block(out: &str, name: &str) -> String {
    let start = format!("# readme: {name}");
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != start)
        .skip(1)
        .map_while(|l| l.strip_prefix("#   ").or((l == "#  ").then_some("")))
        .map(str::trim_end)
        .collect();
    lines.join("\n")
}

/// README.md's doctor outputs are this scenario's (the blocks after
/// `<!-- doctor.sh NAME -->`): `RAILCNI_BLESS=1` writes them there.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn doctor_names_each_link_broken_on_real_drivers() {
    let out = scenario("doctor");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    for name in ["healthy", "pf-mtu"] {
        let ran = readme_block(&out, name);
        assert!(ran.lines().count() > 3, "no {name} output:\n{out}");
        let marker = format!("<!-- doctor.sh {name} -->\n```\n");
        let at = readme
            .find(&marker)
            .unwrap_or_else(|| panic!("README.md has no {marker:?}"))
            + marker.len();
        let end = at + readme[at..].find("```\n").unwrap();
        let shown: Vec<&str> = readme[at..end].lines().map(str::trim_end).collect();
        if std::env::var_os("RAILCNI_BLESS").is_some() {
            readme.replace_range(at..end, &format!("{ran}\n"));
            continue;
        }
        assert_eq!(
            shown.join("\n"),
            ran,
            "README.md's {name} doctor run is not what the emulated node prints \
             (RAILCNI_BLESS=1 writes it)"
        );
    }
    if std::env::var_os("RAILCNI_BLESS").is_some() {
        std::fs::write(&path, readme).unwrap();
    }
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn dra_driver_sriov_standalone_from_its_container_on_real_vfs() {
    scenario("dra");
}

#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn an_ipv6_slash_64_host_leaf_rail_and_dual_stack_on_real_vfs() {
    scenario("ipv6-64");
}

/// #52: a namespace that outlives its path (a process in it, then only a
/// descriptor on it) keeps its real VF, and its address is never handed
/// out twice; DEL always answers and gc finishes once the kernel hands
/// the VF back.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn a_namespace_that_outlives_its_path_keeps_its_vf_and_address_on_real_vfs() {
    scenario("held-netns");
}

/// deploy/daemonset.yaml's containers in the box it gives them (#46): the
/// installer with no capability, the agent with its list, host paths only
/// as mounted, /sys read-only, no_new_privs; then each capability taken
/// away and what fails with it, reported.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn the_daemonset_runs_in_the_box_its_manifest_gives_it() {
    let out = scenario("confined");
    assert!(out.contains("without net_admin"), "{out}");
}

/// The GID table parser on the real kernel's sysfs (#44 item 3's ground):
/// soft-RoCE on a VF, IPv4 (IPv4-mapped) and IPv6 RoCE v2 entries.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn the_gid_table_as_the_kernel_writes_it() {
    scenario("gids");
}

/// `railcnictl nccl-env` for a VF served by soft-RoCE from the host: the
/// device with its real port, and NCCL's GID selection with what it prints
/// lands on exactly the RoCE v2 GID of the VF's address.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn nccl_env_names_the_rxe_port_and_the_gid_nccl_selects() {
    scenario("nccl-env");
}

/// rdmaQoS's rdma_cm half on the real kernel's configfs: the group made,
/// the ToS written and read back, removed or restored
/// on DEL, and rping's RoCE v2 packets carrying it on the wire.
#[test]
#[ignore = "root: emulated SR-IOV node (QEMU igb guest); scripts/test.sh runs it"]
fn rdma_cm_tos_on_the_real_configfs_and_on_the_wire() {
    let out = scenario("rdma-qos");
    assert!(out.contains("tos 0x60"), "{out}");
}
