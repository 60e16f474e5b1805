//! What an attachment record or a lease says, as the day-2 commands show
//! it: the pod's name, whether its holder can be judged alive, the
//! addresses ADD gave. `status`, `gc`, `repair` and `nccl-env` share these.

use base::liveness::Proof;
use railcni::state::Record;

/// `namespace/name`, when both are known.
pub fn pod_of(namespace: Option<&str>, name: Option<&str>) -> Option<String> {
    Some(format!("{}/{}", namespace?, name?))
}

/// `Some(alive)` when the proof can tell, `None` when it carries none.
pub fn judged(proof: &Proof, boot: Option<&str>) -> Option<bool> {
    if proof.netns_id.is_none() && proof.boot_id.is_none() {
        return None;
    }
    Some(proof.gone(boot).is_none())
}

/// The first address of the ADD result the record kept.
pub fn address_of(r: &Record) -> Option<String> {
    addresses_of(r).first().map(ToString::to_string)
}

/// Every address of the ADD result the record kept.
pub fn addresses_of(r: &Record) -> Vec<ipnet::IpNet> {
    r.result
        .as_ref()
        .map(|res| res.ips.iter().map(|ip| ip.address).collect())
        .unwrap_or_default()
}
