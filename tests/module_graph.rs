//! The house: in every crate, the top-level modules' `crate::` references
//! (product code, not test modules) form no circle, so each module can be
//! read and tested from the bottom up. (The `cni` crate's args → error →
//! version → env → args circle and the plugin's config → vf arrow were
//! removed; this keeps them out.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules it names through `crate::`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
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
                let is_module =
                    root.join(format!("{name}.rs")).exists() || root.join(&name).is_dir();
                if !name.is_empty() && name != module && is_module {
                    out.entry(module.clone()).or_default().insert(name);
                }
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
    for root in ["cni/src", "base/src", "src", "ipam/src", "ctl/src"] {
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
