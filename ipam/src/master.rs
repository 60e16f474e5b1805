//! `matchMasterSubnet`: the node's prefix is the subnet the VF's physical
//! function already holds an address in (Spiderpool's "Solution 2": the
//! host's PF is configured in its node's rail subnet and pods get the
//! rest). The PF is found from the VF's PCI address in sysfs; its addresses
//! in the namespace the plugin runs in.

use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;

use crate::error::IpamError;

/// The PF's netdev and its addresses, with their prefix lengths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Master {
    pub name: String,
    pub addresses: Vec<IpNet>,
}

impl Master {
    /// The PF of VF `pci` (sysfs under `sysfs_root`) and its addresses now.
    pub fn of_vf(sysfs_root: &Path, pci: &str) -> Result<Self, IpamError> {
        let net = base::sysfs_layout::SysfsLayout::new(sysfs_root).pf_netdevs_of_vf(pci);
        let name = std::fs::read_dir(&net)
            .ok()
            .and_then(|mut entries| entries.find_map(|e| e.ok()?.file_name().into_string().ok()))
            .ok_or_else(|| {
                IpamError::config(
                    "ipam.matchMasterSubnet",
                    format!(
                        "VF {pci} has no PF netdev ({} is empty or missing)",
                        net.display()
                    ),
                )
            })?;
        Ok(Master {
            addresses: addresses_of(&name)?,
            name,
        })
    }

    /// The one subnet of `cidr` the PF holds addresses in.
    pub fn subnet_in(&self, cidr: IpNet) -> Result<IpNet, IpamError> {
        let mut inside: Vec<IpNet> = self
            .addresses
            .iter()
            .filter(|a| cidr.contains(&a.addr()) && cidr.prefix_len() <= a.prefix_len())
            .map(IpNet::trunc)
            .collect();
        inside.sort();
        inside.dedup();
        let held = || {
            let all: Vec<String> = self.addresses.iter().map(ToString::to_string).collect();
            if all.is_empty() {
                "none".to_string()
            } else {
                all.join(", ")
            }
        };
        match inside.as_slice() {
            [one] => Ok(*one),
            [] => Err(IpamError::config(
                "ipam.matchMasterSubnet",
                format!(
                    "PF {} has no address inside cidr {cidr} (its addresses: {}); give the PF its address in this \
                     node's rail subnet, or fix cidr",
                    self.name,
                    held()
                ),
            )),
            many => Err(IpamError::config(
                "ipam.matchMasterSubnet",
                format!(
                    "PF {} has addresses in {} subnets of cidr {cidr} ({}): which one is this node's is not clear",
                    self.name,
                    many.len(),
                    held()
                ),
            )),
        }
    }

    pub fn holds(&self, ip: &IpAddr) -> bool {
        self.addresses.iter().any(|a| a.addr() == *ip)
    }
}

/// The interface's addresses in this namespace (getifaddrs).
fn addresses_of(name: &str) -> Result<Vec<IpNet>, IpamError> {
    let all = nix::ifaddrs::getifaddrs().map_err(|e| {
        IpamError::io(
            format!("cannot list the addresses of {name}"),
            &std::io::Error::from(e),
        )
    })?;
    Ok(all
        .filter(|a| a.interface_name == name)
        .filter_map(|a| {
            let addr = a.address?;
            let mask = a.netmask?;
            if let (Some(ip), Some(m)) = (addr.as_sockaddr_in(), mask.as_sockaddr_in()) {
                let len = u32::from(m.ip()).leading_ones() as u8;
                return IpNet::new(IpAddr::V4(ip.ip()), len).ok();
            }
            let (ip, m) = (addr.as_sockaddr_in6()?, mask.as_sockaddr_in6()?);
            let len = u128::from(m.ip()).leading_ones() as u8;
            IpNet::new(IpAddr::V6(ip.ip()), len).ok()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(addrs: &[&str]) -> Master {
        Master {
            name: "ens1f0".into(),
            addresses: addrs.iter().map(|a| a.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn the_pfs_one_subnet_inside_cidr() {
        let cidr: IpNet = "172.16.0.0/16".parse().unwrap();
        let m = master(&["10.0.0.5/24", "172.16.1.34/27", "172.16.1.40/27"]);
        assert_eq!(m.subnet_in(cidr).unwrap().to_string(), "172.16.1.32/27");
        assert!(m.holds(&"172.16.1.40".parse().unwrap()));
        let none = master(&["10.0.0.5/24"]).subnet_in(cidr).unwrap_err();
        assert!(
            none.to_string().contains(
                "PF ens1f0 has no address inside cidr 172.16.0.0/16 (its addresses: 10.0.0.5/24)"
            ),
            "{none}"
        );
        let two = master(&["172.16.1.34/27", "172.16.2.34/27"])
            .subnet_in(cidr)
            .unwrap_err();
        assert!(two.to_string().contains("2 subnets"), "{two}");
    }
}
