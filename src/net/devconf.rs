//! A rail's IPv4 interface settings (`net.ipv4.conf.<ifname>.<key>`) as
//! the link message itself carries them (IFLA_AF_SPEC → AF_INET →
//! IFLA_INET_CONF): no switch into the pod's namespace and no /proc/sys
//! file per key. Which keys go this way is `routing::devconf`'s choice.

use netlink_packet_route::link::InetDevConf;

/// The IPv4 interface settings of one link message (zeros are left out:
/// the request form cannot say 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InetConf(pub(super) InetDevConf);

impl InetConf {
    /// Set the field the kernel's sysctl `key` names; false for a key the
    /// message cannot carry.
    pub fn set(&mut self, key: &str, value: i32) -> bool {
        let conf = &mut self.0;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_set_their_field_and_others_are_refused() {
        let mut conf = InetConf::default();
        assert!(conf.set("rp_filter", 2));
        assert!(conf.set("arp_filter", 1));
        assert!(!conf.set("forwarding", 1));
        assert_eq!((conf.0.rp_filter, conf.0.arpfilter), (2, 1));
    }
}
