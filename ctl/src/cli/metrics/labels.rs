//! Label values the metric families share.

use railcni::state::Record;

/// `namespace/name` of the record's pod, else its container ID.
pub(super) fn pod_label(r: &Record) -> String {
    r.pod.clone().unwrap_or_else(|| r.container_id.clone())
}
