//! One link of the doctor's chain and its verdict.

use serde::Serialize;

/// A link of the chain: holds, is broken, or does not apply here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Broken,
    Skipped,
}

impl Verdict {
    pub(super) fn mark(self) -> &'static str {
        match self {
            Verdict::Ok => "✓",
            Verdict::Broken => "✗",
            Verdict::Skipped => "–",
        }
    }

    /// As the metric's `result` label says it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Broken => "broken",
            Verdict::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable name: `kernel/iommu`, `rail1/pf-link`, `cni/railcni`, ...
    pub check: String,
    pub result: Verdict,
    pub found: String,
    pub expected: String,
    /// For a broken link: the one thing to do, naming the command or file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: impl Into<String>, found: impl Into<String>, expected: &str) -> Self {
        Finding::new(check, Verdict::Ok, found, expected, None)
    }

    pub fn skipped(check: impl Into<String>, found: impl Into<String>, expected: &str) -> Self {
        Finding::new(check, Verdict::Skipped, found, expected, None)
    }

    /// Not needed for pods to attach here, but worth knowing: shown as –,
    /// with what to do should it become needed.
    pub fn advice(
        check: impl Into<String>,
        found: impl Into<String>,
        expected: &str,
        fix: impl Into<String>,
    ) -> Self {
        Finding::new(check, Verdict::Skipped, found, expected, Some(fix.into()))
    }

    pub fn broken(
        check: impl Into<String>,
        found: impl Into<String>,
        expected: &str,
        fix: impl Into<String>,
    ) -> Self {
        Finding::new(check, Verdict::Broken, found, expected, Some(fix.into()))
    }

    fn new(
        check: impl Into<String>,
        result: Verdict,
        found: impl Into<String>,
        expected: &str,
        fix: Option<String>,
    ) -> Self {
        Finding {
            check: check.into(),
            result,
            found: found.into(),
            expected: expected.to_string(),
            fix,
        }
    }
}
