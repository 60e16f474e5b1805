//! A pool with 16k inline allocations is validated once per node: a mark
//! named by the config's BLAKE3 holds this node's own allocations, read
//! instead of the list on every later call. A cryptographic digest: no two
//! configs share a mark in practice, so a mark is used for the config its
//! name says, without keeping (and comparing) the config itself.

use std::path::Path;

use serde_json::Value;

use super::{config_err, validate_allocation, PoolConfig, StaticAllocation};
use crate::error::IpamError;

/// Names a config this node has validated: the BLAKE3 of its parts, each
/// after its length (so where one part ends is part of what is hashed).
fn digest(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for part in parts {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().to_hex().to_string()
}

/// A mark's text: the digest it is named by (a file cut short or renamed
/// is not taken for another config's), then this node's allocations as
/// one line of JSON.
fn mark_text(digest: &str, own: &[StaticAllocation]) -> Option<Vec<u8>> {
    let mut text = format!("blake3:{digest}\n").into_bytes();
    text.extend(serde_json::to_vec(own).ok()?);
    text.push(b'\n');
    Some(text)
}

/// Mark a validated config (its `digest`) with this node's own
/// allocations, keeping the latest few marks per network (a node may see
/// several configs of one network while a NAD is updated); best effort: a
/// missing mark only means validating again.
fn remember_validated(
    cache: &Path,
    network: &str,
    marker: &Path,
    digest: &str,
    own: &[StaticAllocation],
) {
    const KEEP: usize = 4;
    if base::files::private_dir(cache).is_err() {
        return;
    }
    let prefix = format!("{}.", base::files::file_safe(network));
    let mut marks: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(cache)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .collect()
        })
        .unwrap_or_default();
    marks.sort();
    let excess = (marks.len() + 1).saturating_sub(KEEP);
    for (_, old) in marks.into_iter().take(excess) {
        let _ = std::fs::remove_file(old);
    }
    if let Some(text) = mark_text(digest, own) {
        let _ = base::files::replace_atomic(marker, &text);
    }
}

/// This node's allocations as the mark for `digest` recorded them (`None`:
/// no usable mark).
fn recall_validated(marker: &Path, digest: &str) -> Option<Vec<StaticAllocation>> {
    let text = std::fs::read(marker).ok()?;
    let (head, own) = text.split_at(text.iter().position(|b| *b == b'\n')? + 1);
    if head != format!("blake3:{digest}\n").as_bytes() {
        return None;
    }
    serde_json::from_slice(own.strip_suffix(b"\n")?).ok()
}

impl PoolConfig {
    /// `v` without its `staticAllocations`, which come as JSON text in
    /// `raw` (a migrated pool may carry 16k of them). A config this node
    /// already validated (its digest marked under `cache`) is not parsed
    /// again: the mark holds this node's allocations. Any other is parsed
    /// and validated whole, then marked.
    pub fn parse_split(
        v: &Value,
        raw: &str,
        node: &str,
        cache: &Path,
        network: &str,
    ) -> Result<Self, IpamError> {
        let config = v.to_string();
        let parts = [config.as_bytes(), raw.as_bytes(), node.as_bytes()];
        let digest = digest(&parts);
        let marker = cache.join(format!("{}.{digest}", base::files::file_safe(network)));
        if let Some(own) = recall_validated(&marker, &digest) {
            let pool = PoolConfig::parse_with(v, Some(own), false)?;
            for (i, a) in pool.static_allocations.iter().enumerate() {
                validate_allocation(
                    &format!("staticAllocations[{i}]"),
                    a.prefix,
                    a.gateway,
                    &pool,
                )?;
            }
            return Ok(pool);
        }
        let all: Vec<StaticAllocation> =
            serde_json::from_str(raw).map_err(|e| config_err("staticAllocations", e))?;
        let pool = PoolConfig::parse_with(v, Some(all), true)?;
        let own: Vec<StaticAllocation> = (pool.static_allocations.iter())
            .filter(|a| a.node_name == node)
            .cloned()
            .collect();
        remember_validated(cache, network, &marker, &digest, &own);
        Ok(PoolConfig {
            static_allocations: own,
            ..pool
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::Reply;
    use serde_json::json;

    /// The mark's file name for a config, as `parse_split` names it.
    fn cache_name(v: &Value, raw: &str, node: &str, network: &str) -> String {
        let config = v.to_string();
        let parts = [config.as_bytes(), raw.as_bytes(), node.as_bytes()];
        format!("{network}.{}", digest(&parts))
    }

    #[test]
    fn the_digest_sees_every_byte_and_where_parts_end() {
        let mut big = vec![b'x'; 1 << 20];
        let whole = digest(&[b"conf", &big]);
        for at in [0, 7, 8, 31, 32, 500_000, (1 << 20) - 1] {
            big[at] = b'y';
            assert_ne!(digest(&[b"conf", &big]), whole, "byte {at}");
            big[at] = b'x';
        }
        assert_eq!(digest(&[b"conf", &big]), whole);
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
    }

    #[test]
    fn a_split_pool_is_validated_once_then_this_nodes_entry_comes_from_the_mark() {
        let t = tempfile::tempdir().unwrap();
        let v = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15"});
        let list = r#"[{"nodeName":"gpu-0","prefix":"172.16.0.0/31"},{"nodeName":"gpu-1","prefix":"172.16.0.2/31","gateway":"172.16.0.3"},
                      {"nodeName":"gpu-10","prefix":"172.16.0.4/31"}]"#;
        let gateway = Some("172.16.0.3".parse().unwrap());
        for _ in 0..2 {
            let pool = PoolConfig::parse_split(&v, list, "gpu-1", t.path(), "rail1").unwrap();
            assert_eq!(pool.static_allocations.len(), 1, "this node's entry");
            assert_eq!(pool.static_allocations[0].gateway, gateway);
        }
        let marks = || {
            std::fs::read_dir(t.path())
                .unwrap()
                .flatten()
                .collect::<Vec<_>>()
        };
        assert_eq!(marks().len(), 1);
        // A mark that no longer reads is a miss: validated whole again.
        std::fs::write(marks()[0].path(), b"{torn").unwrap();
        let pool = PoolConfig::parse_split(&v, list, "gpu-1", t.path(), "rail1").unwrap();
        assert_eq!(pool.static_allocations[0].gateway, gateway);
        assert!(
            PoolConfig::parse_split(&v, list, "gpu-2", t.path(), "rail1")
                .unwrap()
                .static_allocations
                .is_empty()
        );
        // An overlapping list is refused every time: nothing is marked.
        let overlapping = r#"[{"nodeName":"a","prefix":"172.16.0.0/31"},{"nodeName":"b","prefix":"172.16.0.0/31"}]"#;
        for _ in 0..2 {
            let e = PoolConfig::parse_split(&v, overlapping, "a", t.path(), "rail1").unwrap_err();
            assert_eq!(e.code(), 7, "{e}");
        }
        let wrong = r#"[{"nodeName":"a","prefix":"not a prefix"}]"#;
        assert_eq!(
            PoolConfig::parse_split(&v, wrong, "a", t.path(), "rail1")
                .unwrap_err()
                .code(),
            7
        );
        assert_eq!(marks().len(), 2, "only valid configs are marked, per node");
        // A mark found under another config's name (copied or renamed) is
        // not used: its first line names its own digest, so that config is
        // validated whole, and its overlap refused.
        let gpu1 = (marks().into_iter())
            .map(|m| m.path())
            .find(|p| std::fs::read_to_string(p).unwrap().contains("gpu-1"))
            .unwrap();
        let v_overlap = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15"});
        let colliding = cache_name(&v_overlap, overlapping, "a", "rail1");
        std::fs::copy(&gpu1, t.path().join(&colliding)).unwrap();
        let e =
            PoolConfig::parse_split(&v_overlap, overlapping, "a", t.path(), "rail1").unwrap_err();
        assert_eq!(e.code(), 7, "{e}");
        for mark in marks() {
            let mode =
                std::os::unix::fs::PermissionsExt::mode(&mark.metadata().unwrap().permissions());
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_later_call_with_the_same_config_reads_the_mark_not_the_list() {
        let t = tempfile::tempdir().unwrap();
        let v = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15"});
        let list = r#"[{"nodeName":"gpu-1","prefix":"172.16.0.2/31"}]"#;
        let pool = PoolConfig::parse_split(&v, list, "gpu-1", t.path(), "rail1").unwrap();
        assert_eq!(pool.static_allocations.len(), 1);
        // The mark's second line is this node's allocations: emptied, a
        // later call finds none, so it read the mark.
        let mark = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let text = std::fs::read(&mark).unwrap();
        let line = text.iter().position(|b| *b == b'\n').unwrap() + 1;
        std::fs::write(&mark, [&text[..line], &b"[]\n"[..]].concat()).unwrap();
        let pool = PoolConfig::parse_split(&v, list, "gpu-1", t.path(), "rail1").unwrap();
        assert!(pool.static_allocations.is_empty(), "the mark was not read");
        // Another node's call is another config: validated and marked anew.
        let other = PoolConfig::parse_split(&v, list, "gpu-2", t.path(), "rail1").unwrap();
        assert!(other.static_allocations.is_empty());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 2);
    }
}
