//! A pool with 16k inline allocations is validated once per node: a mark
//! named by the config's digest holds this node's own allocations, read
//! instead of the list on every later call. The mark also holds the config
//! it was made for, byte for byte, and is used only for that same config:
//! two configs whose digests collide are each validated whole.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use super::{check_allocation, config_err, PoolConfig, StaticAllocation};
use crate::error::IpamError;

/// Names a config this node has validated: FNV-1a's mix over 8-byte
/// words, in four lanes that run side by side (a pool of 16k allocations
/// is 1.4 MB, read on every call), folded into one at the end. Only a
/// name: a mark is used for the config it holds, not for its digest.
fn digest(parts: &[&[u8]]) -> u64 {
    use base::fnv::{mix, BASIS};
    let mut lanes = [BASIS, mix(BASIS, 1), mix(BASIS, 2), mix(BASIS, 3)];
    for part in parts {
        let (blocks, rest) = part.as_chunks::<32>();
        for block in blocks {
            let (words, _) = block.as_chunks::<8>();
            for (lane, word) in lanes.iter_mut().zip(words) {
                *lane = mix(*lane, u64::from_le_bytes(*word));
            }
        }
        for b in rest {
            lanes[0] = mix(lanes[0], u64::from(*b));
        }
        lanes[0] = mix(lanes[0], part.len() as u64);
    }
    lanes.into_iter().fold(BASIS, mix)
}

/// A mark's text: this node's allocations as one line of JSON, then the
/// config's parts, each as a line with its length and then its bytes.
fn mark_text(own: &[StaticAllocation], parts: &[&[u8]]) -> Option<Vec<u8>> {
    let mut text = serde_json::to_vec(own).ok()?;
    text.push(b'\n');
    for part in parts {
        text.extend_from_slice(format!("{}\n", part.len()).as_bytes());
        text.extend_from_slice(part);
    }
    Some(text)
}

/// Whether `r` goes on with exactly `want`, which it consumes; read a
/// buffer at a time (a pool's text is 1.4 MB: no copy of it is made).
fn continues_with(r: &mut impl BufRead, mut want: &[u8]) -> bool {
    while !want.is_empty() {
        let Ok(buf) = r.fill_buf() else { return false };
        let n = buf.len().min(want.len());
        if n == 0 || buf[..n] != want[..n] {
            return false;
        }
        r.consume(n);
        want = &want[n..];
    }
    true
}

/// Mark a validated config (`parts`) with this node's own allocations,
/// keeping the latest few marks per network (a node may see several
/// configs of one network while a NAD is updated); best effort: a missing
/// mark only means validating again.
fn remember_validated(
    cache: &Path,
    network: &str,
    marker: &Path,
    own: &[StaticAllocation],
    parts: &[&[u8]],
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
    if let Some(text) = mark_text(own, parts) {
        let _ = base::files::replace_atomic(marker, &text);
    }
}

/// This node's allocations as the mark recorded them, when the mark was
/// made for exactly this config (`None`: no usable mark).
fn recall_validated(marker: &Path, parts: &[&[u8]]) -> Option<Vec<StaticAllocation>> {
    let mut mark = BufReader::with_capacity(64 * 1024, File::open(marker).ok()?);
    let mut own = Vec::new();
    mark.read_until(b'\n', &mut own).ok()?;
    for part in parts {
        let head = format!("{}\n", part.len());
        if !(continues_with(&mut mark, head.as_bytes()) && continues_with(&mut mark, part)) {
            return None;
        }
    }
    if !mark.fill_buf().ok()?.is_empty() {
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
        let marker = cache.join(format!(
            "{}.{:016x}",
            base::files::file_safe(network),
            digest(&parts)
        ));
        if let Some(own) = recall_validated(&marker, &parts) {
            let pool = PoolConfig::parse_with(v, Some(own), false)?;
            for (i, a) in pool.static_allocations.iter().enumerate() {
                check_allocation(
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
        remember_validated(cache, network, &marker, &own, &parts);
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
        format!("{network}.{:016x}", digest(&parts))
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
        // A mark found under another config's name (a digest collision) is
        // not used: that config is validated whole, and its overlap refused.
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
        // The mark's first line is this node's allocations: emptied, a later
        // call finds none, so it read the mark.
        let mark = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let text = std::fs::read(&mark).unwrap();
        let line = text.iter().position(|b| *b == b'\n').unwrap();
        std::fs::write(&mark, [&b"[]"[..], &text[line..]].concat()).unwrap();
        let pool = PoolConfig::parse_split(&v, list, "gpu-1", t.path(), "rail1").unwrap();
        assert!(pool.static_allocations.is_empty(), "the mark was not read");
        // Another node's call is another config: validated and marked anew.
        let other = PoolConfig::parse_split(&v, list, "gpu-2", t.path(), "rail1").unwrap();
        assert!(other.static_allocations.is_empty());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 2);
    }
}
