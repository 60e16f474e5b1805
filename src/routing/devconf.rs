//! A rail's IPv4 interface settings (`net.ipv4.conf.<ifname>.<key>`) carried
//! in the link message itself (IFLA_AF_SPEC → AF_INET → IFLA_INET_CONF):
//! no switch into the pod's namespace and no /proc/sys file per key. What
//! that message cannot say goes through /proc/sys as before: IPv6 keys
//! (the kernel sets no IPv6 conf over netlink), a 0 (the request form
//! leaves zeros out), a value that is not a number, and keys with side
//! effects beyond the value (`forwarding`) or unknown here.

use netlink_packet_route::link::InetDevConf;

use super::conf::Family;
use super::plan::Sysctl;

/// The sysctls of a plan, split by how they are set.
#[derive(Debug, Default)]
pub struct Split<'a> {
    /// For the link message; `None` when no key goes that way.
    pub inet: Option<InetDevConf>,
    /// For /proc/sys, in the plan's order.
    pub files: Vec<&'a Sysctl>,
}

pub fn split(sysctls: &[Sysctl]) -> Split<'_> {
    let mut out = Split::default();
    for sysctl in sysctls {
        let value = sysctl.value.trim().parse::<i32>().ok().filter(|v| *v != 0);
        let mut conf = out.inet.unwrap_or_default();
        match (sysctl.key.family, value) {
            (Family::Ipv4, Some(v)) if set(&mut conf, &sysctl.key.key, v) => out.inet = Some(conf),
            _ => out.files.push(sysctl),
        }
    }
    out
}

/// Set the field the kernel's sysctl `key` names; false for a key left to
/// /proc/sys.
fn set(conf: &mut InetDevConf, key: &str, value: i32) -> bool {
    let field = match key {
        "rp_filter" => &mut conf.rp_filter,
        "arp_ignore" => &mut conf.arp_ignore,
        "arp_announce" => &mut conf.arp_announce,
        "arp_notify" => &mut conf.arp_notify,
        "arp_accept" => &mut conf.arp_accept,
        "arp_filter" => &mut conf.arpfilter,
        "accept_local" => &mut conf.accept_local,
        "proxy_arp" => &mut conf.proxy_arp,
        "log_martians" => &mut conf.log_martians,
        "accept_redirects" => &mut conf.accept_redirects,
        "send_redirects" => &mut conf.send_redirects,
        "drop_gratuitous_arp" => &mut conf.drop_gratuitous_arp,
        _ => return false,
    };
    *field = value;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::conf::SysctlKey;

    fn sysctl(key: SysctlKey, value: &str) -> Sysctl {
        Sysctl {
            key,
            value: value.into(),
        }
    }

    #[test]
    fn numbers_for_known_ipv4_keys_go_in_the_message_the_rest_to_files() {
        let plan = [
            sysctl(SysctlKey::ipv4("rp_filter"), "2"),
            sysctl(SysctlKey::ipv4("arp_notify"), "1"),
            sysctl(SysctlKey::ipv4("arp_ignore"), "0"),
            sysctl(SysctlKey::ipv4("forwarding"), "1"),
            sysctl(SysctlKey::ipv4("arp_announce"), "two"),
            sysctl(SysctlKey::ipv6("accept_dad"), "0"),
            sysctl(SysctlKey::ipv6("accept_ra"), "2"),
        ];
        let both = split(&plan);
        let conf = both.inet.expect("two keys go in the message");
        assert_eq!((conf.rp_filter, conf.arp_notify), (2, 1));
        let files: Vec<&str> = both.files.iter().map(|s| s.key.key.as_str()).collect();
        assert_eq!(
            files,
            [
                "arp_ignore",
                "forwarding",
                "arp_announce",
                "accept_dad",
                "accept_ra"
            ]
        );
        assert!(split(&plan[2..]).inet.is_none());
    }
}
