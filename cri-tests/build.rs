//! The binaries the tests drive are the workspace's, built beside this
//! package in the same target directory (`cargo test --workspace` builds
//! them first): name them as a test of their own package would see them,
//! and the repository root, for the shared fake-node harness.

use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let profile = Path::new(&out).ancestors().nth(3).unwrap_or(Path::new("."));
    println!(
        "cargo:rustc-env=CARGO_BIN_EXE_railcni={}",
        profile.join("railcni").display()
    );
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let repo = Path::new(&manifest).join("..");
    println!("cargo:rustc-env=RAILCNI_REPO_ROOT={}", repo.display());
    println!("cargo:rerun-if-changed=build.rs");
}
