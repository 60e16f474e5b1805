//! Leasing addresses: a network's pool on this node loaded, then allocate,
//! release, check and gc against its lease file, as the CNI verbs need.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::config::{NodePrefixes, PoolConfig};
use crate::error::IpamError;
use crate::master;
use crate::pool::{self, NodePool};
use crate::store::{Lease, LeaseStore, Leases, PoolInfo};
use base::liveness::{Gone, Proof};
use base::node_file::NodeFile;
use base::Settings;
use cni::{CniResult, IpConfig, Route};

/// Who holds an address: the CNI attachment key plus the pod, when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    pub container_id: String,
    pub ifname: String,
    pub pod_namespace: Option<String>,
    pub pod_name: Option<String>,
    pub pod_uid: Option<String>,
    /// The pod's network namespace, which proves the holder alive.
    pub netns: Option<std::path::PathBuf>,
    /// The namespace's identity and cookie when the caller holds it open
    /// (ADD), so the proof names it even if its path went away meanwhile.
    pub netns_held: base::liveness::Held,
}

impl Holder {
    /// The holder a CNI request names.
    pub fn of(env: &cni::Env) -> Self {
        Holder {
            container_id: env.container_id.clone(),
            ifname: env.ifname.clone(),
            pod_namespace: env.args.pod_namespace.clone(),
            pod_name: env.args.pod_name.clone(),
            pod_uid: env.args.pod_uid.clone(),
            netns: env.netns.clone(),
            netns_held: Default::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatedIp {
    pub address: IpNet,
    pub gateway: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolRoute {
    pub dst: IpNet,
    pub gw: Option<IpAddr>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allocation {
    pub ips: Vec<AllocatedIp>,
    pub routes: Vec<PoolRoute>,
    /// Leases of provably gone holders released to make room, in words.
    pub reclaimed: Vec<String>,
}

impl Allocation {
    /// The IPAM result: `ips` and `routes`, no `interfaces`.
    pub fn to_result(&self) -> CniResult {
        CniResult {
            ips: self
                .ips
                .iter()
                .map(|ip| IpConfig {
                    address: ip.address,
                    gateway: ip.gateway,
                    interface: None,
                })
                .collect(),
            routes: self
                .routes
                .iter()
                .map(|r| Route::via(r.dst, r.gw))
                .collect(),
            ..CniResult::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    Released(IpAddr),
    NotHeld,
    /// The lease file cannot be read; DEL still succeeds and logs this.
    StoreUnreadable(String),
}

/// One network's pool on this node, with its lease store.
pub struct Ipam {
    pool: NodePool,
    config: PoolConfig,
    /// A dual-stack rail's IPv6 pool on this node.
    pool6: Option<NodePool>,
    store: LeaseStore,
    /// This boot's id: leases from another boot are dead.
    boot_id: Option<String>,
}

pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Ipam {
    /// The pool of `network` with the node file at `settings`' path.
    pub fn load(
        network: &str,
        ipam_conf: &serde_json::Value,
        settings: &Settings,
    ) -> Result<Self, IpamError> {
        let node_file = NodeFile::load(&settings.node_config)?;
        Ipam::load_with(
            network,
            ipam_conf,
            None,
            settings,
            &node_file.prefixes(),
            None,
        )
    }

    /// The pool of `network` on this node, from the node file's prefixes:
    /// for the VF at `device_id` (which `matchMasterSubnet` needs: the
    /// node's prefix is its PF's subnet), with the config's
    /// `staticAllocations` as the JSON text it came as in `statics` (see
    /// `railcni_ipam::inline`).
    pub fn load_with(
        network: &str,
        ipam_conf: &serde_json::Value,
        statics: Option<&str>,
        settings: &Settings,
        prefixes: &NodePrefixes,
        device_id: Option<&str>,
    ) -> Result<Self, IpamError> {
        let node = prefixes.node_name(settings).ok_or_else(|| {
            IpamError::config(
                "node file",
                "cannot tell the node name: set RAILCNI_NODE_NAME or nodeName in the node file",
            )
        })?;
        let config = match statics {
            Some(raw) => {
                let cache = settings.ipam_dir().join("validated");
                PoolConfig::parse_split(ipam_conf, raw, &node, &cache, network)?
            }
            None => PoolConfig::parse(ipam_conf)?,
        };
        let master = match (config.match_master_subnet, device_id) {
            (false, _) => None,
            (true, Some(pci)) => Some(master::Master::of_vf(&settings.sysfs_root, pci)?),
            (true, None) => {
                return Err(IpamError::config(
                    "deviceID",
                    "matchMasterSubnet finds the PF from the VF: the config needs deviceID (Multus sets it)",
                ))
            }
        };
        let pool = match &master {
            Some(m) => NodePool::from_master(network, &node, &config, prefixes, m)?,
            None => NodePool::resolve(network, &node, &config, prefixes)?,
        };
        let pool6 = match &config.ipv6 {
            Some(side) => Some(NodePool::resolve(
                network,
                &node,
                side,
                &prefixes.ipv6_side(),
            )?),
            None => None,
        };
        Ok(Ipam {
            store: LeaseStore::new(&settings.ipam_dir(), network, settings.lock_timeout),
            pool,
            pool6,
            config,
            boot_id: settings.boot_id(),
        })
    }

    pub fn store_path(&self) -> &std::path::Path {
        &self.store.path
    }

    fn allocation(&self, address: IpAddr, address6: Option<IpAddr>) -> Allocation {
        let mut a = Allocation::default();
        let sides = [(Some(address), &self.pool, &self.config)]
            .into_iter()
            .chain(
                self.pool6
                    .iter()
                    .zip(self.config.ipv6.as_deref())
                    .map(|(p, c)| (address6, p, c)),
            );
        for (ip, pool, config) in sides {
            let Some(ip) = ip else { continue };
            let address = IpNet::new(ip, config.address_len(&pool.prefix)).unwrap_or(pool.prefix);
            a.ips.push(AllocatedIp {
                address,
                gateway: pool.gateway,
            });
            // The address's own subnet is on-link (a shared subnet's cidr):
            // a route to it via the gateway would clash with the connected
            // route any main plugin's kernel makes for the address (EEXIST).
            a.routes.extend(config.routes.iter().map(|r| PoolRoute {
                dst: r.dst,
                gw: pool.gateway.filter(|_| r.dst != address.trunc()),
            }));
        }
        a
    }

    /// Lease an address to `holder` (the same one again if it already has
    /// one). When the pool is full or the requested address is taken, the
    /// leases of provably gone holders are released first (see `Proof`).
    pub fn allocate(&self, holder: &Holder, requested: &[IpAddr]) -> Result<Allocation, IpamError> {
        self.allocate_keeping(holder, requested, &|_, _| false)
    }

    /// `allocate`, never reclaiming within this boot a lease `claimed`
    /// vouches for (container ID, ifname): a namespace path that is gone
    /// proves nothing while something else (the plugin's attachment record,
    /// its VF not home) still holds the address.
    ///
    /// Whether a gone holder's lease may go is judged with the lease file
    /// unlocked (`claimed` lists records, walks `/proc` and asks netlink),
    /// then only leases the file still holds unchanged are dropped under
    /// the lock: the lock is held for the file's work alone.
    pub fn allocate_keeping(
        &self,
        holder: &Holder,
        requested: &[IpAddr],
        claimed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<Allocation, IpamError> {
        let mut judged: Option<Vec<Dead>> = None;
        loop {
            let locked = self.store.lock()?;
            let mut data = locked.read()?;
            self.validate_same_prefix(&data)?;
            if let Some(l) = data
                .leases
                .iter()
                .find(|l| l.is_for(&holder.container_id, &holder.ifname))
            {
                return Ok(self.allocation(l.address, l.address6));
            }
            let pick = |data: &Leases| match requested.first() {
                Some(ip) => self.validate_requested(*ip, data),
                None => self.next_free(data),
            };
            let mut reclaimed = Vec::new();
            let address = match (pick(&data), &judged) {
                (Err(IpamError::Exhausted(_) | IpamError::AddressUnavailable(_)), None) => {
                    // Judge outside the lock, then look again under it.
                    drop(locked);
                    judged = Some(self.judge_dead(&self.store.read()?, claimed));
                    continue;
                }
                (
                    Err(e @ (IpamError::Exhausted(_) | IpamError::AddressUnavailable(_))),
                    Some(dead),
                ) => {
                    reclaimed = drop_judged(&mut data, dead);
                    if reclaimed.is_empty() {
                        return Err(e);
                    }
                    pick(&data)?
                }
                (other, _) => other?,
            };
            return self.lease_new(locked, data, holder, address, reclaimed);
        }
    }

    /// Write `holder`'s lease of `address` (and the next free IPv6 address
    /// on a dual-stack rail) under the lock.
    fn lease_new(
        &self,
        locked: crate::store::Locked<'_>,
        mut data: Leases,
        holder: &Holder,
        address: IpAddr,
        reclaimed: Vec<String>,
    ) -> Result<Allocation, IpamError> {
        let address6 = match &self.pool6 {
            Some(pool6) => Some(next_free_in(pool6, data.last_allocated6, &data, |l| {
                l.address6
            })?),
            None => None,
        };
        data.leases.push(self.lease_of(holder, address, address6));
        data.last_allocated = Some(address);
        data.pool = Some(pool_info(&self.pool));
        if let Some(pool6) = &self.pool6 {
            data.last_allocated6 = address6;
            data.pool6 = Some(pool_info(pool6));
        }
        locked.write(&data)?;
        let mut allocation = self.allocation(address, address6);
        allocation.reclaimed = reclaimed;
        Ok(allocation)
    }

    /// `holder`'s new lease, with the proof of its holder's namespace.
    fn lease_of(&self, holder: &Holder, address: IpAddr, address6: Option<IpAddr>) -> Lease {
        Lease {
            container_id: holder.container_id.clone(),
            ifname: holder.ifname.clone(),
            address,
            address6,
            pod_namespace: holder.pod_namespace.clone(),
            pod_name: holder.pod_name.clone(),
            pod_uid: holder.pod_uid.clone(),
            allocated_unix: now_unix(),
            proof: Proof::held(
                holder.netns.as_deref(),
                holder.netns_held,
                self.boot_id.clone(),
            ),
        }
    }

    /// A node's prefix never moves under live leases: a config that now
    /// computes another prefix (a node list edited, a node file changed)
    /// fails ADD instead of handing out addresses from a new range.
    fn validate_same_prefix(&self, data: &Leases) -> Result<(), IpamError> {
        let moved6 = self.pool6.as_ref().and_then(|p6| {
            data.pool6
                .as_ref()
                .filter(|was| was.prefix != p6.prefix)
                .map(|was| (was, p6))
        });
        if let (Some((was, now)), false) = (moved6, data.leases.is_empty()) {
            return Err(IpamError::config(
                "ipam.ipv6",
                format!(
                    "network {} on node {} has {} lease(s) from {}, but the config now gives this node {}; \
                     restore the node's IPv6 allocation or drain the node first",
                    now.network,
                    now.node,
                    data.leases.len(),
                    was.prefix,
                    now.prefix
                ),
            ));
        }
        match &data.pool {
            Some(was) if was.prefix != self.pool.prefix && !data.leases.is_empty() => {
                Err(IpamError::config(
                    "ipam",
                    format!(
                        "network {} on node {} has {} lease(s) from {}, but the config now gives this node {}; \
                         restore the node's allocation (staticAllocations, the node file) or drain the node first",
                        self.pool.network,
                        self.pool.node,
                        data.leases.len(),
                        was.prefix,
                        self.pool.prefix
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Release every lease whose holder is provably gone; what was released, in words.
    pub fn reclaim_dead(&self) -> Result<Vec<String>, IpamError> {
        self.reclaim_dead_keeping(&|_, _| false)
    }

    /// `reclaim_dead`, keeping what `claimed` vouches for (judged with
    /// the file unlocked; see `allocate_keeping`).
    pub fn reclaim_dead_keeping(
        &self,
        claimed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<Vec<String>, IpamError> {
        let dead = self.judge_dead(&self.store.read()?, claimed);
        if dead.is_empty() {
            return Ok(Vec::new());
        }
        let locked = self.store.lock()?;
        let mut data = locked.read()?;
        let reclaimed = drop_judged(&mut data, &dead);
        if !reclaimed.is_empty() {
            locked.write(&data)?;
        }
        Ok(reclaimed)
    }

    /// The leases of `data` whose holders are provably gone and that
    /// `claimed` does not vouch for (a lease from an earlier boot goes
    /// whatever it says): decided with the lease file unlocked.
    fn judge_dead(&self, data: &Leases, claimed: &dyn Fn(&str, &str) -> bool) -> Vec<Dead> {
        let boot = self.boot_id.as_deref();
        (data.leases.iter())
            .filter_map(|l| {
                let why = l.proof.gone(boot)?;
                let kept = why != Gone::EarlierBoot && claimed(&l.container_id, &l.ifname);
                (!kept).then(|| Dead {
                    lease: l.clone(),
                    why: format!("{}: {why}", describe(l)),
                })
            })
            .collect()
    }

    fn validate_requested(&self, ip: IpAddr, data: &Leases) -> Result<IpAddr, IpamError> {
        let p = &self.pool;
        if !p.contains(&ip) {
            return Err(IpamError::AddressUnavailable(format!(
                "requested {ip} is outside {} of node {} on {}",
                p.prefix, p.node, p.network
            )));
        }
        if !p.usable.contains(&ip) {
            return Err(IpamError::AddressUnavailable(format!(
                "requested {ip} is the gateway, excluded or reserved in {}",
                p.prefix
            )));
        }
        if let Some(l) = data.leases.iter().find(|l| l.address == ip) {
            return Err(IpamError::AddressUnavailable(format!(
                "requested {ip} is leased to {}",
                describe(l)
            )));
        }
        Ok(ip)
    }

    fn next_free(&self, data: &Leases) -> Result<IpAddr, IpamError> {
        next_free_in(&self.pool, data.last_allocated, data, |l| Some(l.address))
    }

    pub fn release(&self, container_id: &str, ifname: &str) -> Result<Released, IpamError> {
        release_from(&self.store, container_id, ifname)
    }

    pub fn check(&self, container_id: &str, ifname: &str) -> Result<Allocation, IpamError> {
        let data = self.store.read()?;
        data.leases
            .iter()
            .find(|l| l.is_for(container_id, ifname))
            .map(|l| self.allocation(l.address, l.address6))
            .ok_or_else(|| {
                IpamError::NoLease(format!(
                    "no lease for {container_id}/{ifname} on {}",
                    self.pool.network
                ))
            })
    }

    /// Release every lease whose attachment is not in `valid`; returns them.
    pub fn gc(&self, valid: &[(String, String)]) -> Result<Vec<IpAddr>, IpamError> {
        let locked = self.store.lock()?;
        let mut data = locked.read()?;
        let (keep, drop): (Vec<Lease>, Vec<Lease>) = data
            .leases
            .into_iter()
            .partition(|l| valid.iter().any(|(c, i)| l.is_for(c, i)));
        data.leases = keep;
        if !drop.is_empty() {
            locked.write(&data)?;
        }
        Ok(drop.into_iter().map(|l| l.address).collect())
    }

    /// Can this IPAM serve ADDs, as far as its own part goes? The pool
    /// resolved (`load`), the lease file reads and its prefix is the pool's.
    /// A pool whose addresses are all held by live attachments is a rail in
    /// use as planned (a per-node /31 and its one pod), not a fault: the
    /// CNI spec's STATUS is about the plugin's readiness, and containerd
    /// marks the node's network not ready when it fails.
    pub fn status(&self) -> Result<(), IpamError> {
        let data = self.store.read()?;
        self.validate_same_prefix(&data)
    }
}

/// A lease judged dead with the file unlocked, and why.
struct Dead {
    lease: Lease,
    why: String,
}

/// Drop from `data` (read under the lock) each judged lease the file still
/// holds unchanged; what was dropped, in words. A lease taken again or
/// re-proved meanwhile differs and stays.
fn drop_judged(data: &mut Leases, dead: &[Dead]) -> Vec<String> {
    let mut reclaimed = Vec::new();
    data.leases
        .retain(|l| match dead.iter().find(|d| d.lease == *l) {
            Some(d) => {
                reclaimed.push(d.why.clone());
                false
            }
            None => true,
        });
    reclaimed
}

/// Round-robin from the last allocation, as host-local does, so a freed
/// address is reused last (peers' neighbour caches may still point at it).
/// `held` is the lease's address on this pool's side. Every address looked
/// at that is not free is a lease, so a pass looks at no more than twice
/// the leases: a /64 with a few leases costs what a /31 does.
fn next_free_in(
    pool: &NodePool,
    last: Option<IpAddr>,
    data: &Leases,
    held: impl Fn(&Lease) -> Option<IpAddr>,
) -> Result<IpAddr, IpamError> {
    let usable = &pool.usable;
    let taken: HashSet<IpAddr> = (data.leases.iter())
        .filter_map(&held)
        .filter(|ip| usable.contains(ip))
        .collect();
    let after_last = last
        .filter(|l| pool.contains(l))
        .and_then(|l| usable.from(l).find(|ip| *ip != l));
    let free = (after_last.into_iter().flat_map(|s| usable.from(s)))
        .chain(usable.iter())
        .take(2 * taken.len() + 2)
        .find(|ip| !taken.contains(ip));
    free.ok_or_else(|| {
        let holders: Vec<String> = data
            .leases
            .iter()
            .filter(|l| held(l).is_some_and(|ip| pool.contains(&ip)))
            .map(describe)
            .collect();
        IpamError::Exhausted(format!(
            "network {} on node {} ({}) is exhausted: {} of {} addresses leased: {}",
            pool.network,
            pool.node,
            pool.prefix,
            holders.len(),
            usable.count(),
            holders.join(", ")
        ))
    })
}

fn pool_info(pool: &NodePool) -> PoolInfo {
    PoolInfo {
        network: pool.network.clone(),
        node: pool.node.clone(),
        prefix: pool.prefix,
        gateway: pool.gateway,
        capacity: usize::try_from(pool.usable.count()).unwrap_or(usize::MAX),
        source: match &pool.source {
            pool::Source::Pf(name) => Some(format!("pf {name}")),
            _ => None,
        },
    }
}

fn describe(l: &Lease) -> String {
    let pod = match (&l.pod_namespace, &l.pod_name) {
        (Some(ns), Some(n)) => format!("{ns}/{n} "),
        _ => String::new(),
    };
    let v6 = l.address6.map(|a| format!(", {a}")).unwrap_or_default();
    format!("{}{v6} → {pod}({} {})", l.address, l.container_id, l.ifname)
}

/// Release one attachment's lease from a store.
pub(crate) fn release_from(
    store: &LeaseStore,
    container_id: &str,
    ifname: &str,
) -> Result<Released, IpamError> {
    let locked = match store.lock() {
        Ok(locked) => locked,
        // A lock that cannot be taken (a read-only state dir: the root
        // filesystem remounted read-only) must not fail a DEL that has
        // nothing to release: nothing held, nothing to write. Only the
        // holder's own ADD could add its lease, never run beside its DEL.
        Err(e @ IpamError::Spec(cni::Error::Io(_))) => {
            let held = |d: &Leases| d.leases.iter().any(|l| l.is_for(container_id, ifname));
            return match store.read() {
                Ok(d) if !held(&d) => Ok(Released::NotHeld),
                _ => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    let mut data = match locked.read() {
        Ok(d) => d,
        Err(e @ IpamError::Corrupt(_)) => return Ok(Released::StoreUnreadable(e.to_string())),
        Err(e) => return Err(e),
    };
    let Some(i) = data
        .leases
        .iter()
        .position(|l| l.is_for(container_id, ifname))
    else {
        return Ok(Released::NotHeld);
    };
    let lease = data.leases.remove(i);
    locked.write(&data)?;
    Ok(Released::Released(lease.address))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{repair, stores};
    use cni::Reply;
    use serde_json::json;

    fn ipam(dir: &std::path::Path, conf: serde_json::Value) -> Ipam {
        let settings = Settings {
            state_dir: dir.to_path_buf(),
            node_name: Some("gpu-0".into()),
            node_config: dir.join("none.json"),
            ..Settings::default()
        };
        Ipam::load("rail1", &conf, &settings).unwrap()
    }

    fn holder(c: &str) -> Holder {
        Holder {
            container_id: c.into(),
            ifname: "net1".into(),
            pod_namespace: Some("ml".into()),
            pod_name: Some(format!("pod-{c}")),
            pod_uid: None,
            netns: None,
            netns_held: Default::default(),
        }
    }

    #[test]
    fn a_dual_stack_rail_leases_both_families_in_one_lease() {
        let t = tempfile::tempdir().unwrap();
        let conf = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "routes": [{"dst": "172.16.0.0/12"}],
                          "ipv6": {"cidr": "fd00:16::/48", "perNodePrefix": 127, "gatewayIndex": 1, "routes": [{"dst": "fd00::/16"}]},
                          "nodes": {"gpu-0": 0, "gpu-1": 1}});
        let i = ipam(t.path(), conf);
        let a = i.allocate(&holder("c1"), &[]).unwrap();
        let shown: Vec<String> = a
            .ips
            .iter()
            .map(|ip| format!("{} via {:?}", ip.address, ip.gateway))
            .collect();
        assert_eq!(
            shown,
            [
                "172.16.0.0/31 via Some(172.16.0.1)",
                "fd00:16::/127 via Some(fd00:16::1)"
            ]
        );
        let routes: Vec<String> = a
            .routes
            .iter()
            .map(|r| format!("{} via {:?}", r.dst, r.gw))
            .collect();
        assert_eq!(
            routes,
            [
                "172.16.0.0/12 via Some(172.16.0.1)",
                "fd00::/16 via Some(fd00:16::1)"
            ]
        );
        assert_eq!(
            i.check("c1", "net1").unwrap().ips.len(),
            2,
            "CHECK sees both"
        );
        let data = i.store.read().unwrap();
        assert_eq!(data.leases.len(), 1, "one lease holds both");
        assert_eq!(data.leases[0].address6, Some("fd00:16::".parse().unwrap()));
        assert_eq!(
            data.pool6.as_ref().map(|p| p.prefix.to_string()).as_deref(),
            Some("fd00:16::/127")
        );
        assert_eq!(
            i.release("c1", "net1").unwrap(),
            Released::Released("172.16.0.0".parse().unwrap())
        );
        assert!(i.store.read().unwrap().leases.is_empty(), "both released");
        let e =
            PoolConfig::parse(&json!({"cidr": "172.16.0.0/15", "ipv6": {"perNodePrefix": 127}}))
                .unwrap_err();
        assert!(e.to_string().contains("ipam.ipv6.cidr"), "{e}");
        let e = PoolConfig::parse(&json!({"cidr": "fd00::/48", "ipv6": {"cidr": "fd01::/48"}}))
            .unwrap_err();
        assert!(e.to_string().contains("ipam.ipv6"), "{e}");
    }

    #[test]
    fn slash_31_allocation_gateway_routes_idempotence_exhaustion() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"], "routes": [{"dst": "172.16.0.0/12"}]}),
        );
        let a = i.allocate(&holder("c1"), &[]).unwrap();
        assert_eq!(a.ips[0].address.to_string(), "172.16.0.0/31");
        assert_eq!(a.ips[0].gateway, Some("172.16.0.1".parse().unwrap()));
        assert_eq!(
            a.routes,
            vec![PoolRoute {
                dst: "172.16.0.0/12".parse().unwrap(),
                gw: Some("172.16.0.1".parse().unwrap())
            }]
        );
        assert_eq!(
            i.allocate(&holder("c1"), &[]).unwrap(),
            a,
            "same holder, same lease"
        );
        let e = i.allocate(&holder("c2"), &[]).unwrap_err();
        assert_eq!(e.code(), 110);
        let msg = e.to_string();
        assert!(
            msg.contains("rail1")
                && msg.contains("gpu-0")
                && msg.contains("1 of 1")
                && msg.contains("ml/pod-c1"),
            "{msg}"
        );
        assert_eq!(i.check("c1", "net1").unwrap(), a);
        assert_eq!(i.check("c2", "net1").unwrap_err().code(), 113);
        assert!(
            i.status().is_ok(),
            "a full /31 held by its one pod is a rail in use, not a fault (#58)"
        );
        assert_eq!(
            i.release("c1", "net1").unwrap(),
            Released::Released("172.16.0.0".parse().unwrap())
        );
        assert_eq!(i.release("c1", "net1").unwrap(), Released::NotHeld);
        assert!(i.status().is_ok());
    }

    #[test]
    fn a_full_pool_reclaims_only_provably_gone_holders() {
        let t = tempfile::tempdir().unwrap();
        let boot = t.path().join("boot_id");
        std::fs::write(&boot, "boot-a\n").unwrap();
        let settings = Settings {
            state_dir: t.path().to_path_buf(),
            node_name: Some("gpu-0".into()),
            node_config: t.path().join("none.json"),
            boot_id_path: boot.clone(),
            ..Settings::default()
        };
        let conf = json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
        let load = || Ipam::load("rail1", &conf, &settings).unwrap();
        let in_ns = |c: &str| {
            let ns = t.path().join(format!("ns-{c}"));
            std::fs::write(&ns, "").unwrap();
            Holder {
                netns: Some(ns),
                netns_held: Default::default(),
                ..holder(c)
            }
        };
        let ipam = load();
        let a = ipam.allocate(&in_ns("a"), &[]).unwrap();
        assert_eq!(a.ips[0].address.to_string(), "172.16.0.0/31");
        let e = ipam.allocate(&in_ns("b"), &[]).unwrap_err();
        assert_eq!(e.code(), 110, "a live holder is never touched");

        std::fs::remove_file(t.path().join("ns-a")).unwrap();
        let b = ipam.allocate(&in_ns("b"), &[]).unwrap();
        assert_eq!(b.ips[0].address, a.ips[0].address);
        assert_eq!(b.reclaimed.len(), 1);
        assert!(
            b.reclaimed[0].contains("ml/pod-a") && b.reclaimed[0].contains("is gone"),
            "{:?}",
            b.reclaimed
        );
        assert_eq!(
            ipam.release("a", "net1").unwrap(),
            Released::NotHeld,
            "the dead pod's late DEL takes nothing from the new holder"
        );
        assert!(ipam.check("b", "net1").is_ok());

        std::fs::write(&boot, "boot-b\n").unwrap();
        // After a reboot every call is a new process that reads the id anew.
        let after_reboot = Settings {
            boot_id_read: Default::default(),
            ..settings.clone()
        };
        let rebooted = Ipam::load("rail1", &conf, &after_reboot).unwrap();
        assert_eq!(
            rebooted.reclaim_dead().unwrap().len(),
            1,
            "a lease of an earlier boot is dead"
        );
        assert!(rebooted.check("b", "net1").is_err());
    }

    /// `claimed` lists records, walks `/proc` and asks netlink: it runs
    /// with the lease file unlocked, so other ADDs and DELs of the network
    /// never wait on it (#58). Each call here takes the lock itself (which
    /// would time out were it held) and reports how long the lock was held
    /// around the slow judgement: never.
    /// A /31 whose one address is leased to `a`, whose namespace path is
    /// gone; the lease lock waits at most `lock_timeout`.
    fn full_with_a_gone_holder(t: &std::path::Path, lock_timeout_ms: u64) -> Ipam {
        let settings = Settings {
            state_dir: t.to_path_buf(),
            node_name: Some("gpu-0".into()),
            node_config: t.join("none.json"),
            lock_timeout: std::time::Duration::from_millis(lock_timeout_ms),
            ..Settings::default()
        };
        let conf = json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
        let ipam = Ipam::load("rail1", &conf, &settings).unwrap();
        let ns = t.join("ns-a");
        std::fs::write(&ns, "").unwrap();
        let a = Holder {
            netns: Some(ns.clone()),
            ..holder("a")
        };
        ipam.allocate(&a, &[]).unwrap();
        std::fs::remove_file(&ns).unwrap();
        ipam
    }

    #[test]
    fn the_lease_lock_is_free_while_a_gone_holders_claim_is_judged() {
        let t = tempfile::tempdir().unwrap();
        let ipam = full_with_a_gone_holder(t.path(), 200);

        let judged_unlocked = std::cell::Cell::new(0);
        let slow_claim = |_: &str, _: &str| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            // Another ADD of the network, taking the lock meanwhile.
            if ipam.store.lock().is_ok() {
                judged_unlocked.set(judged_unlocked.get() + 1);
            }
            false
        };
        let b = ipam
            .allocate_keeping(&holder("b"), &[], &slow_claim)
            .unwrap();
        assert_eq!(b.reclaimed.len(), 1, "{:?}", b.reclaimed);
        assert_eq!(judged_unlocked.get(), 1, "judged once, with the lock free");

        // The same for the reclaim ADD makes of a VF's stale leases.
        let ns_b = t.path().join("ns-b");
        std::fs::write(&ns_b, "").unwrap();
        ipam.release("b", "net1").unwrap();
        ipam.allocate(
            &Holder {
                netns: Some(ns_b.clone()),
                ..holder("b")
            },
            &[],
        )
        .unwrap();
        std::fs::remove_file(&ns_b).unwrap();
        assert_eq!(ipam.reclaim_dead_keeping(&slow_claim).unwrap().len(), 1);
        assert_eq!(judged_unlocked.get(), 2);
    }

    /// A lease judged dead with the file unlocked goes only if the file,
    /// read again under the lock, still holds it unchanged.
    #[test]
    fn a_lease_taken_again_while_judged_stays() {
        let t = tempfile::tempdir().unwrap();
        let ipam = full_with_a_gone_holder(t.path(), 2000);
        let renewed = |_: &str, _: &str| {
            // Meanwhile the holder's lease is released and taken anew by c.
            ipam.release("a", "net1").unwrap();
            ipam.allocate(&holder("c"), &[]).unwrap();
            false
        };
        let e = ipam
            .allocate_keeping(&holder("b"), &[], &renewed)
            .unwrap_err();
        assert_eq!(e.code(), 110, "c's fresh lease is not the one judged dead");
        assert!(ipam.check("c", "net1").is_ok());
    }

    #[test]
    fn a_taken_requested_address_is_reclaimed_from_a_gone_holder_only() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 29, "nodes": ["gpu-0"]}),
        );
        let ns = t.path().join("ns-a");
        std::fs::write(&ns, "").unwrap();
        let ip = "10.0.0.5".parse::<IpAddr>().unwrap();
        let gone = Holder {
            netns: Some(ns.clone()),
            netns_held: Default::default(),
            ..holder("a")
        };
        i.allocate(&gone, &[ip]).unwrap();
        assert_eq!(i.allocate(&holder("b"), &[ip]).unwrap_err().code(), 112);
        std::fs::remove_file(&ns).unwrap();
        assert_eq!(
            i.allocate(&holder("b"), &[ip]).unwrap().ips[0]
                .address
                .addr(),
            ip
        );
    }

    #[test]
    fn a_prefix_never_moves_under_live_leases() {
        let t = tempfile::tempdir().unwrap();
        let settings = Settings {
            state_dir: t.path().to_path_buf(),
            node_name: Some("gpu-1".into()),
            node_config: t.path().join("none.json"),
            ..Settings::default()
        };
        let before =
            json!({"cidr": "172.16.0.0/15", "perNodePrefix": 30, "nodes": ["gpu-0", "gpu-1"]});
        let ipam = Ipam::load("rail1", &before, &settings).unwrap();
        ipam.allocate(&holder("a"), &[]).unwrap();
        // gpu-0 is removed from the list: gpu-1 would move from .4/30 to .0/30.
        let after = json!({"cidr": "172.16.0.0/15", "perNodePrefix": 30, "nodes": ["gpu-1"]});
        let moved = Ipam::load("rail1", &after, &settings).unwrap();
        let e = moved.allocate(&holder("b"), &[]).unwrap_err();
        assert_eq!(e.code(), 7);
        let msg = e.to_string();
        assert!(
            msg.contains("172.16.0.4/30") && msg.contains("172.16.0.0/30"),
            "{msg}"
        );
        // Once the node is drained, the new prefix is taken.
        ipam.release("a", "net1").unwrap();
        assert!(moved.allocate(&holder("b"), &[]).is_ok());
    }

    #[test]
    fn repair_rebuilds_a_corrupt_file_and_keeps_it() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 29, "nodes": ["gpu-0"]}),
        );
        let a = i.allocate(&holder("a"), &[]).unwrap().ips[0].address.addr();
        std::fs::write(i.store_path(), "{ torn").unwrap();
        let settings = Settings {
            state_dir: t.path().to_path_buf(),
            ..Settings::default()
        };
        let lease = |c: &str, ip: IpAddr| Lease {
            container_id: c.into(),
            ifname: "net1".into(),
            address: ip,
            address6: None,
            pod_namespace: None,
            pod_name: None,
            pod_uid: None,
            allocated_unix: 0,
            proof: Proof::default(),
        };
        let twice = repair(&settings, "rail1", vec![lease("a", a), lease("b", a)]).unwrap_err();
        assert_eq!(twice.code(), 7);
        let r = repair(&settings, "rail1", vec![lease("a", a)]).unwrap();
        assert_eq!(r.restored, 1);
        let kept = r.kept.unwrap();
        assert_eq!(std::fs::read_to_string(kept).unwrap(), "{ torn");
        assert!(i.check("a", "net1").is_ok());
        let next = i.allocate(&holder("c"), &[]).unwrap().ips[0].address.addr();
        assert_ne!(next, a, "nothing leased twice");
        let views = stores(&settings);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].network, "rail1");
        assert_eq!(views[0].leases.as_ref().unwrap().leases.len(), 2);
    }

    #[test]
    fn an_ipv6_slash_64_per_node_leases_host_1_with_the_leaf_at_2() {
        let t = tempfile::tempdir().unwrap();
        // NVIDIA's reference layout: a /40 per rail, a /64 per node.
        let i = ipam(
            t.path(),
            json!({"cidr": "fd02:1:100::/40", "perNodePrefix": 64, "nodes": {"gpu-7": 7, "gpu-0": 0},
                   "routes": [{"dst": "fd02::/16"}]}),
        );
        let a = i.allocate(&holder("a"), &[]).unwrap();
        assert_eq!(a.ips[0].address.to_string(), "fd02:1:100::1/64");
        assert_eq!(a.ips[0].gateway, Some("fd02:1:100::2".parse().unwrap()));
        let got = |c: &str| {
            i.allocate(&holder(c), &[]).unwrap().ips[0]
                .address
                .addr()
                .to_string()
        };
        // First free after ::1, stepping over the gateway.
        assert_eq!(got("b"), "fd02:1:100::3");
        assert_eq!(got("c"), "fd02:1:100::4");
        // Released, then reused last (round-robin), never the gateway.
        i.release("a", "net1").unwrap();
        assert_eq!(got("d"), "fd02:1:100::5");
        // The pool's size is counted, not listed: 2^64 less ::0 and ::2.
        assert_eq!(
            pool_info(&i.pool).capacity,
            usize::try_from((1u128 << 64) - 2).unwrap()
        );
        // A requested address far into the /64, and the gateway refused.
        let far: IpAddr = "fd02:1:100:0:ffff:ffff:ffff:fffe".parse().unwrap();
        assert_eq!(
            i.allocate(&holder("e"), &[far]).unwrap().ips[0]
                .address
                .addr(),
            far
        );
        assert_eq!(
            i.allocate(&holder("f"), &["fd02:1:100::2".parse().unwrap()])
                .unwrap_err()
                .code(),
            112
        );
        // The next one after the far lease wraps to the start's free ::1.
        assert_eq!(got("g"), "fd02:1:100:0:ffff:ffff:ffff:ffff");
        assert_eq!(got("h"), "fd02:1:100::1");
    }

    #[test]
    fn a_slash_64_beside_a_slash_127_and_a_slash_31() {
        let t = tempfile::tempdir().unwrap();
        let leased = |network: &str, conf: serde_json::Value| {
            let settings = Settings {
                state_dir: t.path().to_path_buf(),
                node_name: Some("gpu-0".into()),
                node_config: t.path().join("none.json"),
                ..Settings::default()
            };
            let i = Ipam::load(network, &conf, &settings).unwrap();
            let a = i.allocate(&holder("c1"), &[]).unwrap();
            (
                a.ips
                    .iter()
                    .map(|ip| format!("{} via {:?}", ip.address, ip.gateway))
                    .collect::<Vec<_>>(),
                i,
            )
        };
        let (v64, _) = leased(
            "rail64",
            json!({"cidr": "fd02:1::/40", "perNodePrefix": 64, "nodes": ["gpu-0"]}),
        );
        let (v127, _) = leased(
            "rail127",
            json!({"cidr": "fd00:16::/48", "perNodePrefix": 127, "nodes": ["gpu-0"]}),
        );
        let (v31, _) = leased(
            "rail31",
            json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"]}),
        );
        assert_eq!(v64, ["fd02:1::1/64 via Some(fd02:1::2)"]);
        assert_eq!(v127, ["fd00:16::/127 via Some(fd00:16::1)"]);
        assert_eq!(v31, ["172.16.0.0/31 via Some(172.16.0.1)"]);
        // Dual stack: an IPv4 /31 and an IPv6 /64 in one lease.
        let (dual, _) = leased(
            "dual",
            json!({"cidr": "172.18.0.0/15", "nodes": ["gpu-0"],
                   "ipv6": {"cidr": "fd02:2::/40", "perNodePrefix": 64}}),
        );
        assert_eq!(
            dual,
            [
                "172.18.0.0/31 via Some(172.18.0.1)",
                "fd02:2::1/64 via Some(fd02:2::2)"
            ]
        );
        // Shorter than a /64 is refused, by name.
        let e = Ipam::load(
            "too-big",
            &json!({"cidr": "fd02:1::/40", "perNodePrefix": 63, "nodes": ["gpu-0"]}),
            &Settings {
                node_name: Some("gpu-0".into()),
                node_config: t.path().join("none.json"),
                ..Settings::default()
            },
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("64..128"), "{e}");
    }

    #[test]
    fn a_full_lease_file_of_a_small_ipv6_prefix_is_exhausted_not_walked() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "fd02:1::/40", "perNodePrefix": 126, "nodes": ["gpu-0"]}),
        );
        // A /126: ::0 reserved, ::1 gateway, ::2 and ::3 leasable.
        for c in ["a", "b"] {
            i.allocate(&holder(c), &[]).unwrap();
        }
        let e = i.allocate(&holder("c"), &[]).unwrap_err();
        assert_eq!(e.code(), 110, "{e}");
        assert!(e.to_string().contains("2 of 2"), "{e}");
    }

    #[test]
    fn freed_addresses_are_reused_last() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 29, "nodes": ["gpu-0"]}),
        );
        let got = |c: &str| {
            i.allocate(&holder(c), &[]).unwrap().ips[0]
                .address
                .addr()
                .to_string()
        };
        assert_eq!(got("a"), "10.0.0.2");
        assert_eq!(got("b"), "10.0.0.3");
        i.release("a", "net1").unwrap();
        assert_eq!(got("c"), "10.0.0.4", "not the just-freed 10.0.0.2");
        assert_eq!(got("d"), "10.0.0.5");
        assert_eq!(got("e"), "10.0.0.6");
        assert_eq!(got("f"), "10.0.0.2", "wraps around to the freed one last");
    }

    #[test]
    fn requested_addresses_must_be_in_the_prefix_and_free() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 29, "nodes": ["gpu-0"]}),
        );
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            i.allocate(&holder("a"), &[ip("10.0.0.5")]).unwrap().ips[0]
                .address
                .to_string(),
            "10.0.0.5/29"
        );
        for (bad, why) in [
            ("10.0.0.5", "leased to"),
            ("10.0.1.5", "outside"),
            ("10.0.0.1", "gateway"),
        ] {
            let e = i.allocate(&holder("b"), &[ip(bad)]).unwrap_err();
            assert_eq!(e.code(), 112);
            assert!(e.to_string().contains(why), "{e}");
        }
    }

    #[test]
    fn corrupt_store_fails_add_keeps_the_file_and_del_succeeds() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0"]}),
        );
        i.allocate(&holder("c1"), &[]).unwrap();
        std::fs::write(i.store_path(), "{ torn").unwrap();
        let e = i.allocate(&holder("c2"), &[]).unwrap_err();
        assert_eq!(e.code(), 111);
        assert_eq!(
            std::fs::read_to_string(i.store_path()).unwrap(),
            "{ torn",
            "nothing overwritten"
        );
        assert!(matches!(
            i.release("c1", "net1").unwrap(),
            Released::StoreUnreadable(_)
        ));
        assert_eq!(i.gc(&[]).unwrap_err().code(), 111);
    }

    #[test]
    fn gc_keeps_only_valid_attachments() {
        let t = tempfile::tempdir().unwrap();
        let i = ipam(
            t.path(),
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 29, "nodes": ["gpu-0"]}),
        );
        for c in ["a", "b", "c"] {
            i.allocate(&holder(c), &[]).unwrap();
        }
        let freed = i.gc(&[("b".into(), "net1".into())]).unwrap();
        assert_eq!(freed.len(), 2);
        assert!(i.check("b", "net1").is_ok());
        assert!(i.check("a", "net1").is_err());
    }
}
