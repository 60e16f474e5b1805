//! The glossary (docs/architecture.md, "Words not to use for these") holds
//! in what users read: every string literal of the product code (errors,
//! log lines, help, metric help, and doc comments, which clap makes the
//! commands' help; macro arguments included, test code left out by its
//! attribute) and the prose of README.md and docs/. An
//! attachment is detached, a VF moved home, a setting restored or a VF
//! re-attached; nothing is "given back" or "put back".

use std::path::Path;

use support::rust_source::{product_literals, DocComments};

/// Phrases the glossary names, as they may be spelled.
const NOT_OURS: &[&str] = &[
    "give back",
    "gives back",
    "given back",
    "giving back",
    "gives it back",
    "gives them back",
    "give it back",
    "give them back",
    "put back",
    "puts back",
    "puts it back",
    "put it back",
    "nothing to return",
];

/// The crates' product sources.
const ROOTS: [&str; 5] = ["src", "cni/src", "base/src", "ipam/src", "ctl/src"];

/// The glossary's own line quotes the words it forbids.
const GLOSSARY_LINE: &str = "Words not to use for these";

fn found_in(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    NOT_OURS.iter().copied().find(|p| lower.contains(p))
}

/// Where the glossary's words stand in what users read under `repo`.
fn offences(repo: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for root in ROOTS {
        for path in support::rust_files(&repo.join(root)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for lit in product_literals(&file, DocComments::Included) {
                if let Some(p) = found_in(&lit) {
                    out.push(format!("{}: \"{p}\" in {lit:?}", path.display()));
                }
            }
        }
    }
    let docs = support::markdown_docs(repo);
    for path in docs {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in support::prose_lines(&text) {
            if line.contains(GLOSSARY_LINE) {
                continue;
            }
            if let Some(p) = found_in(line) {
                out.push(format!("{}: \"{p}\" in {line:?}", path.display()));
            }
        }
    }
    out
}

#[test]
fn what_users_read_keeps_the_glossarys_words() {
    let found = offences(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check on a scratch tree: a log line in a macro, a help string and a
/// doc line each found; a comment and a test's string are not user-facing.
#[test]
fn a_word_not_ours_is_found_where_users_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "// a comment may say gives them back\n\
         pub fn f() { log_info!(\"gc gives them back: {}\", 1); }\n\
         pub const HELP: &str = \"the agent puts it back\";\n\
         #[cfg(test)]\nmod tests { const T: &str = \"put back\"; }\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "# R\n").unwrap();
    std::fs::write(
        root.join("docs/a.md"),
        "# A\n\nDEL has nothing to return.\n\n```\nput back\n```\n",
    )
    .unwrap();
    let found = offences(root);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("gives them back") && found[1].contains("puts it back"));
    assert!(found[2].contains("nothing to return"));
}
