//! The kernel's IOMMU: VFIO (DPDK rails) needs it on, in passthrough mode
//! for host devices. A netdev VF moved into a pod does not: there its
//! absence is advice, not a broken link. And the rule a pod's namespace
//! is recognised by on this kernel (netns cookies, Linux 5.14+).

use super::finding::Finding;
use super::place::Where;

/// `dpdk`: whether any rail hands its VFs to vfio-pci.
pub fn iommu(w: &Where, dpdk: bool) -> Finding {
    const EXPECTED: &str = "IOMMU groups (intel_iommu=on iommu=pt)";
    let groups = std::fs::read_dir(w.sysfs.join("kernel/iommu_groups")).map_or(0, Iterator::count);
    let cmdline = std::fs::read_to_string(w.host_path("/proc/cmdline")).unwrap_or_default();
    let flags: Vec<&str> = cmdline
        .split_whitespace()
        .filter(|p| {
            ["intel_iommu=", "amd_iommu=", "iommu=", "iommu.passthrough="]
                .iter()
                .any(|k| p.starts_with(k))
        })
        .collect();
    let said = if flags.is_empty() {
        "no IOMMU flags on the kernel command line".to_string()
    } else {
        format!("kernel command line: {}", flags.join(" "))
    };
    if groups > 0 {
        return Finding::ok(
            "kernel/iommu",
            format!("{groups} IOMMU groups; {said}"),
            EXPECTED,
        );
    }
    let found = format!(
        "no IOMMU groups in {}; {said}",
        w.sysfs.join("kernel/iommu_groups").display()
    );
    const FIX: &str = "enable VT-d/AMD-Vi in the BIOS and add intel_iommu=on (or amd_iommu=on) iommu=pt to \
         the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub and reboot)";
    if dpdk {
        return Finding::broken("kernel/iommu", found, EXPECTED, FIX);
    }
    Finding::advice(
        "kernel/iommu",
        format!("{found}; no rail is a DPDK (vfio-pci) rail, so pods attach without it"),
        EXPECTED,
        format!("only for DPDK rails or device passthrough: {FIX}"),
    )
}

/// Which rule this node tells a dead pod's namespace from a live one by
/// (`railcni::attachment::identity`), and how many records still rest on
/// the rule without cookies.
pub fn netns_identity(records: &[railcni::state::Record]) -> Finding {
    use railcni::attachment::identity::Rule;
    const EXPECTED: &str = "netns cookies (Linux 5.14+)";
    let rule = Rule::of_this_kernel();
    let old = records
        .iter()
        .filter(|r| r.proof.netns_cookie.is_none())
        .count();
    let older = match old {
        0 => String::new(),
        n => format!("; {n} attachment record(s) from an older railcni carry no cookie and are judged by their VF"),
    };
    match rule {
        Rule::Cookie => Finding::ok(
            "kernel/netns-identity",
            format!("{}{older}", rule.describe()),
            EXPECTED,
        ),
        Rule::VfPresence => Finding::advice(
            "kernel/netns-identity",
            format!("{}{older}", rule.describe()),
            EXPECTED,
            "a kernel of 5.14 or later gives namespaces cookies; until then railcni acts on a \
             namespace found by its inode only while the pod's VF is in it",
        ),
    }
}
