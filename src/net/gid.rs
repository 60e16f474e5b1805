//! An RDMA port's GID table as sysfs shows it:
//! `<ports>/<p>/gids/<i>` (8 groups of 4 hex digits), with
//! `gid_attrs/types/<i>` (`RoCE v2`, `IB/RoCE v1`) and
//! `gid_attrs/ndevs/<i>` (the netdev the entry belongs to). The kernel adds
//! a RoCE v2 entry for each address of the netdev, an IPv4 one as
//! `::ffff:a.b.c.d`, some time after the address appears; an unused entry
//! reads as all zeros (and its type cannot be read).

use std::net::{IpAddr, Ipv6Addr};
use std::path::Path;

/// One used entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gid {
    pub index: u32,
    pub gid: Ipv6Addr,
    /// As sysfs says it: `RoCE v2`, `IB/RoCE v1`.
    pub kind: String,
    pub ndev: Option<String>,
}

impl Gid {
    pub fn is_roce_v2(&self) -> bool {
        self.kind == "RoCE v2"
    }

    /// The address this entry stands for (an IPv4-mapped GID as IPv4).
    pub fn address(&self) -> IpAddr {
        match self.gid.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(self.gid),
        }
    }
}

/// The used entries of port `port` under `ports` (a device's `ports/`
/// directory), by index; empty when the port has no table.
pub fn read_table(ports: &Path, port: u32) -> Vec<Gid> {
    let dir = ports.join(port.to_string());
    let Ok(entries) = std::fs::read_dir(dir.join("gids")) else {
        return Vec::new();
    };
    let mut table: Vec<Gid> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|index| {
            let text = std::fs::read_to_string(dir.join("gids").join(index.to_string())).ok()?;
            // Sysfs's form, 8 groups of 4 hex digits, is IPv6 text.
            let gid: Ipv6Addr = text.trim().parse().ok()?;
            if gid.is_unspecified() {
                return None;
            }
            let attr = |what: &str| {
                std::fs::read_to_string(dir.join("gid_attrs").join(what).join(index.to_string()))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            Some(Gid {
                index,
                gid,
                kind: attr("types").unwrap_or_default(),
                ndev: attr("ndevs"),
            })
        })
        .collect();
    table.sort_by_key(|g| g.index);
    table
}

/// The RoCE v2 entry for `addr`, if the kernel has made it.
pub fn roce_v2_index(table: &[Gid], addr: IpAddr) -> Option<u32> {
    table
        .iter()
        .find(|g| g.is_roce_v2() && g.address() == addr)
        .map(|g| g.index)
}

/// How a wait for an attachment's RoCE v2 GIDs ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// Each address's entry, in the order asked.
    Found(Vec<(IpAddr, u32)>),
    /// Time ran out: the addresses without one, and the table as last read.
    Missing {
        missing: Vec<IpAddr>,
        table: Vec<Gid>,
    },
    /// The port's table cannot be read here (no `gids/`).
    NoTable,
}

/// Read the table (`read`: `None` when it cannot be read) until it holds a
/// RoCE v2 entry for every address in `addrs`, or `timeout` passes. The
/// kernel adds them from a work item after the address, usually within a
/// few milliseconds, so the polls start short.
pub fn wait_for(
    addrs: &[IpAddr],
    timeout: std::time::Duration,
    mut read: impl FnMut() -> Option<Vec<Gid>>,
) -> Wait {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(500);
    loop {
        let Some(table) = read() else {
            return Wait::NoTable;
        };
        let found: Vec<_> = addrs
            .iter()
            .filter_map(|a| roce_v2_index(&table, *a).map(|i| (*a, i)))
            .collect();
        if found.len() == addrs.len() {
            return Wait::Found(found);
        }
        if start.elapsed() >= timeout {
            let missing = addrs
                .iter()
                .filter(|a| !found.iter().any(|(f, _)| f == *a))
                .copied()
                .collect();
            return Wait::Missing { missing, table };
        }
        std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

/// The table where it can be read: `None` without a `gids/` directory.
pub fn read_port(ports: &Path, port: u32) -> Option<Vec<Gid>> {
    ports
        .join(port.to_string())
        .join("gids")
        .is_dir()
        .then(|| read_table(ports, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port's table as mlx5 shows it: link-local v1 and v2, then an IPv4
    /// address's pair, an unused entry between.
    fn port(dir: &Path) {
        let p = dir.join("1");
        for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        let entries = [
            (
                0,
                "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2",
                Some("IB/RoCE v1"),
            ),
            (
                1,
                "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2",
                Some("RoCE v2"),
            ),
            (2, "0000:0000:0000:0000:0000:0000:0000:0000", None),
            (
                3,
                "0000:0000:0000:0000:0000:ffff:ac10:0000",
                Some("IB/RoCE v1"),
            ),
            (
                4,
                "0000:0000:0000:0000:0000:ffff:ac10:0000",
                Some("RoCE v2"),
            ),
            (
                5,
                "fd00:0001:0000:0000:0000:0000:0000:0000",
                Some("RoCE v2"),
            ),
        ];
        for (i, gid, kind) in entries {
            std::fs::write(p.join("gids").join(i.to_string()), format!("{gid}\n")).unwrap();
            if let Some(kind) = kind {
                std::fs::write(
                    p.join("gid_attrs/types").join(i.to_string()),
                    format!("{kind}\n"),
                )
                .unwrap();
                std::fs::write(p.join("gid_attrs/ndevs").join(i.to_string()), "net1\n").unwrap();
            }
        }
    }

    #[test]
    fn the_roce_v2_entry_of_each_address_is_found() {
        let t = tempfile::tempdir().unwrap();
        port(t.path());
        let table = read_table(t.path(), 1);
        assert_eq!(
            table.iter().map(|g| g.index).collect::<Vec<_>>(),
            [0, 1, 3, 4, 5],
            "the zero entry is unused"
        );
        assert_eq!(
            roce_v2_index(&table, "172.16.0.0".parse().unwrap()),
            Some(4)
        );
        assert_eq!(roce_v2_index(&table, "fd00:1::".parse().unwrap()), Some(5));
        assert_eq!(roce_v2_index(&table, "172.16.0.2".parse().unwrap()), None);
        assert_eq!(table[2].address(), "172.16.0.0".parse::<IpAddr>().unwrap());
        assert_eq!(table[2].ndev.as_deref(), Some("net1"));
        assert!(read_table(t.path(), 2).is_empty(), "no port 2");
    }

    #[test]
    fn the_wait_ends_when_every_address_has_its_entry_or_time_runs_out() {
        let t = tempfile::tempdir().unwrap();
        port(t.path());
        let v4: IpAddr = "172.16.0.0".parse().unwrap();
        let v6: IpAddr = "fd00:1::".parse().unwrap();
        let long = std::time::Duration::from_secs(5);
        assert_eq!(
            wait_for(&[v4, v6], long, || read_port(t.path(), 1)),
            Wait::Found(vec![(v4, 4), (v6, 5)])
        );
        // An entry that appears on the third read is waited for.
        let mut reads = 0;
        let waited = wait_for(&[v4], long, || {
            reads += 1;
            let mut table = read_port(t.path(), 1)?;
            if reads < 3 {
                table.retain(|g| g.index != 4);
            }
            Some(table)
        });
        assert_eq!((waited, reads), (Wait::Found(vec![(v4, 4)]), 3));
        let other: IpAddr = "172.16.0.2".parse().unwrap();
        let start = std::time::Instant::now();
        match wait_for(&[v4, other], std::time::Duration::from_millis(30), || {
            read_port(t.path(), 1)
        }) {
            Wait::Missing { missing, table } => {
                assert_eq!(missing, [other]);
                assert_eq!(table.len(), 5);
            }
            w => panic!("{w:?}"),
        }
        assert!(start.elapsed() >= std::time::Duration::from_millis(30));
        assert_eq!(
            wait_for(&[v4], long, || read_port(t.path(), 9)),
            Wait::NoTable
        );
    }
}
