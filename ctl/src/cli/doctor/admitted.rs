//! Per rail with a namespace rule (`allow.namespaces`): the attachments on
//! the node that the rule, as it is now, would refuse. They keep working
//! (DEL, CHECK and GC never consult it); the finding says who they are.

use super::finding::Finding;
use super::place::Where;
use railcni::state::Record;

pub fn findings(w: &Where, records: &[Record]) -> Vec<Finding> {
    let Ok(file) = &w.expected else {
        return Vec::new();
    };
    let ruled = file
        .rails()
        .filter_map(|(name, rules)| Some((name, rules.allow.as_ref()?.namespaces.as_ref()?)));
    ruled
        .map(|(rail, namespaces)| {
            let id = format!("{rail}/namespaces");
            let expected = format!("pods of {} only", namespaces.join(", "));
            let on_rail: Vec<&Record> = records.iter().filter(|r| &r.network == rail).collect();
            let outside: Vec<String> = (on_rail.iter())
                .filter_map(|r| {
                    let why = railcni::policy::outside_namespace_rule(file, rail, r.pod.as_deref())?;
                    Some(format!("VF {}: {why}", r.pci))
                })
                .collect();
            match outside.is_empty() {
                true => Finding::ok(
                    id,
                    format!("{} attachment(s), each of an admitted namespace", on_rail.len()),
                    &expected,
                ),
                false => Finding::broken(
                    id,
                    outside.join("; "),
                    &expected,
                    format!(
                        "they keep working until their pods end; add their namespaces to rail {rail}'s \
                         allow.namespaces in the plan if they belong there"
                    ),
                ),
            }
        })
        .collect()
}
