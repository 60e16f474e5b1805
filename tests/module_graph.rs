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
        for (via, name) in imported(&parse(&path)) {
            let is_module = root.join(format!("{name}.rs")).exists() || root.join(&name).is_dir();
            if via == "crate" && name != module && is_module {
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

/// A source file as Rust.
fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap();
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A file's product code as text: what comes before its first test module
/// (where a parent's use of a child is looked for).
fn product(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("#[cfg(test)]").next().unwrap_or("").to_string()
}

/// Whether an item is test code (`#[cfg(test)]`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The first name after `crate::` or `super::` (after any further
/// `super::`) in every use tree, its groups and nested groups included,
/// and in every path of the file's product code, with the word it came
/// through. Macro bodies are tokens, not paths: not looked into.
fn imported(file: &syn::File) -> Vec<(&'static str, String)> {
    struct Names(Vec<(&'static str, String)>);
    impl Names {
        fn walk(&mut self, tree: &syn::UseTree, via: Option<&'static str>) {
            use syn::UseTree::*;
            match (tree, via) {
                (Path(p), None) if p.ident == "crate" => self.walk(&p.tree, Some("crate")),
                (Path(p), None) if p.ident == "super" => self.walk(&p.tree, Some("super")),
                (Path(p), Some(v)) if p.ident == "super" => self.walk(&p.tree, Some(v)),
                (Path(p), Some(v)) => self.0.push((v, p.ident.to_string())),
                (Name(n), Some(v)) if n.ident != "self" => self.0.push((v, n.ident.to_string())),
                (Rename(r), Some(v)) => self.0.push((v, r.ident.to_string())),
                (Group(g), _) => g.items.iter().for_each(|t| self.walk(t, via)),
                _ => {}
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Names {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            let attrs = match item {
                syn::Item::Mod(m) => &m.attrs,
                syn::Item::Fn(f) => &f.attrs,
                syn::Item::Impl(i) => &i.attrs,
                syn::Item::Use(u) => &u.attrs,
                _ => return syn::visit::visit_item(self, item),
            };
            if !is_test(attrs) {
                syn::visit::visit_item(self, item);
            }
        }
        fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
            self.walk(&u.tree, None);
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let mut segments = path.segments.iter().map(|s| s.ident.to_string());
            let via = match segments.next().as_deref() {
                Some("crate") => Some("crate"),
                Some("super") => Some("super"),
                _ => None,
            };
            if let Some(via) = via {
                if let Some(name) = segments.find(|s| s != "super") {
                    self.0.push((via, name));
                }
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut names = Names(Vec::new());
    syn::visit::Visit::visit_file(&mut names, file);
    names.0.retain(|(_, n)| n != "self");
    names.0
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
        for (via, item) in imported(&parse(file)) {
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
    // The same, grouped over lines and nested, and as a path in code: a
    // line-by-line text scan misses these.
    std::fs::write(
        root.join("cli/status.rs"),
        "use super::{\n    self,\n    Outcome as Done,\n};\nuse crate::{\n    cli::{self as c},\n    Settings,\n};\n\
         pub fn run() { let _ = crate::Settings; }\n\
         #[cfg(test)]\nmod tests { use super::super::Outcome; }\n",
    )
    .unwrap();
    assert_eq!(upward_imports(root), up, "grouped, nested, renamed");
    std::fs::write(
        root.join("cli/status.rs"),
        "pub fn run() -> Option<super::Outcome> { None }\n",
    )
    .unwrap();
    assert_eq!(
        upward_imports(root),
        [("cli/status.rs".to_string(), "super::Outcome".to_string())],
        "a path in a signature"
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
