//! The strings NCCL and UCX read, in the grammar NCCL parses (NVIDIA/nccl
//! 5067397c, June 2026):
//!
//! - `NCCL_IB_HCA` / `NCCL_SOCKET_IFNAME`: a leading `=` asks for exact
//!   names (`src/transport/net_ib/init.cc` 320–323, `matchIf` in
//!   `src/misc/utils.cc`); without it each entry is a prefix, so `mlx5_1`
//!   also takes `mlx5_10` … and `net1` takes `net10` ….
//! - An HCA entry is `<name>:<port>:<rail>:<plane>`, each part optional
//!   (`parseStringList`, `src/misc/utils.cc`; rail and plane reach
//!   `ncclIbDevs[].railId/planeId` in `init.cc` 436–437, NCCL 2.30+).
//! - The GID: `NCCL_IB_GID_INDEX` defaults to -1, and NCCL then picks one
//!   per HCA (`ncclIbGetGidIndex`, `src/transport/net_ib/connect.cc`
//!   298–): of `NCCL_IB_ADDR_FAMILY` (`envIbAddrFamily`, 101–117, default
//!   `AF_INET`), within `NCCL_IB_ADDR_RANGE` if given (`envIbAddrRange`,
//!   119–157), of RoCE version `NCCL_IB_ROCE_VERSION_NUM` (line 14, default
//!   2), not link-local (`ncclUpdateGidIndex`, 268–296).
//! - `NCCL_NET_MERGE_POLICY=RAIL` merges only HCAs of one rail into a
//!   virtual NIC (`src/graph/topo.cc` 1750–1754).

use std::net::IpAddr;

/// One rail's HCA as NCCL is to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hca<'a> {
    pub name: &'a str,
    pub port: u32,
    /// railcni's rail order among the pod's rails, from 0.
    pub rail: usize,
    /// The plane of a multi-plane rail (`<rail>-p<k>`), else 0.
    pub plane: u8,
}

/// `NCCL_IB_HCA`: exact names with their port, and with `rails` (NCCL
/// 2.30+) each entry's rail and plane; `None` when no rail has an HCA (an
/// empty list would mean every HCA).
pub fn ib_hca(hcas: &[Hca], rails: bool) -> Option<String> {
    let entries: Vec<String> = (hcas.iter())
        .map(|h| match rails {
            true => format!("{}:{}:{}:{}", h.name, h.port, h.rail, h.plane),
            false => format!("{}:{}", h.name, h.port),
        })
        .collect();
    (!entries.is_empty()).then(|| format!("={}", entries.join(",")))
}

/// `NCCL_SOCKET_IFNAME`: the rails' interfaces, exact.
pub fn socket_ifname(ifnames: &[&str]) -> Option<String> {
    (!ifnames.is_empty()).then(|| format!("={}", ifnames.join(",")))
}

/// `UCX_NET_DEVICES`: `<hca>:<port>` (UCX names exact devices).
pub fn ucx_net_devices(hcas: &[Hca]) -> Option<String> {
    let entries: Vec<String> = hcas
        .iter()
        .map(|h| format!("{}:{}", h.name, h.port))
        .collect();
    (!entries.is_empty()).then(|| entries.join(","))
}

/// `NCCL_IB_ADDR_FAMILY` from each rail's first address; `Err` naming the
/// rails when they mix families (one value serves every HCA).
pub fn addr_family(firsts: &[(&str, IpAddr)]) -> Result<Option<&'static str>, String> {
    let family = |a: &IpAddr| if a.is_ipv6() { "AF_INET6" } else { "AF_INET" };
    let Some((_, first)) = firsts.first() else {
        return Ok(None);
    };
    if firsts.iter().all(|(_, a)| family(a) == family(first)) {
        return Ok(Some(family(first)));
    }
    let named: Vec<String> = firsts
        .iter()
        .map(|(i, a)| format!("{i} {}", family(a)))
        .collect();
    Err(named.join(", "))
}

/// The rail id and plane of each network, in the order given: a plane's
/// network is `<rail>-p<k>`; rails are numbered in their first appearance.
pub fn rails_and_planes(networks: &[&str]) -> Vec<(usize, u8)> {
    let mut rails: Vec<&str> = Vec::new();
    networks
        .iter()
        .map(|n| {
            let (rail, plane) = match n.rsplit_once("-p") {
                Some((rail, k)) if !rail.is_empty() => match k.parse::<u8>() {
                    Ok(k) => (rail, k),
                    Err(_) => (*n, 0),
                },
                _ => (*n, 0),
            };
            let id = match rails.iter().position(|r| *r == rail) {
                Some(id) => id,
                None => {
                    rails.push(rail);
                    rails.len() - 1
                }
            };
            (id, plane)
        })
        .collect()
}

/// A NCCL version as `--nccl` names it (`2.30`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NcclVersion(pub u32, pub u32);

impl std::str::FromStr for NcclVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a NCCL version like 2.30");
        let mut parts = s.split('.');
        let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        Ok(NcclVersion(major, minor))
    }
}

impl NcclVersion {
    /// `<hca>:<port>:<rail>:<plane>` entries and `NCCL_NET_MERGE_POLICY`.
    pub fn knows_rails(self) -> bool {
        self >= NcclVersion(2, 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's own selection (`parseStringList`, `matchIf`, `matchPort`):
    /// does `list` (a `NCCL_IB_HCA` value) take device `dev` port `port`?
    fn nccl_takes(list: &str, dev: &str, port: u32) -> bool {
        let (exact, list) = match list.strip_prefix('=') {
            Some(rest) => (true, rest),
            None => (false, list),
        };
        list.split(',').filter(|e| !e.is_empty()).any(|entry| {
            let mut parts = entry.split(':');
            let prefix = parts.next().unwrap_or("");
            let want_port = parts.next().and_then(|p| p.parse::<u32>().ok());
            let name_ok = if exact {
                dev == prefix
            } else {
                dev.starts_with(prefix)
            };
            name_ok && want_port.is_none_or(|p| p == port)
        })
    }

    fn hca(name: &str, port: u32, rail: usize, plane: u8) -> Hca<'_> {
        Hca {
            name,
            port,
            rail,
            plane,
        }
    }

    #[test]
    fn exact_names_keep_mlx5_10_out_where_a_prefix_list_takes_it() {
        let hcas = [hca("mlx5_1", 1, 0, 0), hca("mlx5_7", 1, 1, 0)];
        let list = ib_hca(&hcas, false).unwrap();
        assert_eq!(list, "=mlx5_1:1,mlx5_7:1");
        assert!(nccl_takes(&list, "mlx5_1", 1));
        assert!(
            !nccl_takes(&list, "mlx5_10", 1),
            "exact: mlx5_10 is not the pod's"
        );
        assert!(
            nccl_takes("mlx5_1,mlx5_7", "mlx5_10", 1),
            "the old prefix list took it"
        );
        assert!(!nccl_takes(&list, "mlx5_1", 2), "the port is the VF's");
    }

    #[test]
    fn sixteen_interfaces_each_named_exactly() {
        let names: Vec<String> = (1..=16).map(|i| format!("net{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let ifs = socket_ifname(&refs[..2]).unwrap();
        assert_eq!(ifs, "=net1,net2");
        assert!(!nccl_takes(&ifs, "net10", 1) && !nccl_takes(&ifs, "net16", 1));
        let all = socket_ifname(&refs).unwrap();
        assert!(refs.iter().all(|n| nccl_takes(&all, n, 1)));
    }

    #[test]
    fn rails_and_planes_reach_each_entry_for_nccl_2_30() {
        let networks = ["rail1-p0", "rail1-p1", "rail2-p0", "rail2-p1"];
        let ids = rails_and_planes(&networks);
        assert_eq!(ids, [(0, 0), (0, 1), (1, 0), (1, 1)]);
        let hcas: Vec<Hca> = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
            .iter()
            .zip(&ids)
            .map(|(n, (r, p))| hca(n, 1, *r, *p))
            .collect();
        assert_eq!(
            ib_hca(&hcas, true).unwrap(),
            "=mlx5_0:1:0:0,mlx5_1:1:0:1,mlx5_2:1:1:0,mlx5_3:1:1:1"
        );
        assert_eq!(
            rails_and_planes(&["rail1", "storage-p", "rail2"]),
            [(0, 0), (1, 0), (2, 0)]
        );
    }

    #[test]
    fn no_hca_prints_no_list_and_the_family_follows_the_addresses() {
        assert_eq!(ib_hca(&[], false), None);
        assert_eq!(ucx_net_devices(&[]), None);
        assert_eq!(
            ucx_net_devices(&[hca("mlx5_3", 3, 0, 0)]).unwrap(),
            "mlx5_3:3"
        );
        let v4: IpAddr = "172.16.0.0".parse().unwrap();
        let v6: IpAddr = "fd00:1::1".parse().unwrap();
        assert_eq!(
            addr_family(&[("net1", v4), ("net2", v4)]),
            Ok(Some("AF_INET"))
        );
        assert_eq!(
            addr_family(&[("net1", v6), ("net2", v6)]),
            Ok(Some("AF_INET6"))
        );
        let mixed = addr_family(&[("net1", v4), ("net2", v6)]).unwrap_err();
        assert!(
            mixed.contains("net1 AF_INET") && mixed.contains("net2 AF_INET6"),
            "{mixed}"
        );
        assert!("2.30".parse::<NcclVersion>().unwrap().knows_rails());
        assert!(!"2.29".parse::<NcclVersion>().unwrap().knows_rails());
        assert!("two".parse::<NcclVersion>().is_err());
    }
}
