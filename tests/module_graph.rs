//! The house: in every crate, the top-level modules' `crate::` references
//! (product code, not test modules) form no circle, so each module can be
//! read and tested from the bottom up. (The `cni` crate's args → error →
//! version → env → args circle and the plugin's config → vf arrow were
//! removed; this keeps them out.) And no import runs upward: no module
//! takes an item through the crate root, or from a parent that uses it in
//! turn (a dispatcher's `Outcome`, a verb's `Ctx`): such items live in a
//! leaf module of their own that both sides import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules it names through `crate::`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in support::rust_files(root) {
        let rel = path.strip_prefix(root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let product = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, _) in product.match_indices("crate::") {
            let name: String = product[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let is_module = root.join(format!("{name}.rs")).exists() || root.join(&name).is_dir();
            if !name.is_empty() && name != module && is_module {
                out.entry(module.clone()).or_default().insert(name);
            }
        }
    }
    out
}

/// A circle through `graph`, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    let starts: Vec<String> = graph.keys().cloned().collect();
    starts
        .iter()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_circle_among_its_modules() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for root in ROOTS {
        let g = graph(&here.join(root));
        assert!(
            !g.is_empty() || root == "ctl/src",
            "{root}: no references found: is the scan broken?"
        );
        assert_eq!(circle(&g), None, "{root}: {g:?}");
    }
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [
        ("args", "error"),
        ("error", "version"),
        ("version", "env"),
        ("env", "args"),
    ] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(circle(&g).map(|c| c.len()), Some(5));
    g.get_mut("version").unwrap().clear();
    assert_eq!(circle(&g), None);
}

/// The crates' source roots.
const ROOTS: [&str; 5] = ["cni/src", "base/src", "src", "ipam/src", "ctl/src"];

/// A file's product code: what comes before its first test module.
fn product(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("#[cfg(test)]").next().unwrap_or("").to_string()
}

/// The names after `crate::` or `super::` (each name of a `{a, b}` group),
/// with the word before them; macros (`name!`) left out.
fn imported(text: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for via in ["crate::", "super::"] {
        for (i, _) in text.match_indices(via) {
            if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `super::super::`, `railcni::crate::`: not a start
            }
            let rest = &text[i + via.len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                None => vec![rest],
            };
            for n in names {
                let n = n.trim_start();
                let name: String = n
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let after = &n[name.len()..];
                if name.is_empty() || name == "self" || name == "super" || after.starts_with('!') {
                    continue;
                }
                out.push((if via == "crate::" { "crate" } else { "super" }, name));
            }
        }
    }
    out
}

/// Does `parent`'s code use module `child` (a call or a private `use`; a
/// `pub use` re-export and the `mod` line do not count)?
fn uses_child(parent: &str, child: &str) -> bool {
    let needle = format!("{child}::");
    parent.lines().any(|line| {
        let t = line.trim_start();
        if t.starts_with("//")
            || t.starts_with("pub use")
            || t.starts_with("pub(crate) use")
            || t.starts_with("pub(super) use")
        {
            return false;
        }
        line.match_indices(&needle).any(|(i, _)| {
            !line[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
        })
    })
}

/// Every upward import in the crate at `root`: (file, `crate::X` or `super::X`).
fn upward_imports(root: &Path) -> Vec<(String, String)> {
    let files = support::rust_files(root);
    // Macros are exported at a crate's root (`base`'s log macros, re-exported
    // by the crates that use them): naming them there is not an upward import.
    let mut everywhere = files.clone();
    for other in ROOTS {
        let other = Path::new(env!("CARGO_MANIFEST_DIR")).join(other);
        if other.exists() && !root.starts_with(&other) {
            everywhere.extend(support::rust_files(&other));
        }
    }
    let macros: BTreeSet<String> = everywhere
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.match_indices("macro_rules! ")
                .map(|(i, _)| {
                    text[i + 13..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                })
                .collect::<Vec<String>>()
        })
        .collect();
    let crate_root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| root.join(f))
        .find(|f| f.exists());
    let is_module =
        |dir: &Path, name: &str| dir.join(format!("{name}.rs")).exists() || dir.join(name).is_dir();
    let mut out = Vec::new();
    for file in &files {
        if Some(file) == crate_root.as_ref() {
            continue;
        }
        let (name, dir) = if file.file_name().is_some_and(|n| n == "mod.rs") {
            let d = file.parent().unwrap();
            (
                d.file_name().unwrap().to_string_lossy().to_string(),
                d.parent().unwrap().to_path_buf(),
            )
        } else {
            (
                file.file_stem().unwrap().to_string_lossy().to_string(),
                file.parent().unwrap().to_path_buf(),
            )
        };
        let parent = if dir.join("mod.rs").exists() {
            Some(dir.join("mod.rs"))
        } else if dir == root {
            crate_root.clone()
        } else {
            Some(dir.with_extension("rs")).filter(|p| p.exists())
        };
        let parent_code = parent.as_deref().map(product).unwrap_or_default();
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        for (via, item) in imported(&product(file)) {
            let base = if via == "crate" { root } else { dir.as_path() };
            if is_module(base, &item) || macros.contains(&item) {
                continue;
            }
            if via == "crate" || uses_child(&parent_code, &name) {
                out.push((rel.clone(), format!("{via}::{item}")));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn no_crate_imports_upward() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for root in ROOTS {
        let up = upward_imports(&here.join(root));
        assert!(up.is_empty(), "{root}: upward imports: {up:?}");
    }
}

#[test]
fn an_upward_import_is_found_when_there_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("cli")).unwrap();
    std::fs::write(
        root.join("main.rs"),
        "mod cli;\npub use cli::outcome::Outcome;\npub struct Settings;\n",
    )
    .unwrap();
    // The dispatcher runs its subcommand, which takes the dispatcher's type.
    std::fs::write(
        root.join("cli/mod.rs"),
        "mod status;\npub struct Outcome;\nfn main() { status::run(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/status.rs"),
        "use super::Outcome;\nuse crate::Settings;\nuse crate::cli;\npub fn run() {}\n",
    )
    .unwrap();
    let up = upward_imports(root);
    assert_eq!(
        up,
        [
            ("cli/status.rs".to_string(), "crate::Settings".to_string()),
            ("cli/status.rs".to_string(), "super::Outcome".to_string()),
        ]
    );
    // A type of its own leaf module, imported by both: nothing upward.
    std::fs::write(root.join("cli/outcome.rs"), "pub struct Outcome;\n").unwrap();
    std::fs::write(
        root.join("cli/mod.rs"),
        "mod outcome;\nmod status;\nfn main() { status::run(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/status.rs"),
        "use super::outcome::Outcome;\npub fn run() {}\n",
    )
    .unwrap();
    assert_eq!(upward_imports(root), []);
}
