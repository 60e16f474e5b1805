//! The exposition: families in the order they were first named, each
//! sample kept until a reader's format is known. Two well-kept crates write
//! the two formats readers ask for: `prometheus-client` the OpenMetrics
//! text (Prometheus, when its Accept header offers it), `prometheus` the
//! 0.0.4 text format (node_exporter's textfile collector, curl, promtool,
//! and any scraper that does not ask for OpenMetrics).

use prometheus::proto as text;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// The `Content-Type` of `openmetrics`' text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The `Content-Type` of `text_format`'s text.
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    /// A driver's file that may be a counter or a gauge.
    Unknown,
}

pub type Labels<'a> = &'a [(&'a str, &'a str)];

type LabelSet = Vec<(String, String)>;

#[derive(Debug)]
enum Sample {
    Value(f64),
    /// Per-bucket (not cumulative) counts, the last one `+Inf`'s; sum; count.
    Histogram(Vec<(f64, u64)>, f64, u64),
}

#[derive(Debug)]
struct Family {
    /// As its samples are named (a counter's with `_total`).
    name: String,
    help: String,
    kind: Kind,
    samples: Vec<(LabelSet, Sample)>,
}

impl Family {
    /// As OpenMetrics names the family: a counter's samples add `_total`.
    fn base_name(&self) -> &str {
        match self.kind {
            Kind::Counter => self.name.strip_suffix("_total").unwrap_or(&self.name),
            _ => &self.name,
        }
    }
}

#[derive(Debug, Default)]
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
                    samples: Vec::new(),
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

    /// One sample of a counter, gauge or unknown family.
    pub fn sample(&mut self, name: &str, help: &str, kind: Kind, labels: Labels<'_>, value: f64) {
        let sample = (owned(labels), Sample::Value(value));
        self.family(name, help, kind).samples.push(sample);
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
        let mut below = 0;
        let mut buckets: Vec<(f64, u64)> = bounds
            .iter()
            .zip(cumulative)
            .map(|(le, n)| {
                let in_bucket = n.saturating_sub(below);
                below = *n;
                (*le, in_bucket)
            })
            .collect();
        // prometheus-client writes f64::MAX's bucket as `+Inf`.
        buckets.push((f64::MAX, count.saturating_sub(below)));
        let sample = (owned(labels), Sample::Histogram(buckets, sum, count));
        self.family(name, help, Kind::Histogram)
            .samples
            .push(sample);
    }

    /// The OpenMetrics text (`OPENMETRICS`), as Prometheus scrapes it.
    pub fn openmetrics(self: std::sync::Arc<Self>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Shared(self)));
        let mut out = String::new();
        // Writing to a String fails only if an encoder does, which ours do not.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }

    /// The 0.0.4 text format (`TEXT_FORMAT`).
    pub fn text_format(&self) -> String {
        let families: Vec<text::MetricFamily> = (self.families.iter())
            .filter(|f| !f.samples.is_empty())
            .map(Family::text_family)
            .collect();
        // Fails only on a name the format forbids; ours are fixed or name_part's.
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_else(|e| format!("# cannot encode the exposition: {e}\n"))
    }
}

impl Family {
    /// The family as the `prometheus` crate's text encoder takes it (which
    /// escapes label values itself).
    fn text_family(&self) -> text::MetricFamily {
        let mut family = text::MetricFamily::default();
        family.set_name(self.name.clone());
        family.set_help(self.help.clone());
        family.set_field_type(match self.kind {
            Kind::Counter => text::MetricType::COUNTER,
            Kind::Gauge => text::MetricType::GAUGE,
            Kind::Histogram => text::MetricType::HISTOGRAM,
            // The crate's text encoder writes no `untyped`: a file that may
            // be a counter or a gauge is a gauge there (rate() reads both).
            Kind::Unknown => text::MetricType::GAUGE,
        });
        let metrics = self.samples.iter().map(|(labels, sample)| {
            let pairs = labels.iter().map(|(k, v)| {
                let mut pair = text::LabelPair::default();
                pair.set_name(k.clone());
                pair.set_value(v.clone());
                pair
            });
            let mut m = text::Metric::from_label(pairs.collect());
            match (self.kind, sample) {
                (_, Sample::Histogram(buckets, sum, count)) => {
                    m.set_histogram(text_histogram(buckets, *sum, *count))
                }
                (Kind::Counter, Sample::Value(v)) => {
                    let mut c = text::Counter::default();
                    c.set_value(*v);
                    m.set_counter(c);
                }
                (_, Sample::Value(v)) => {
                    let mut g = text::Gauge::default();
                    g.set_value(*v);
                    m.set_gauge(g);
                }
            }
            m
        });
        family.set_metric(metrics.collect());
        family
    }
}

/// Cumulative buckets, as the 0.0.4 format counts them (its `+Inf` bucket
/// is written from the count).
fn text_histogram(buckets: &[(f64, u64)], sum: f64, count: u64) -> text::Histogram {
    let mut below = 0;
    let cumulative = (buckets.iter())
        .filter(|(le, _)| *le < f64::MAX)
        .map(|(le, n)| {
            below += n;
            let mut b = text::Bucket::default();
            b.set_upper_bound(*le);
            b.set_cumulative_count(below);
            b
        });
    let mut h = text::Histogram::default();
    h.set_bucket(cumulative.collect());
    h.set_sample_sum(sum);
    h.set_sample_count(count);
    h
}

/// The exposition shared by the scrapes that read one pass.
#[derive(Debug)]
struct Shared(std::sync::Arc<Exposition>);

fn owned(labels: Labels<'_>) -> LabelSet {
    labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Label values as prometheus-client takes them: it writes them as given,
/// so they are escaped here (a network is named by whoever wrote the NAD).
fn escaped(labels: &LabelSet) -> LabelSet {
    let escape = |v: &str| {
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    labels.iter().map(|(k, v)| (k.clone(), escape(v))).collect()
}

impl Collector for Shared {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.families.iter().filter(|f| !f.samples.is_empty()) {
            let kind = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
                Kind::Unknown => MetricType::Unknown,
            };
            let mut family = encoder.encode_descriptor(f.base_name(), &f.help, None, kind)?;
            for (labels, sample) in &f.samples {
                let one = Encoded(f.kind, sample);
                one.encode(family.encode_family(&escaped(labels))?)?;
            }
        }
        Ok(())
    }
}

/// One sample as its family's kind writes it.
struct Encoded<'a>(Kind, &'a Sample);

impl EncodeMetric for Encoded<'_> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        type NoExemplar = prometheus_client::encoding::NoLabelSet;
        match (self.0, self.1) {
            (_, Sample::Histogram(buckets, sum, count)) => {
                encoder.encode_histogram::<NoExemplar>(*sum, *count, buckets, None)
            }
            (Kind::Counter, Sample::Value(v)) => match whole(*v) {
                Some(n) if n >= 0 => {
                    encoder.encode_counter::<NoExemplar, u64, u64>(&(n as u64), None)
                }
                _ => encoder.encode_counter::<NoExemplar, f64, f64>(v, None),
            },
            (_, Sample::Value(v)) => match whole(*v) {
                Some(n) => encoder.encode_gauge(&n),
                None => encoder.encode_gauge(v),
            },
        }
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Unknown
    }
}

/// Whole numbers without a fraction, as Prometheus prints them.
fn whole(v: f64) -> Option<i64> {
    (v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15).then_some(v as i64)
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

    fn example() -> Exposition {
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
        e.sample("port_errors", "A file.", Kind::Unknown, &[], 7.0);
        e.histogram(
            "d_seconds",
            "Took.",
            &[("verb", "ADD")],
            (&[0.005, 0.01], &[1, 2]),
            0.012,
            3,
        );
        e
    }

    #[test]
    fn families_are_typed_once_and_values_escaped() {
        let text = std::sync::Arc::new(example()).openmetrics();
        assert_eq!(
            text,
            "# HELP x Calls.\n# TYPE x counter\n\
             x_total{network=\"rail\\\"1\\n\"} 3\nx_total{network=\"a\\\\b\"} 0.5\n\
             # HELP port_errors A file.\n# TYPE port_errors unknown\nport_errors{} 7\n\
             # HELP d_seconds Took.\n# TYPE d_seconds histogram\n\
             d_seconds_sum{verb=\"ADD\"} 0.012\nd_seconds_count{verb=\"ADD\"} 3\n\
             d_seconds_bucket{le=\"0.005\",verb=\"ADD\"} 1\nd_seconds_bucket{le=\"0.01\",verb=\"ADD\"} 2\n\
             d_seconds_bucket{le=\"+Inf\",verb=\"ADD\"} 3\n# EOF\n"
        );
        assert_eq!(name_part("VL15-dropped"), "VL15_dropped");
    }

    #[test]
    fn the_text_format_is_what_promtool_and_node_exporter_read() {
        let text = example().text_format();
        assert_eq!(
            text,
            "# HELP x_total Calls.\n# TYPE x_total counter\n\
             x_total{network=\"rail\\\"1\\n\"} 3\nx_total{network=\"a\\\\b\"} 0.5\n\
             # HELP port_errors A file.\n# TYPE port_errors gauge\nport_errors 7\n\
             # HELP d_seconds Took.\n# TYPE d_seconds histogram\n\
             d_seconds_bucket{verb=\"ADD\",le=\"0.005\"} 1\nd_seconds_bucket{verb=\"ADD\",le=\"0.01\"} 2\n\
             d_seconds_bucket{verb=\"ADD\",le=\"+Inf\"} 3\n\
             d_seconds_sum{verb=\"ADD\"} 0.012\nd_seconds_count{verb=\"ADD\"} 3\n"
        );
    }
}
