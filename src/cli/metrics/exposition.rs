//! The Prometheus text exposition format, version 0.0.4: families in the
//! order they were first named, `# HELP` and `# TYPE` once each, label
//! values escaped. Written here rather than with `prometheus-client`, which
//! writes OpenMetrics only (no `untyped`, which the RDMA counters need, and
//! a `# EOF` line the 0.0.4 content type does not have).

use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Untyped,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Untyped => "untyped",
        }
    }
}

pub type Labels<'a> = &'a [(&'a str, &'a str)];

struct Family {
    name: String,
    help: String,
    kind: Kind,
    lines: Vec<String>,
}

#[derive(Default)]
pub struct Exposition {
    families: Vec<Family>,
}

impl Exposition {
    fn family(&mut self, name: &str, help: &str, kind: Kind) -> &mut Family {
        let at = match self.families.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    help: help.to_string(),
                    kind,
                    lines: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        &mut self.families[at]
    }

    /// Declare a family with no sample yet (it is printed only with one).
    pub fn declare(&mut self, name: &str, help: &str, kind: Kind) {
        self.family(name, help, kind);
    }

    /// One sample of a counter, gauge or untyped family.
    pub fn sample(&mut self, name: &str, help: &str, kind: Kind, labels: Labels<'_>, value: f64) {
        let line = format!("{name}{} {}", render_labels(labels, None), number(value));
        self.family(name, help, kind).lines.push(line);
    }

    /// One histogram: `cumulative[i]` observations at most `bounds[i]`.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: Labels<'_>,
        (bounds, cumulative): (&[f64], &[u64]),
        sum: f64,
        count: u64,
    ) {
        let mut lines: Vec<String> = bounds
            .iter()
            .zip(cumulative)
            .map(|(le, n)| {
                let le = number(*le);
                format!("{name}_bucket{} {n}", render_labels(labels, Some(&le)))
            })
            .collect();
        lines.push(format!(
            "{name}_bucket{} {count}",
            render_labels(labels, Some("+Inf"))
        ));
        lines.push(format!(
            "{name}_sum{} {}",
            render_labels(labels, None),
            number(sum)
        ));
        lines.push(format!(
            "{name}_count{} {count}",
            render_labels(labels, None)
        ));
        self.family(name, help, Kind::Histogram).lines.extend(lines);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in self.families.iter().filter(|f| !f.lines.is_empty()) {
            let help = f.help.replace('\\', "\\\\").replace('\n', "\\n");
            let _ = writeln!(out, "# HELP {} {help}", f.name);
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.word());
            for line in &f.lines {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

fn render_labels(labels: Labels<'_>, le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Whole numbers without a fraction, as Prometheus prints them.
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A metric name part from a file name: `[a-zA-Z0-9_]`, anything else `_`.
pub fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_typed_once_and_values_escaped() {
        let mut e = Exposition::default();
        let help = "Calls.";
        e.sample(
            "x_total",
            help,
            Kind::Counter,
            &[("network", "rail\"1\n")],
            3.0,
        );
        e.sample("x_total", help, Kind::Counter, &[("network", "a\\b")], 0.5);
        e.declare("never", "Nothing.", Kind::Gauge);
        e.histogram(
            "d_seconds",
            "Took.",
            &[("verb", "ADD")],
            (&[0.005, 0.01], &[1, 2]),
            0.012,
            3,
        );
        let text = e.render();
        assert_eq!(
            text,
            "# HELP x_total Calls.\n# TYPE x_total counter\n\
             x_total{network=\"rail\\\"1\\n\"} 3\nx_total{network=\"a\\\\b\"} 0.5\n\
             # HELP d_seconds Took.\n# TYPE d_seconds histogram\n\
             d_seconds_bucket{verb=\"ADD\",le=\"0.005\"} 1\nd_seconds_bucket{verb=\"ADD\",le=\"0.01\"} 2\n\
             d_seconds_bucket{verb=\"ADD\",le=\"+Inf\"} 3\nd_seconds_sum{verb=\"ADD\"} 0.012\n\
             d_seconds_count{verb=\"ADD\"} 3\n"
        );
        assert_eq!(name_part("VL15-dropped"), "VL15_dropped");
    }
}
