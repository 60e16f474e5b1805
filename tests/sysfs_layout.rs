//! Where sysfs keeps a device is spelt in one place,
//! `base::sysfs_layout`: no other product code writes a sysfs directory
//! (`bus/pci/devices`, `class/net`, `class/infiniband`, `bus/pci/drivers`,
//! `physfn/net`) into a path it reads. A string a person reads (a fix line,
//! `echo 0 > /sys/class/net/…`) names the absolute path and is not a read.
//! Doc comments, which name the layout to explain it, read nothing. The
//! fake hardware builds a tree of that layout and is not product code.

use std::path::Path;

use support::rust_source::{product_literals, DocComments};

/// The sysfs directories whose spelling lives in `base::sysfs_layout`.
const LAYOUT: [&str; 5] = [
    "bus/pci/devices",
    "bus/pci/drivers",
    "class/net",
    "class/infiniband",
    "physfn/net",
];

const HOME: &str = "base/src/sysfs_layout.rs";

/// Files that are not product code that reads sysfs: the fakes that write
/// a tree of the kernel's layout for the tests.
const FAKES: [&str; 2] = ["src/hw/fake.rs", "src/hw/fake_ipoib.rs"];

/// The layout directories `text` spells outside an absolute `/sys/…` path.
fn spelt(text: &str) -> Vec<&'static str> {
    LAYOUT
        .iter()
        .filter(|part| {
            text.match_indices(*part)
                .any(|(at, _)| !text[..at].ends_with("/sys/"))
        })
        .copied()
        .collect()
}

/// `file: "class/net"` for every product string of the tree at `root`
/// that spells a layout directory outside its home.
fn spelt_outside_home(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for crate_src in ["src", "ipam/src", "ctl/src", "cni/src", "base/src"] {
        for path in support::rust_files(&root.join(crate_src)) {
            let name = path.strip_prefix(root).unwrap_or(&path);
            let name = name.display().to_string();
            if name == HOME || FAKES.contains(&name.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for s in product_literals(&file, DocComments::Left) {
                found.extend(spelt(&s).into_iter().map(|p| format!("{name}: {p:?}")));
            }
        }
    }
    found
}

#[test]
fn only_the_layout_module_spells_a_sysfs_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = std::fs::read_to_string(root.join(HOME)).unwrap();
    for part in LAYOUT {
        assert!(home.contains(part), "{HOME} no longer spells {part}");
    }
    let found = spelt_outside_home(root);
    assert!(
        found.is_empty(),
        "sysfs directories spelt outside {HOME} (read through it, or vf::Sysfs):\n{}",
        found.join("\n")
    );
}

/// In a scratch tree: a join of its own, in a call or a `format!`, is
/// found; a fix line's absolute path and a test module's join are not.
#[test]
fn a_path_spelt_outside_its_home_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["src", "ipam/src", "ctl/src", "cni/src", "base/src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join(HOME), "const D: &str = \"class/net\";\n").unwrap();
    std::fs::write(
        root.join("ctl/src/doctor.rs"),
        "/// Reads `class/net/<pf>`.\nfn fix(pf: &str) -> String { format!(\"echo 0 > /sys/class/net/{pf}/device/sriov_numvfs\") }\n\
         #[cfg(test)]\nmod tests { fn t(r: &std::path::Path) { r.join(\"class/net\"); } }\n",
    )
    .unwrap();
    assert_eq!(spelt_outside_home(root), Vec::<String>::new());
    std::fs::write(
        root.join("ipam/src/master.rs"),
        "fn net(r: &std::path::Path, pci: &str) -> std::path::PathBuf { r.join(\"bus/pci/devices\").join(pci) }\n\
         fn msg(pf: &str) -> String { format!(\"{pf}: class/infiniband\") }\n",
    )
    .unwrap();
    assert_eq!(
        spelt_outside_home(root),
        [
            "ipam/src/master.rs: \"bus/pci/devices\"",
            "ipam/src/master.rs: \"class/infiniband\""
        ]
    );
}
