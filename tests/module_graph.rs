//! The house: in every crate, the modules' references (product code, not
//! test modules) form no circle among siblings at any depth (the top-level
//! modules, `cli`'s children, `cli::agent`'s), every `crate::`, `super::`,
//! `self::` and child path resolved to the module it names, so each module
//! can be read and tested from the bottom up. (The `cni` crate's args → error →
//! version → env → args circle and the plugin's config → vf arrow were
//! removed; this keeps them out.) And no import runs upward: no module
//! takes an item through the crate root, or from a parent that uses it in
//! turn (a dispatcher's `Outcome`, a verb's `Ctx`): such items live in a
//! leaf module of their own that both sides import. At every depth: a
//! `crate::A::B::Item` from below `A::B` counts when `A::B` uses the child
//! leading to the file, and a parent's use of its child is read from the
//! parsed file, its test modules left out by their attribute (not by
//! cutting the text at the first one), macro arguments included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use support::rust_source::is_test;

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

/// Does the product code of `parent` (a parsed file; its test modules
/// left out by their attribute, wherever they stand) use module `child`: a
/// path or a private `use` through it? A `pub use` re-export and the `mod`
/// line do not count.
fn uses_child(parent: Option<&syn::File>, child: &str) -> bool {
    struct Uses<'c> {
        child: &'c str,
        found: bool,
    }
    impl Uses<'_> {
        fn tree(&mut self, t: &syn::UseTree) {
            use syn::UseTree::*;
            match t {
                Path(p) if p.ident == "self" => self.tree(&p.tree),
                Path(p) => self.found |= p.ident == self.child,
                Group(g) => g.items.iter().for_each(|t| self.tree(t)),
                _ => {}
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Uses<'_> {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            match item {
                syn::Item::Use(u) if !matches!(u.vis, syn::Visibility::Inherited) => {}
                syn::Item::Use(u) => self.tree(&u.tree),
                syn::Item::Mod(m) if is_test(&m.attrs) || m.content.is_none() => {}
                syn::Item::Fn(f) if is_test(&f.attrs) => {}
                _ => syn::visit::visit_item(self, item),
            }
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let mut segs = path.segments.iter().map(|s| s.ident.to_string());
            let first = segs.next();
            let first = match first.as_deref() {
                Some("self") => segs.next(),
                _ => first,
            };
            self.found |= path.segments.len() > 1 && first.as_deref() == Some(self.child);
            syn::visit::visit_path(self, path);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            // Macro arguments are tokens: read them as expressions when they parse.
            let args = m.parse_body_with(
                syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
            );
            for e in args.into_iter().flatten() {
                syn::visit::visit_expr(self, &e);
            }
        }
    }
    let Some(parent) = parent else { return false };
    let mut v = Uses {
        child,
        found: false,
    };
    syn::visit::Visit::visit_file(&mut v, parent);
    v.found
}

/// Every path of a file's product code as its segments (use trees
/// flattened, paths in code, macro arguments that parse as expressions).
fn code_paths(file: &syn::File) -> Vec<Vec<String>> {
    struct Paths(Vec<Vec<String>>);
    impl Paths {
        fn tree(&mut self, t: &syn::UseTree, mut at: Vec<String>) {
            use syn::UseTree::*;
            match t {
                Path(p) => {
                    at.push(p.ident.to_string());
                    self.tree(&p.tree, at)
                }
                // `self` names the module the path has reached.
                Name(n) if n.ident == "self" => self.0.push(at),
                Rename(r) if r.ident == "self" => self.0.push(at),
                Name(n) => {
                    at.push(n.ident.to_string());
                    self.0.push(at)
                }
                Rename(r) => {
                    at.push(r.ident.to_string());
                    self.0.push(at)
                }
                Group(g) => g.items.iter().for_each(|t| self.tree(t, at.clone())),
                Glob(_) => self.0.push(at),
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Paths {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            match item {
                syn::Item::Mod(m) if is_test(&m.attrs) => {}
                syn::Item::Fn(f) if is_test(&f.attrs) => {}
                syn::Item::Use(u) => self.tree(&u.tree, Vec::new()),
                _ => syn::visit::visit_item(self, item),
            }
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            self.0
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
            syn::visit::visit_path(self, path);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            let args = m.parse_body_with(
                syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
            );
            for e in args.into_iter().flatten() {
                syn::visit::visit_expr(self, &e);
            }
        }
    }
    let mut p = Paths(Vec::new());
    syn::visit::Visit::visit_file(&mut p, file);
    p.0
}

/// Every `crate::…` path of a file's product code, without `crate`.
fn crate_paths(file: &syn::File) -> Vec<Vec<String>> {
    code_paths(file)
        .into_iter()
        .filter(|segs| segs.first().is_some_and(|s| s == "crate"))
        .map(|segs| segs[1..].to_vec())
        .collect()
}

/// The module a path written in module `here` names: `crate::`,
/// `super::` (any number), `self::` or a child module's name, followed as
/// far as the segments name modules with files. `None` for a path that
/// leaves the crate or names no module of it.
fn resolve(root: &Path, here: &[String], segs: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.to_vec();
    let mut rest = segs;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(child) => {
            let mut next = base.clone();
            next.push(child.to_string());
            file_of(root, &next)?;
        }
        None => return None,
    }
    for s in rest {
        let mut next = base.clone();
        next.push(s.clone());
        match file_of(root, &next) {
            Some(_) => base = next,
            None => break,
        }
    }
    Some(base)
}

/// Per parent module, the arrows among its children: a file below child
/// `a` naming a module below its sibling `b` is `a → b` under their
/// nearest common parent. (A module naming its own descendant is a parent
/// running its child; one naming its ancestor is `upward_imports`'.)
fn sibling_graphs(root: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let mut out: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in support::rust_files(root) {
        let here = module_of(file.strip_prefix(root).unwrap());
        if here.len() == 1 && (here[0] == "lib" || here[0] == "main") {
            continue;
        }
        for segs in code_paths(&parse(&file)) {
            let Some(there) = resolve(root, &here, &segs) else {
                continue;
            };
            let common = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
            if common == here.len() || common == there.len() {
                continue; // the same module, a descendant or an ancestor
            }
            (out.entry(here[..common].to_vec()).or_default())
                .entry(here[common].clone())
                .or_default()
                .insert(there[common].clone());
        }
    }
    out
}

/// Every circle among sibling modules, at any depth, as
/// `parent: a -> b -> a` (`crate` for the top level).
fn sibling_circles(root: &Path) -> Vec<String> {
    sibling_graphs(root)
        .iter()
        .filter_map(|(parent, g)| {
            let level = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            Some(format!("{level}: {}", circle(g)?.join(" -> ")))
        })
        .collect()
}

#[test]
fn no_circle_among_sibling_modules_at_any_depth() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut levels = 0;
    for root in ROOTS {
        let graphs = sibling_graphs(&here.join(root));
        levels += graphs.len();
        let circles = sibling_circles(&here.join(root));
        assert!(circles.is_empty(), "{root}: {circles:?}");
    }
    assert!(
        levels >= 20,
        "only {levels} parent modules with arrows: is the scan broken?"
    );
}

#[test]
fn a_circle_between_nested_siblings_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("cli/agent")).unwrap();
    std::fs::write(root.join("lib.rs"), "mod cli;\nmod vf;\n").unwrap();
    std::fs::write(root.join("vf.rs"), "pub fn resolve() {}\n").unwrap();
    std::fs::write(root.join("cli/mod.rs"), "mod agent;\nmod status;\n").unwrap();
    std::fs::write(
        root.join("cli/status.rs"),
        "pub fn table() { crate::vf::resolve(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/agent/mod.rs"),
        "mod serve;\npub fn run() { serve::go(); }\n",
    )
    .unwrap();
    // A grandchild of agent takes status's table: agent → status, no circle.
    std::fs::write(
        root.join("cli/agent/serve.rs"),
        "use super::super::status;\npub fn go() { status::table(); }\n",
    )
    .unwrap();
    assert_eq!(sibling_circles(root), Vec::<String>::new());
    // status runs the agent back, in a macro's argument: a circle under cli.
    std::fs::write(
        root.join("cli/status.rs"),
        "pub fn table() { println!(\"{:?}\", crate::cli::agent::run()); }\n",
    )
    .unwrap();
    assert_eq!(sibling_circles(root), ["cli: agent -> status -> agent"]);
    // Test code does not count.
    std::fs::write(
        root.join("cli/status.rs"),
        "pub fn table() {}\n#[cfg(test)]\nmod tests { fn t() { super::super::agent::run(); } }\n",
    )
    .unwrap();
    assert_eq!(sibling_circles(root), Vec::<String>::new());
}

/// The module path of the file at `rel` (`cli/agent/passes.rs` →
/// `[cli, agent, passes]`; a `mod.rs` is its directory's).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file of module `module` under `root` (its `mod.rs`, or `<name>.rs`;
/// the crate root for the empty path).
fn file_of(root: &Path, module: &[String]) -> Option<std::path::PathBuf> {
    if module.is_empty() {
        return ["lib.rs", "main.rs"]
            .iter()
            .map(|f| root.join(f))
            .find(|f| f.exists());
    }
    let dir = module.iter().fold(root.to_path_buf(), |d, m| d.join(m));
    [dir.join("mod.rs"), dir.with_extension("rs")]
        .into_iter()
        .find(|f| f.exists())
}

/// `crate::A::B::Item` from a file below `A::B`, where `A::B` uses the
/// child that leads to the file: the file reaches up into an ancestor that
/// depends on it, at any depth (`(file, crate::A::B::Item)`).
fn upward_crate_paths(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for file in support::rust_files(root) {
        let rel = file.strip_prefix(root).unwrap();
        let here = module_of(rel);
        for segs in crate_paths(&parse(&file)) {
            // The longest prefix of the path that is a module.
            let mut module: Vec<String> = Vec::new();
            for s in &segs {
                let mut next = module.clone();
                next.push(s.clone());
                match file_of(root, &next) {
                    Some(_) => module = next,
                    None => break,
                }
            }
            let Some(item) = segs.get(module.len()) else {
                continue;
            };
            let below = here.len() > module.len() && here[..module.len()] == module[..];
            if module.is_empty() || !below {
                continue;
            }
            let ancestor = file_of(root, &module).map(|f| parse(&f));
            if uses_child(ancestor.as_ref(), &here[module.len()]) {
                out.push((
                    rel.display().to_string(),
                    format!("crate::{}::{item}", module.join("::")),
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
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
        let parent_code = parent.as_deref().map(parse);
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        for (via, item) in imported(&parse(file)) {
            let base = if via == "crate" { root } else { dir.as_path() };
            if is_module(base, &item) || macros.contains(&item) {
                continue;
            }
            if via == "crate" || uses_child(parent_code.as_ref(), &name) {
                out.push((rel.clone(), format!("{via}::{item}")));
            }
        }
    }
    out.extend(upward_crate_paths(root));
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

    // Below the top level (#62): a grandchild taking its grandparent's
    // item by a crate path while the grandparent runs the child that holds
    // it, and a parent whose call of its child comes after its test module.
    std::fs::create_dir(root.join("cli/agent")).unwrap();
    std::fs::write(
        root.join("cli/mod.rs"),
        "mod agent;\nmod outcome;\nmod status;\npub struct Usage;\n\
         fn main() { status::run(); agent::run(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/agent/mod.rs"),
        "mod passes;\npub fn run() {}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/agent/passes.rs"),
        "use crate::cli::Usage;\npub fn pass() -> Option<Usage> { None }\n",
    )
    .unwrap();
    assert_eq!(
        upward_imports(root),
        [(
            "cli/agent/passes.rs".to_string(),
            "crate::cli::Usage".to_string()
        )],
        "a nested reach into an ancestor that runs it"
    );
    std::fs::write(
        root.join("cli/agent/passes.rs"),
        "use crate::cli::outcome::Outcome;\npub fn pass() -> Option<Outcome> { None }\n",
    )
    .unwrap();
    assert_eq!(
        upward_imports(root),
        [],
        "through the leaf module: nothing upward"
    );
    std::fs::write(
        root.join("cli/agent/mod.rs"),
        "mod passes;\npub struct Shared;\n#[cfg(test)]\nmod tests {}\n\
         pub fn run() { passes::pass(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("cli/agent/passes.rs"),
        "use super::Shared;\npub fn pass() -> Option<Shared> { None }\n",
    )
    .unwrap();
    assert_eq!(
        upward_imports(root),
        [(
            "cli/agent/passes.rs".to_string(),
            "super::Shared".to_string()
        )],
        "the parent's call after its test module still counts"
    );
}
