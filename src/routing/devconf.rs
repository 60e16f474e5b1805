//! Which of a rail's sysctls go in the link message (`net::devconf`) and
//! which through /proc/sys as before: IPv6 keys (the kernel sets no IPv6
//! conf over netlink), a 0 (the request form leaves zeros out), a value
//! that is not a number, and keys with side effects beyond the value
//! (`forwarding`) or unknown here.

use super::conf::Family;
use super::plan::Sysctl;
use crate::net::devconf::InetConf;

/// The sysctls of a plan, split by how they are set.
#[derive(Debug, Default)]
pub struct Split<'a> {
    /// For the link message; `None` when no key goes that way.
    pub inet: Option<InetConf>,
    /// For /proc/sys, in the plan's order.
    pub files: Vec<&'a Sysctl>,
}

pub fn split(sysctls: &[Sysctl]) -> Split<'_> {
    let (mut inet, mut in_message, mut files) = (InetConf::default(), false, Vec::new());
    for sysctl in sysctls {
        let value = sysctl.value.trim().parse::<i32>().ok().filter(|v| *v != 0);
        match (sysctl.key.family, value) {
            (Family::Ipv4, Some(v)) if inet.set(&sysctl.key.key, v) => in_message = true,
            _ => files.push(sysctl),
        }
    }
    Split {
        inet: in_message.then_some(inet),
        files,
    }
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
        let mut expected = InetConf::default();
        expected.set("rp_filter", 2);
        expected.set("arp_notify", 1);
        assert_eq!(conf, expected);
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
