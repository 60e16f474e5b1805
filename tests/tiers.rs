//! Each test file is one tier: every test in it carries the same
//! `#[ignore = "<tier>…"]` or none, so a file runs whole for whoever can
//! run it (an ordinary user's `cargo test` runs the files without one and
//! reports the others' tests ignored), and docs/testing.md's table of tiers
//! names that tier and lists the file in its row. A test file is a Cargo
//! test target (`tests/*.rs` of each package, `cri-tests/tests/cri/main.rs`
//! and its modules).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The packages' test directories (each `.rs` directly inside is a
/// target; `cri-tests/tests/cri/` is one target of several files).
const TEST_DIRS: [&str; 4] = ["tests", "ipam/tests", "ctl/tests", "cri-tests/tests/cri"];

/// The tier of an `#[ignore = …]` reason: `root: fake node` of
/// `root: fake node; scripts/test.sh runs it`, `Kubernetes schemas` of
/// `Kubernetes schemas: python3 …`.
fn tier_of(reason: &str) -> String {
    match reason.strip_prefix("root: ") {
        Some(rest) => format!("root: {}", rest.split(';').next().unwrap_or(rest)),
        None => reason.split(':').next().unwrap_or(reason).to_string(),
    }
}

/// Each `#[test]` function of a file (test modules' included), with its
/// ignore reason.
fn tests_of(file: &syn::File) -> Vec<(String, Option<String>)> {
    struct Tests(Vec<(String, Option<String>)>);
    impl<'ast> syn::visit::Visit<'ast> for Tests {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            if f.attrs.iter().any(|a| a.path().is_ident("test")) {
                let reason = f.attrs.iter().find_map(|a| match &a.meta {
                    syn::Meta::NameValue(nv) if nv.path.is_ident("ignore") => match &nv.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => Some(s.value()),
                        _ => None,
                    },
                    syn::Meta::Path(p) if p.is_ident("ignore") => Some(String::new()),
                    _ => None,
                });
                self.0.push((f.sig.ident.to_string(), reason));
            }
            syn::visit::visit_item_fn(self, f);
        }
    }
    let mut tests = Tests(Vec::new());
    syn::visit::Visit::visit_file(&mut tests, file);
    tests.0
}

fn rust_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

/// The rows of the docs' table of tiers: the tier (`fake node`; `(none)`)
/// and the files its last cell names, `tests/{a,b}.rs` spelt out.
fn table(doc: &str) -> Vec<(String, Vec<String>)> {
    doc.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix('|')?.split('|').map(str::trim).collect();
            let tier = cells.first()?.trim_matches('`');
            let files = cells.get(2)?;
            let names = files
                .split('`')
                .skip(1)
                .step_by(2)
                .flat_map(|span| match (span.find('{'), span.find('}')) {
                    (Some(a), Some(b)) => span[a + 1..b]
                        .split(',')
                        .map(|n| format!("{}{n}{}", &span[..a], &span[b + 1..]))
                        .collect(),
                    _ => vec![span.to_string()],
                })
                .collect();
            Some((tier.to_string(), names))
        })
        .filter(|(tier, _)| tier != "tier" && !tier.starts_with("---"))
        .collect()
}

/// What is wrong with the tiers of the test files under `root`, given
/// docs/testing.md's text `doc`; and how many files were read.
fn problems(root: &Path, doc: &str) -> (usize, Vec<String>) {
    let rows = table(doc);
    let (mut read, mut wrong) = (0, Vec::new());
    for dir in TEST_DIRS {
        let files = rust_files_in(&root.join(dir));
        // A directory target (cri-tests) is one file's worth of tests.
        let targets: Vec<Vec<PathBuf>> = if dir.ends_with("/cri") {
            vec![files]
        } else {
            files.into_iter().map(|f| vec![f]).collect()
        };
        for target in targets.into_iter().filter(|t| !t.is_empty()) {
            read += 1;
            let name = target[0].strip_prefix(root).unwrap().display().to_string();
            let mut reasons = BTreeSet::new();
            for path in &target {
                let text = std::fs::read_to_string(path).unwrap();
                let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
                for (test, reason) in tests_of(&file) {
                    if reason.as_deref() == Some("") {
                        wrong.push(format!("{name}: {test} is ignored without naming its tier"));
                    }
                    reasons.insert(reason.map(|r| tier_of(&r)));
                }
            }
            if reasons.len() > 1 {
                let tiers: Vec<String> = (reasons.iter())
                    .map(|r| r.clone().unwrap_or_else(|| "(none)".into()))
                    .collect();
                wrong.push(format!("{name} mixes tiers: {}", tiers.join(", ")));
            }
            // The table names a root tier without its `root: `.
            let tier = match reasons.first() {
                Some(_) if reasons.len() > 1 => continue,
                Some(Some(t)) => t.strip_prefix("root: ").unwrap_or(t),
                Some(None) => "(none)",
                None => continue, // no test in it
            };
            if tier.is_empty() {
                continue; // a bare #[ignore], named above
            }
            let listed_in: Vec<&str> = (rows.iter())
                .filter(|(_, files)| files.iter().any(|f| name.starts_with(f.as_str())))
                .map(|(t, _)| t.as_str())
                .collect();
            if !rows.iter().any(|(t, _)| t == tier) {
                wrong.push(format!(
                    "{name}: tier {tier:?} is not in docs/testing.md's table"
                ));
            } else if listed_in != [tier] {
                wrong.push(format!(
                    "{name} is {tier}, and docs/testing.md's table lists it under {listed_in:?}"
                ));
            }
        }
    }
    (read, wrong)
}

/// The script lines under `root` that run a test target of a tier
/// (`cargo test … --test faults`) without `--include-ignored`, which would
/// run none of its tests and still end in "test result: ok".
fn scripts_skipping_their_tier(root: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    for script in std::fs::read_dir(root.join("scripts"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = script.path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("cargo test")) {
            let Some(target) = line
                .split("--test ")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
            else {
                continue;
            };
            let file = [
                root.join("tests").join(format!("{target}.rs")),
                root.join("cri-tests/tests").join(target).join("main.rs"),
            ]
            .into_iter()
            .find(|f| f.exists());
            let Some(file) = file else { continue };
            let text = std::fs::read_to_string(&file).unwrap();
            let parsed = syn::parse_file(&text).unwrap();
            let of_a_tier = tests_of(&parsed).iter().any(|(_, r)| r.is_some());
            if of_a_tier && !line.contains("--include-ignored") {
                let name = path.strip_prefix(root).unwrap().display();
                wrong.push(format!(
                    "{name}: `{}` runs none of --test {target}'s tests",
                    line.trim()
                ));
            }
        }
    }
    wrong
}

#[test]
fn a_script_that_runs_a_tier_includes_its_ignored_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wrong = scripts_skipping_their_tier(root);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let dir = tempfile::tempdir().unwrap();
    for d in ["scripts", "tests"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    std::fs::write(
        dir.path().join("tests/faults.rs"),
        "#[test]\n#[ignore = \"root: fake node; scripts/test.sh runs it\"]\nfn f() {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("scripts/faults.sh"),
        "cargo test --features fake-hardware --test faults -- --nocapture\n",
    )
    .unwrap();
    assert_eq!(
        scripts_skipping_their_tier(dir.path()).len(),
        1,
        "the scratch script is found"
    );
}

#[test]
fn each_test_file_is_one_tier_that_the_docs_list() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/testing.md")).unwrap();
    let (read, wrong) = problems(root, &doc);
    assert!(
        read >= 40,
        "only {read} test files read: is the scan broken?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// In a scratch tree: a file of one tier and a file of none pass; a file
/// that mixes them, a bare `#[ignore]` and a tier the docs do not list are
/// each named.
#[test]
fn a_file_that_mixes_tiers_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in TEST_DIRS {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let listed =
        "| tier | needs | files |\n|---|---|---|\n| (none) | the tree | `tests/{plan,soak}.rs` |\n\
                  | `fake node` | root | `tests/attach.rs`, `ipam/tests/vm.rs` |\n";
    let root_only =
        "#[test]\n#[ignore = \"root: fake node; scripts/test.sh runs it\"]\nfn a() {}\n";
    std::fs::write(root.join("tests/attach.rs"), root_only).unwrap();
    std::fs::write(
        root.join("tests/plan.rs"),
        "#[test]\nfn b() {}\n#[cfg(test)]\nmod m { #[test]\nfn c() {} }\n",
    )
    .unwrap();
    assert_eq!(problems(root, listed), (2, Vec::<String>::new()));
    std::fs::write(
        root.join("tests/plan.rs"),
        format!("#[test]\nfn b() {{}}\n{root_only}"),
    )
    .unwrap();
    std::fs::write(
        root.join("tests/soak.rs"),
        "#[test]\n#[ignore]\nfn d() {}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("ipam/tests/vm.rs"),
        "#[test]\n#[ignore = \"root: a VM; scripts/test.sh runs it\"]\nfn e() {}\n",
    )
    .unwrap();
    let (read, wrong) = problems(root, listed);
    assert_eq!(read, 4);
    assert_eq!(
        wrong,
        [
            "tests/plan.rs mixes tiers: (none), root: fake node",
            "tests/soak.rs: d is ignored without naming its tier",
            "ipam/tests/vm.rs: tier \"a VM\" is not in docs/testing.md's table",
        ]
    );
    // A file of a listed tier in another tier's row.
    std::fs::write(root.join("tests/plan.rs"), root_only).unwrap();
    std::fs::write(root.join("tests/soak.rs"), "#[test]\nfn d() {}\n").unwrap();
    std::fs::remove_file(root.join("ipam/tests/vm.rs")).unwrap();
    assert_eq!(
        problems(root, listed).1,
        ["tests/plan.rs is fake node, and docs/testing.md's table lists it under [\"(none)\"]"]
    );
}
