//! Docs that cannot drift from the tree: every reference README.md and
//! docs/ make in backticks or links resolves.
//!
//! - a repository path (`src/hw/`, `tests/module_graph.rs`, a link to
//!   `docs/ipam.md`), or a path inside a crate's sources (`cli/agent/`,
//!   `vf/settings/mod.rs`): it exists; a script's `--flag` or subcommand
//!   word after it appears in that script as a whole word;
//! - a Rust path (`vf::settings::restore`, `railcni_ipam::inline::read_config`,
//!   `Error::DetachIncomplete`): its modules exist and each name after
//!   them is defined or named there;
//! - `railcni …` / `railcni-ipam …`: the CNI binaries take no subcommand
//!   (that is `railcnictl`'s, whose command lines `doc_examples.rs` checks);
//! - a type-like name alone (`VfSettings`, `NetworkAttachmentDefinition`):
//!   some file of the tree other than a doc names it (a definition, the
//!   manifests that hold a Kubernetes kind, the code that reads an upstream
//!   field), so a doc naming a type that was deleted or renamed is flagged.
//!
//! Placeholders (`<node>`, `*`, `…`, `$VAR`) and absolute paths (the node's
//! `/etc/cni/…`) are not references to this tree and are skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each crate's source root and the names code uses for it.
const CRATES: [(&str, &[&str]); 5] = [
    ("src", &["railcni", "crate"]),
    ("ipam/src", &["railcni_ipam", "ipam", "crate"]),
    ("ctl/src", &["railcnictl", "crate"]),
    ("cni/src", &["cni", "crate"]),
    ("base/src", &["base", "crate"]),
];

/// Inline code spans (false) and link targets (true), as a Markdown reader
/// sees them: a span that wraps a line is one span (its line break a
/// space), a fenced or indented block holds none.
fn references(text: &str) -> Vec<(String, bool)> {
    use pulldown_cmark::{Event, Parser, Tag};
    let mut out = Vec::new();
    for event in Parser::new(text) {
        match event {
            Event::Code(span) => out.push((span.to_string(), false)),
            Event::Start(Tag::Link { dest_url, .. }) => {
                let target = dest_url.to_string();
                if !target.contains("://")
                    && !target.starts_with('#')
                    && !target.starts_with("mailto:")
                {
                    out.push((target.split('#').next().unwrap_or("").to_string(), true));
                }
            }
            _ => {}
        }
    }
    out
}

fn is_placeholder(s: &str) -> bool {
    s.contains(['<', '*', '…', '$', '{', '='])
}

/// The tree's source roots plus the repository root: where a path may start.
fn bases(root: &Path) -> Vec<PathBuf> {
    let mut b = vec![root.to_path_buf()];
    b.extend(CRATES.iter().map(|(src, _)| root.join(src)));
    b
}

/// `Some(ok)` when `token` is a path into this tree (its first part is an
/// entry of the repository or of a crate's sources), `None` otherwise.
fn check_path(root: &Path, token: &str) -> Option<bool> {
    let token = token.trim_end_matches([',', '.', ':', ')']);
    if !token.contains('/') || token.starts_with('/') || is_placeholder(token) {
        return None;
    }
    if !token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
    {
        return None;
    }
    let first = token.split('/').next()?;
    if first == "target" {
        return None; // what a build writes, not the tree
    }
    let starts = bases(root)
        .into_iter()
        .filter(|b| b.join(first).exists())
        .collect::<Vec<_>>();
    if starts.is_empty() {
        return None;
    }
    let token = token.trim_end_matches('/');
    Some(
        starts
            .iter()
            .any(|b| b.join(token).exists() || b.join(format!("{token}.rs")).exists()),
    )
}

/// A module: its file's text and its directory (for child modules).
struct Module {
    text: String,
    dir: Option<PathBuf>,
}

fn module_at(dir: &Path, name: &str) -> Option<Module> {
    let file = dir.join(format!("{name}.rs"));
    let sub = dir.join(name);
    let text_of = |p: &Path| std::fs::read_to_string(p).ok();
    if sub.join("mod.rs").exists() {
        return Some(Module {
            text: text_of(&sub.join("mod.rs"))?,
            dir: Some(sub),
        });
    }
    if file.exists() {
        return Some(Module {
            text: text_of(&file)?,
            dir: sub.is_dir().then_some(sub),
        });
    }
    None
}

fn crate_root(src: &Path) -> Module {
    let file = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|f| f.exists());
    Module {
        text: file
            .and_then(|f| std::fs::read_to_string(f).ok())
            .unwrap_or_default(),
        dir: Some(src.to_path_buf()),
    }
}

/// Every module directory (and file) of every crate, by name: where a path
/// written relative to its crate or module (`add::steps::attach`) may start.
fn modules_named(root: &Path, name: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = CRATES.iter().map(|(s, _)| root.join(s)).collect();
    while let Some(dir) = dirs.pop() {
        out.extend(module_at(&dir, name));
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            }
        }
    }
    for (src, names) in CRATES {
        if names.contains(&name) {
            out.push(crate_root(&root.join(src)));
        }
    }
    out
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Is `name` an item defined (or re-exported) in this module's file?
fn defines(text: &str, name: &str) -> bool {
    [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "macro_rules! ",
    ]
    .iter()
    .any(|k| has_word(text, &format!("{k}{name}")))
        || text.split(';').any(|statement| {
            let s = statement.trim_start();
            (s.starts_with("pub use") || s.starts_with("pub(crate) use")) && has_word(s, name)
        })
}

/// Every file's text under a module directory (its items' methods live there).
fn texts_under(dir: &Path) -> String {
    support::rust_files(dir)
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// Does `segments` (after its first, which is `start`) resolve from `start`?
fn resolves(start: Module, rest: &[&str]) -> bool {
    let mut here = start;
    for (k, seg) in rest.iter().enumerate() {
        if let Some(child) = here.dir.as_deref().and_then(|d| module_at(d, seg)) {
            here = child;
            continue;
        }
        if !defines(&here.text, seg) {
            return false;
        }
        // An item: what follows (a method, a variant) is named in its module.
        let around = here.dir.as_deref().map(texts_under).unwrap_or_default() + &here.text;
        return rest[k + 1..].iter().all(|m| has_word(&around, m));
    }
    true
}

/// Between two files' texts in `all_sources`.
const FILE_MARK: &str = "\n// \u{1}FILE\n";

/// Every `.rs` text of every crate, each behind `FILE_MARK`, for
/// `Type::member`.
fn all_sources(root: &Path) -> String {
    CRATES
        .iter()
        .flat_map(|(s, _)| support::rust_files(&root.join(s)))
        .map(|p| {
            format!(
                "{FILE_MARK}{}",
                std::fs::read_to_string(p).unwrap_or_default()
            )
        })
        .collect()
}

/// The files that define the type `name` or implement something for it:
/// where its members (variants, fields, methods) are written. `sources`
/// holds every file's text, each behind a `// FILE` line (`all_sources`).
fn type_homes<'a>(sources: &'a str, name: &str) -> Vec<&'a str> {
    let defines = |text: &str| {
        ["struct ", "enum ", "trait ", "type "]
            .iter()
            .any(|k| has_word(text, &format!("{k}{name}")))
            || text.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("impl") && (has_word(l, name) && !l.contains("::"))
            })
    };
    sources
        .split(FILE_MARK)
        .filter(|text| defines(text))
        .collect()
}

/// `Some(ok)` when `span` is a Rust path of this tree.
fn check_rust_path(root: &Path, span: &str, sources: &str) -> Option<bool> {
    let span = span.trim_end_matches("()").trim_end_matches('!');
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let segs: Vec<&str> = span.split("::").collect();
    if segs.len() < 2 || !segs.iter().all(|s| ident(s)) {
        return None;
    }
    let first = segs[0];
    if first.starts_with(|c: char| c.is_ascii_uppercase()) {
        // `Type::member`: a type of this tree that has the member.
        let homes = type_homes(sources, first);
        if homes.is_empty() {
            return None; // another crate's type (`RouteNetlinkMessage::…`)
        }
        return Some(
            segs[1..]
                .iter()
                .all(|m| homes.iter().any(|text| has_word(text, m))),
        );
    }
    let starts = modules_named(root, first);
    if starts.is_empty() {
        return None; // std::, serde::, tokio::: not this tree
    }
    Some(starts.into_iter().any(|m| resolves(m, &segs[1..])))
}

/// `Some(ok)` for `railcni …` / `railcni-ipam …`, which take no subcommand.
fn check_plugin_command(span: &str) -> Option<bool> {
    let mut words = span.split_whitespace();
    let bin = words.next()?;
    if bin != "railcni" && bin != "railcni-ipam" {
        return None;
    }
    let next = words.next()?;
    Some(!next.starts_with(|c: char| c.is_ascii_lowercase()))
}

/// `Some(ok)` for a script run with words: each `--flag` and bare word of
/// its command line (up to a pipe or redirection) appears in the script.
fn check_script_words(root: &Path, span: &str) -> Option<bool> {
    let mut words = span.split_whitespace();
    let script = words.next()?;
    if !(script.starts_with("scripts/") && script.ends_with(".sh")) {
        return None;
    }
    let text = std::fs::read_to_string(root.join(script)).ok()?;
    let args: Vec<&str> = words
        .take_while(|w| !["|", ">", "&&", ";", "#", "2>"].contains(w))
        .filter(|w| {
            !is_placeholder(w) && w.starts_with(|c: char| c == '-' || c.is_ascii_lowercase())
        })
        .filter(|w| !w.contains(['/', '.', '=']))
        .collect();
    if args.is_empty() {
        return None;
    }
    Some(args.iter().all(|a| has_script_word(&text, a)))
}

/// `word` in a script as a whole word: `--q` is not in `--quick)`, nor
/// `quick` in `--quick`.
fn has_script_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(part)
            && !text[i + word.len()..].chars().next().is_some_and(part)
    })
}

#[derive(Default)]
struct Tally {
    paths: usize,
    rust: usize,
    commands: usize,
    names: usize,
    wrong: Vec<String>,
}

/// `VfSettings`, `ResourceClaimTemplate`: one identifier that starts with a
/// capital and is not all capitals (`EPERM`, `ACTIVE` are words, not types).
fn is_type_like(span: &str) -> bool {
    span.starts_with(|c: char| c.is_ascii_uppercase())
        && span.chars().any(|c| c.is_ascii_lowercase())
        && span.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every identifier written in a file of the tree that is not Markdown
/// (sources, tests, manifests, scripts, fixtures): where a name a doc gives
/// has to live.
fn tree_words(root: &Path) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "md") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue; // not text
            };
            words.extend(
                text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| is_type_like(w))
                    .map(str::to_string),
            );
        }
    }
    words
}

/// The doctor's finding names (`cni/state`, `kernel/iommu`): string literals
/// of its code, which the docs name beside paths; a `format!` one
/// (`cni/{name}`) stands for what starts as it does.
fn finding_names(root: &Path) -> BTreeSet<String> {
    let code = texts_under(&root.join("ctl/src/cli/doctor"));
    code.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.contains('/') && !s.contains(' '))
        .map(str::to_string)
        .collect()
}

fn check_docs(root: &Path) -> Tally {
    let sources = all_sources(root);
    let findings = finding_names(root);
    let words = tree_words(root);
    let mut t = Tally::default();
    let mut seen = BTreeSet::new();
    for file in support::markdown_docs(root) {
        let text = std::fs::read_to_string(&file).expect("a readable doc");
        let name = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (span, link) in references(&text) {
            if !seen.insert((name.clone(), span.clone())) {
                continue;
            }
            let span = span.trim();
            if link {
                // Relative to the page, as a reader's browser resolves it.
                t.paths += 1;
                if !file.parent().unwrap_or(root).join(span).exists() {
                    t.wrong.push(format!("{name}: link ({span}): no such file"));
                }
                continue;
            }
            let mut verdicts = Vec::new();
            if is_type_like(span) {
                t.names += 1;
                verdicts.push((words.contains(span), "a name no file of the tree has"));
            }
            for expand in expand_groups(span) {
                if let Some(ok) = check_rust_path(root, &expand, &sources) {
                    t.rust += 1;
                    verdicts.push((ok, "Rust path"));
                }
            }
            if let Some(ok) = check_plugin_command(span) {
                t.commands += 1;
                verdicts.push((ok, "the CNI binaries take no subcommand"));
            }
            if let Some(ok) = check_script_words(root, span) {
                t.commands += 1;
                verdicts.push((ok, "a word its script does not know"));
            }
            if let Some(first) = span.split_whitespace().next() {
                let first = first.trim_start_matches("./");
                let is_finding = |f: &String| match f.split_once('{') {
                    Some((prefix, _)) => prefix.contains('/') && first.starts_with(prefix),
                    None => f == first,
                };
                if findings.iter().any(is_finding) {
                    continue; // a doctor finding's name, which its code holds
                }
                if let Some(ok) = check_path(root, first) {
                    t.paths += 1;
                    verdicts.push((ok, "no such path"));
                }
            }
            for (ok, why) in verdicts {
                if !ok {
                    t.wrong.push(format!("{name}: `{span}`: {why}"));
                }
            }
        }
    }
    t
}

/// `cli::doctor::{finding, place}` as `cli::doctor::finding`, `cli::doctor::place`.
fn expand_groups(span: &str) -> Vec<String> {
    match (span.find("::{"), span.ends_with('}')) {
        (Some(i), true) => span[i + 3..span.len() - 1]
            .split(',')
            .map(|m| format!("{}::{}", &span[..i], m.trim()))
            .collect(),
        _ => vec![span.to_string()],
    }
}

/// The Rust paths that source comments (`//!`, `///`) name in backticks.
fn check_comments(root: &Path) -> (usize, Vec<String>) {
    let sources = all_sources(root);
    let (mut checked, mut wrong) = (0, Vec::new());
    let files = CRATES
        .iter()
        .flat_map(|(src, _)| support::rust_files(&root.join(src)));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let name = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for line in text.lines() {
            let t = line.trim_start();
            if !(t.starts_with("//!") || t.starts_with("///")) {
                continue;
            }
            for span in t.split('`').skip(1).step_by(2) {
                for path in expand_groups(span.trim()) {
                    if let Some(ok) = check_rust_path(root, &path, &sources) {
                        checked += 1;
                        if !ok {
                            wrong.push(format!("{name}: `{path}`"));
                        }
                    }
                }
            }
        }
    }
    (checked, wrong)
}

#[test]
fn every_rust_path_a_source_comment_names_exists() {
    let (checked, wrong) = check_comments(&repo());
    assert!(
        checked >= 25,
        "only {checked} found: is the scan still finding them?"
    );
    assert!(
        wrong.is_empty(),
        "comments naming what is not there:\n{}",
        wrong.join("\n")
    );
    eprintln!("{checked} Rust paths in source comments resolve");
}

#[test]
fn every_path_rust_name_and_command_in_the_docs_exists() {
    let t = check_docs(&repo());
    assert!(
        t.paths >= 100 && t.rust >= 40 && t.names >= 20,
        "only {} paths, {} Rust paths and {} type names found: is the scan still finding them?",
        t.paths,
        t.rust,
        t.names
    );
    assert!(
        t.wrong.is_empty(),
        "references in the docs that do not resolve:\n{}",
        t.wrong.join("\n")
    );
    eprintln!(
        "{} references resolve: {} paths, {} Rust paths, {} command words, {} type names",
        t.paths + t.rust + t.commands + t.names,
        t.paths,
        t.rust,
        t.commands,
        t.names
    );
}

/// The drift the check is for, in a scratch copy of the docs' shape: each
/// kind of wrong reference is named, each right one passes.
#[test]
fn drift_is_found_when_there_is_some() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in [
        "docs",
        "src/hw",
        "src/vf/settings",
        "ipam/src",
        "ctl/src",
        "cni/src",
        "base/src",
        "scripts",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(
        root.join("src/lib.rs"),
        "pub mod hw;\npub mod vf;\npub mod error;\n",
    )
    .unwrap();
    std::fs::write(root.join("src/hw/mod.rs"), "pub trait Hardware {}\n").unwrap();
    std::fs::write(root.join("src/vf/mod.rs"), "pub mod settings;\n").unwrap();
    std::fs::write(
        root.join("src/vf/settings/mod.rs"),
        "pub fn restore() {}\npub struct VfSettings;\nimpl VfSettings { pub fn attrs() {} }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/error.rs"),
        "pub enum Error { DetachIncomplete }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("scripts/bench.sh"),
        "case $1 in --quick) ;; esac\n",
    )
    .unwrap();
    // Another crate's error type has a member `Error` lacks.
    std::fs::write(
        root.join("ipam/src/lib.rs"),
        "pub enum IpamError { Corrupt }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "`src/hw/` `src/vf/settings/mod.rs` `vf::settings::restore` `vf::settings::VfSettings::attrs` \
         `Error::DetachIncomplete` `scripts/bench.sh --quick` `railcni` [ipam](docs/ipam.md) `std::fs::write` `/etc/cni/net.d` \
         `VfSettings` `EPERM`\n",
    )
    .unwrap();
    std::fs::write(root.join("docs/ipam.md"), "nothing here\n").unwrap();
    let t = check_docs(root);
    assert!(t.wrong.is_empty(), "{:?}", t.wrong);
    assert_eq!(
        (t.paths, t.rust, t.names),
        (4, 3, 1),
        "src/hw/, the mod.rs, bench.sh, the link; three Rust paths; VfSettings"
    );
    std::fs::write(
        root.join("docs/ipam.md"),
        "`src/hw/kernel.rs` `vf::settings::put_back` `hw::Hardware::gone` `Error::Gone` `Error::Corrupt` `railcni\ninstall` \
         `scripts/bench.sh --slow` [x](docs/nothing.md) `VfSetting` `scripts/bench.sh --qui`\n\n```sh\nrailcni install  # a fenced block is not a span\n```\n",
    )
    .unwrap();
    let wrong = check_docs(root).wrong;
    for bad in [
        "src/hw/kernel.rs",
        "vf::settings::put_back",
        "hw::Hardware::gone",
        "Error::Gone",
        "Error::Corrupt",
        "railcni install",
        "scripts/bench.sh --slow",
        "(docs/nothing.md)",
        "VfSetting",
        "scripts/bench.sh --qui",
    ] {
        let named = |w: &String| {
            w.contains(&format!("`{bad}`")) || (bad.starts_with('(') && w.contains(bad))
        };
        assert!(wrong.iter().any(named), "{bad} not found in {wrong:?}");
    }
    assert_eq!(wrong.len(), 10, "{wrong:?}");
}
