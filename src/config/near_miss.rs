//! Keys a network config sets that railcni does not read, but one or two
//! edits away from one it does: `mut` for `mtu`, `vlna` for `vlan`. A CNI
//! plugin ignores keys it does not know (a runtime adds its own), so they
//! are never refused; a near miss is almost always a typo, so it is logged
//! (and `railcnictl doctor` lists those in the node's CNI files).

use serde_json::{Map, Value};

/// Top-level keys read elsewhere or set by a runtime: the spec's own, and
/// the logger's (`base::log`). Those the config reads are `RawConf`'s
/// (`raw::keys`), the VF settings' `vf::settings::nad::FIELDS`.
const OTHERS: &[&str] = &[
    "cniVersion",
    "capabilities",
    "args",
    "dns",
    "logFile",
    "logLevel",
];

/// Each key of `conf` that is not read but is close to one that is, with
/// that key: (given, meant).
pub fn near_misses(conf: &Map<String, Value>) -> Vec<(String, &'static str)> {
    let vf_keys = crate::vf::settings::nad::FIELDS
        .iter()
        .flat_map(|f| f.keys.iter().copied());
    let read = super::raw::keys().iter().copied();
    let known: Vec<&'static str> = read.chain(OTHERS.iter().copied()).chain(vf_keys).collect();
    conf.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .filter_map(|k| {
            let (meant, d) = (known.iter())
                .map(|m| (*m, edits(&k.to_ascii_lowercase(), &m.to_ascii_lowercase())))
                .min_by_key(|(_, d)| *d)?;
            let close = if meant.len() <= 4 { 1 } else { 2 };
            (d <= close).then(|| (k.clone(), meant))
        })
        .collect()
}

/// Log each near miss of `conf`, naming the key that was likely meant.
pub fn log_near_misses(conf: &Map<String, Value>) {
    for (given, meant) in near_misses(conf) {
        crate::log_warn!(
            "the config's key {given:?} is not one railcni reads (it is ignored); did you mean {meant:?}?"
        );
    }
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, first) in d[0].iter_mut().enumerate() {
        *first = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn misses(v: Value) -> Vec<(String, &'static str)> {
        near_misses(v.as_object().unwrap())
    }

    #[test]
    fn a_key_one_edit_from_a_known_one_is_named_with_it() {
        let got = misses(json!({"name": "rail1", "mut": 9000, "vlna": 100, "spoofchk": "off"}));
        assert_eq!(
            got,
            [("mut".to_string(), "mtu"), ("vlna".to_string(), "vlan")]
        );
        assert_eq!(misses(json!({"max_tx_rtae": 1}))[0].1, "max_tx_rate");
        // railcni reads `deviceID` as spelt: another case is not read either.
        assert_eq!(
            misses(json!({"deviceId": "x"})),
            [("deviceId".to_string(), "deviceID")]
        );
    }

    #[test]
    fn a_key_far_from_every_known_one_passes_in_silence() {
        assert_eq!(
            misses(json!({"cniVersion": "1.1.0", "myCompanyTag": "x", "foo": 1})),
            []
        );
        assert_eq!(misses(json!({"mtu": 9000, "vlan": 100})), []);
    }
}
