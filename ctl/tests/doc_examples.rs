//! Every `railcnictl` command line shown in README.md and docs/ is one the
//! current CLI accepts, so the docs cannot drift from the flags.
//!
//! An example is an inline code span that starts with `railcnictl `, or a
//! line inside a fenced code block that runs `railcnictl`
//! (alone, after `$ `/`# `, or after `ip netns exec NS`), with `\`
//! continuations joined, a trailing `# comment` and anything after a pipe,
//! `&&`, `;` or a redirection cut off. Synopses (a line with `[` or `…`
//! standing for options) are usage, not examples: they are skipped, and
//! the test says how many it skipped.

use std::path::{Path, PathBuf};

fn markdown_files() -> Vec<PathBuf> {
    support::markdown_docs(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// The command lines inside code blocks (``` or ~~~ fenced, or indented),
/// as a Markdown reader sees them, continuations joined.
fn code_lines(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => block = Some(String::new()),
            Event::Text(t) => {
                if let Some(b) = block.as_mut() {
                    b.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(joined(&block.take().unwrap_or_default())),
            _ => {}
        }
    }
    out
}

/// A block's lines, each `\` continuation joined to the next.
fn joined(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = line.trim();
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        out.push(std::mem::take(&mut pending));
    }
    out
}

/// The inline code spans that are railcnictl command lines; a span that
/// wraps a line is one span (its line break a space).
fn inline_spans(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser};
    (Parser::new(text))
        .filter_map(|e| match e {
            Event::Code(span) if span.starts_with("railcnictl ") => Some(span.to_string()),
            _ => None,
        })
        .collect()
}

/// A synopsis: options shown as `[--flag …]`, `[<arg>]`, `[NAME]`, a `|`
/// between alternatives or an ellipsis, not a command to run. A `[` that
/// is part of a value (`[::]:9100`) does not make one.
fn is_synopsis(cmd: &str) -> bool {
    let bracket_opens_an_option = cmd.match_indices('[').any(|(i, _)| {
        cmd[i + 1..]
            .chars()
            .next()
            .is_some_and(|c| c == '-' || c == '<' || c.is_ascii_uppercase())
    });
    bracket_opens_an_option || cmd.contains('…') || cmd.contains("\\|")
}

/// The railcnictl invocation in a shell line, if it has one.
fn invocation(line: &str) -> Option<String> {
    let line = line.trim_start_matches(['$', '#', ' ']);
    let at = line.find("railcnictl ")?;
    let before = line[..at].trim();
    // Only where railcnictl is the command: at the start, or run by `ip netns exec NS`.
    if !(before.is_empty() || before.starts_with("ip netns exec") || before.ends_with("sudo")) {
        return None;
    }
    let mut cmd = &line[at + "railcnictl ".len()..];
    for stop in [" #", "|", "&&", ";", ">", "2>", "<", "`", ")"] {
        if let Some(i) = cmd.find(stop) {
            cmd = &cmd[..i];
        }
    }
    Some(cmd.trim().to_string())
}

#[test]
fn every_documented_command_line_parses() {
    let (mut checked, mut skipped, mut wrong) = (0, 0, Vec::new());
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("a readable doc");
        for line in code_lines(&text).into_iter().chain(inline_spans(&text)) {
            let Some(cmd) = invocation(&line) else {
                continue;
            };
            if is_synopsis(&cmd) || is_synopsis(&line) {
                skipped += 1;
                continue;
            }
            let args = shlex::split(&cmd).unwrap_or_else(|| panic!("unbalanced quotes: {line}"));
            checked += 1;
            // `railcnictl ipam repair` in prose names a command; it must exist.
            let words: Vec<&str> = args.iter().map(String::as_str).collect();
            let is_a_name = words
                .iter()
                .all(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            if is_a_name && railcnictl::cli::names_a_command(&words) {
                continue;
            }
            if let Err(e) = railcnictl::cli::parses(args) {
                let first = e.lines().next().unwrap_or_default().to_string();
                wrong.push(format!("{}: railcnictl {cmd}\n    {first}", file.display()));
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} examples found: is the scan still finding them?"
    );
    assert!(
        wrong.is_empty(),
        "documented command lines the CLI refuses:\n{}",
        wrong.join("\n")
    );
    eprintln!("{checked} documented command lines parse; {skipped} synopses skipped");
}

#[test]
fn the_scan_finds_what_it_should() {
    let md = "text railcnictl status --bogus\n```sh\nrailcnictl plan P --emit csv   # a comment\n\
              ip netns exec n railcnictl gc --apply | head\nrailcnictl agent --listen \\\n  0.0.0.0:1\n```\n\
              ~~~\nrailcnictl status --json\n~~~\n";
    let found: Vec<_> = code_lines(md)
        .iter()
        .chain(&inline_spans("see `railcnictl doctor\n--json` and `ls`"))
        .filter_map(|l| invocation(l))
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        found,
        [
            "plan P --emit csv",
            "gc --apply",
            "agent --listen 0.0.0.0:1",
            "status --json",
            "doctor --json"
        ]
    );
    // A `[` in a value is no synopsis: the line is checked (and refused).
    assert!(!is_synopsis("agent --listen [::]:9100 --bogus"));
    assert!(
        railcnictl::cli::parses(shlex::split("agent --listen [::]:9100 --bogus").unwrap()).is_err()
    );
    assert!(is_synopsis("doctor [--plan PLAN \\| --node-file FILE]"));
    assert!(railcnictl::cli::parses(["status".into(), "--bogus".into()]).is_err());
    assert!(railcnictl::cli::parses(["status".into(), "--json".into()]).is_ok());
    assert!(railcnictl::cli::names_a_command(&["ipam", "repair"]));
    assert!(!railcnictl::cli::names_a_command(&["ipam", "fix"]));
}
