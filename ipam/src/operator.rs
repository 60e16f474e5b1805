//! What the operator commands do to lease files without a pool config:
//! list every store, release one lease, rebuild a damaged file.

use base::Settings;

use crate::allocator::{now_unix, release_from, Released};
use crate::error::IpamError;
use crate::store::{self, Lease, LeaseStore, Leases};

/// Release a lease from `network`'s store on this node without its pool
/// config: for a stale attachment of another network.
pub fn release_lease(
    settings: &Settings,
    network: &str,
    container_id: &str,
    ifname: &str,
) -> Result<Released, IpamError> {
    let store = LeaseStore::new(&settings.ipam_dir(), network, settings.lock_timeout);
    release_from(&store, container_id, ifname)
}

/// One network's lease file on this node, as read.
#[derive(Debug)]
pub struct StoreView {
    pub network: String,
    pub path: std::path::PathBuf,
    pub leases: Result<Leases, IpamError>,
}

/// Every lease file under the state dir, sorted by network.
pub fn stores(settings: &Settings) -> Vec<StoreView> {
    let dir = settings.ipam_dir();
    let mut out: Vec<StoreView> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let network = store::network_of(&name)?;
            let store = LeaseStore::new(&dir, &network, settings.lock_timeout);
            let leases = store.read();
            Some(StoreView {
                network,
                path: store.path,
                leases,
            })
        })
        .collect();
    out.sort_by(|a, b| a.network.cmp(&b.network));
    out
}

/// What `repair` did.
#[derive(Debug)]
pub struct Repaired {
    /// Where the damaged file was kept, if there was one.
    pub kept: Option<std::path::PathBuf>,
    pub restored: usize,
}

/// Rebuild `network`'s lease file from `leases` (what the caller knows is
/// live), keeping a damaged or unreadable file beside it as
/// `<file>.corrupt-<unix time>`. Refuses (code 11) while another process
/// holds the store's lock; two leases of one address are refused (code 7).
pub fn repair(
    settings: &Settings,
    network: &str,
    leases: Vec<Lease>,
) -> Result<Repaired, IpamError> {
    let mut seen = std::collections::HashSet::new();
    for l in &leases {
        if !seen.insert(l.address) {
            return Err(IpamError::config(
                "leases",
                format!(
                    "{} would be leased twice; resolve the attachments first",
                    l.address
                ),
            ));
        }
    }
    let store = LeaseStore::new(&settings.ipam_dir(), network, std::time::Duration::ZERO);
    let locked = store.lock()?;
    let old = store.read();
    let kept = match (&old, store.path.exists()) {
        (Err(_), true) => {
            let kept = store.path.with_file_name(format!(
                "{}.corrupt-{}",
                store
                    .path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("leases"),
                now_unix()
            ));
            std::fs::copy(&store.path, &kept).map_err(|e| {
                IpamError::io(
                    format!("cannot keep {} as {}", store.path.display(), kept.display()),
                    &e,
                )
            })?;
            Some(kept)
        }
        _ => None,
    };
    let restored = leases.len();
    let old = old.ok();
    let data = Leases {
        last_allocated: leases.last().map(|l| l.address),
        last_allocated6: leases.iter().rev().find_map(|l| l.address6),
        pool: old.as_ref().and_then(|d| d.pool.clone()),
        pool6: old.and_then(|d| d.pool6),
        leases,
    };
    locked.write(&data)?;
    Ok(Repaired { kept, restored })
}
