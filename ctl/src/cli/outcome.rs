//! How every command ends: what it found (exit 0 or 1), a usage error
//! (exit 2), and its report printed as JSON or for a person.

use serde::Serialize;

/// What a command found: exit 0, or 1 when a problem was found.
pub enum Outcome {
    Clean,
    Problems,
}

impl Outcome {
    /// Exit 1 when the command found a problem, else 0.
    pub fn found(problems: bool) -> Self {
        if problems {
            Outcome::Problems
        } else {
            Outcome::Clean
        }
    }
}

/// A usage error (exit 2): the command cannot run as asked.
pub struct Usage(pub String);

/// Print a report as JSON (`--json`) or with its human printer.
pub fn emit<T: Serialize>(report: &T, json: bool, human: impl FnOnce(&T)) {
    if json {
        match serde_json::to_string_pretty(report) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("railcnictl: cannot encode the report: {e}"),
        }
    } else {
        human(report);
    }
}
