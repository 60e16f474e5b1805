//! What the kernel does to an InfiniBand VF's IPoIB netdev when its RDMA
//! device changes namespace, played on the fake node. The IPoIB netdev is
//! a client of the RDMA device: the move unregisters it (its name, MTU,
//! addresses and state gone) and registers a new one under the kernel's
//! default name: in the host namespace before "RDMA/ipoib: Use parent rdma
//! device net namespace" (rdma-next, June 2025), in the device's new
//! namespace after it (design.md §17). The stand-in keeps the veth (so the
//! fabric still reaches it) and plays the rest: it moves it where the new
//! netdev appears, under `ib<N>` (the first free), down, without
//! addresses, at IPoIB's datagram MTU. And what a GUID's driver rebind
//! does to the VF's RDMA device: unregistered (`unregister`), then
//! registered again under the first free `mlx5_%d` (`register`); and
//! udev's rename of a device just registered (`udev_rename`).

use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Where the new IPoIB netdev appears: the kernel generation a test plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// Before the 2025 change: in the host (init) namespace.
    Host,
    /// Since: in the RDMA device's new namespace.
    Device,
}

impl Generation {
    /// `ipoibNetns` in the fake hardware file: `"host"`, else the kernels
    /// of today.
    pub fn named(word: Option<&str>) -> Self {
        match word {
            Some("host") => Generation::Host,
            _ => Generation::Device,
        }
    }
}

/// IPoIB's datagram-mode MTU, which a new netdev starts with.
const DEFAULT_MTU: u32 = 2044;

/// The VF whose RDMA device is `device` in the fake sysfs, and its IPoIB
/// netdev's name there; `None` when it is not an InfiniBand VF.
fn ipoib_of(sysfs: &Path, device: &str) -> Option<(PathBuf, String)> {
    let devices = sysfs.join(PCI_DEVICES);
    let pci = std::fs::read_dir(&devices)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("infiniband").join(device).is_dir())?;
    let name = std::fs::read_dir(pci.join("net"))
        .ok()?
        .flatten()
        .find_map(|e| e.file_name().to_str().map(String::from))?;
    let kind = std::fs::read_to_string(pci.join("net").join(&name).join("type")).ok()?;
    (kind.trim() == "32").then_some((pci, name))
}

/// The named namespace (`/var/run/netns/<name>`) whose inode is `ino`, as
/// a path.
fn named_netns(ino: u64) -> Option<String> {
    std::fs::read_dir("/var/run/netns")
        .ok()?
        .flatten()
        .find(|e| {
            std::fs::metadata(e.path())
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) == ino)
        })
        .map(|e| e.path().display().to_string())
}

/// `ip ARGS` inside the namespace at `ns` (a path).
fn ip(ns: &str, args: &[&str]) -> Result<String> {
    let out = Command::new("nsenter")
        .arg(format!("--net={ns}"))
        .arg("ip")
        .args(args)
        .output()
        .map_err(|e| Error::internal(format!("fake IPoIB: nsenter: {e}")))?;
    if !out.status.success() {
        return Err(Error::internal(format!(
            "fake IPoIB: ip {args:?} in {ns}: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The name of the link with index `index` in the namespace at `ns`.
fn name_of_index(ns: &str, index: &str) -> Option<String> {
    let out = ip(ns, &["-o", "link", "show"]).ok()?;
    out.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()?.trim() == index)
            .then(|| f.next())??
            .trim()
            .split('@')
            .next()
            .map(String::from)
    })
}

/// Play the kernel for RDMA device `device`, which was in the namespace
/// `was` (its inode; `None`: the host) and now moves to `to`. The old
/// netdev is found as the kernel knows it: by the name sysfs lists while
/// it is in the host, else by its ifindex (sysfs `ifindex`) in the
/// namespace the device leaves or joins.
pub fn recreate(
    sysfs: &Path,
    device: &str,
    was: Option<u64>,
    to: BorrowedFd<'_>,
    generation: Generation,
) -> Result<()> {
    let Some((pci, listed)) = ipoib_of(sysfs, device) else {
        return Ok(());
    };
    let pid = std::process::id();
    let host = format!("/proc/{pid}/ns/net");
    let target = format!("/proc/{pid}/fd/{}", to.as_raw_fd());
    let previous = was.and_then(named_netns);
    let index = std::fs::read_to_string(pci.join("net").join(&listed).join("ifindex"))
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    let found = match ip(&host, &["link", "show", "dev", &listed]) {
        Ok(_) => Some((host.clone(), listed.clone())),
        Err(_) => [Some(target.clone()), previous]
            .into_iter()
            .flatten()
            .find_map(|ns| name_of_index(&ns, &index).map(|n| (ns, n))),
    };
    let Some((from, old)) = found else {
        return Ok(()); // nowhere the kernel would find it: nothing to play
    };
    let appears = match generation {
        Generation::Host => host,
        Generation::Device => target,
    };
    let new = first_free_name(&appears)?;
    ip(&from, &["link", "set", "dev", &old, "down"])?;
    ip(&from, &["addr", "flush", "dev", &old])?;
    let mtu = DEFAULT_MTU.to_string();
    let args = [
        "link", "set", "dev", &old, "netns", &appears, "name", &new, "mtu", &mtu,
    ];
    // The stand-in's sysfs names are fixed, where the kernel's follow each
    // rename: its entry stays as the host named the VF, and the netdev is
    // known by its ifindex (kept across the move), as a stand-in has no PCI
    // parent for railcni to find it by.
    ip(&from, &args).map(drop)
}

/// The kernel's default name `ib%d`: the first free in the namespace at
/// `path`.
fn first_free_name(path: &str) -> Result<String> {
    let names = ip(path, &["-o", "link", "show"])?;
    let taken = |n: &str| {
        names.lines().any(|l| {
            l.split(':')
                .nth(1)
                .is_some_and(|f| f.trim().split('@').next() == Some(n))
        })
    };
    Ok((0..)
        .map(|i| format!("ib{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| "ib0".into()))
}

/// Every PCI device of a sysfs tree, as the kernel lists them (links into
/// `devices/`, whatever the tree's hierarchy there).
const PCI_DEVICES: &str = "bus/pci/devices";

/// The RDMA devices the fake sysfs lists, by the VF (PCI dir) holding each.
fn rdma_devices(sysfs: &Path) -> Vec<(PathBuf, String)> {
    let devices = sysfs.join(PCI_DEVICES);
    (std::fs::read_dir(devices).into_iter().flatten().flatten())
        .flat_map(|pci| {
            let dir = pci.path();
            (std::fs::read_dir(dir.join("infiniband"))
                .into_iter()
                .flatten()
                .flatten())
            .filter_map(|d| d.file_name().to_str().map(String::from))
            .filter(|n| !n.starts_with('.'))
            .map(move |n| (dir.clone(), n))
            .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether the fake RDMA subsystem has a device named `name`.
pub fn device_exists(sysfs: &Path, name: &str) -> bool {
    rdma_devices(sysfs).iter().any(|(_, n)| n == name)
}

/// Whether the namespace with inode `ino` still lives: a name in
/// `/var/run/netns`, a process in it, or this process holding it open.
pub fn netns_alive(ino: u64) -> bool {
    let is_it = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) == ino)
    };
    let held = format!("net:[{ino}]");
    named_netns(ino).is_some()
        || (std::fs::read_dir("/proc").into_iter().flatten().flatten())
            .any(|e| is_it(&e.path().join("ns/net")))
        || (std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten())
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == held.as_str()))
}

/// A device between a driver's unbind and its bind: no name.
pub struct Unbound {
    dir: PathBuf,
}

/// VF `vf` of PF netdev `pf` unregisters its RDMA device (a driver
/// unbind): its name is free for another device's registration.
pub fn unregister(sysfs: &Path, pf: &str, vf: u32) -> Result<Option<Unbound>> {
    let devices = sysfs.join(PCI_DEVICES);
    let pf_dir = (std::fs::read_dir(&devices).into_iter().flatten().flatten())
        .map(|e| e.path())
        .find(|p| p.join("net").join(pf).exists());
    let Some(vf_dir) = pf_dir
        .and_then(|p| std::fs::read_link(p.join(format!("virtfn{vf}"))).ok())
        .and_then(|l| l.file_name().map(|n| devices.join(n)))
    else {
        return Ok(None);
    };
    let Some((_, old)) = rdma_devices(sysfs)
        .into_iter()
        .find(|(dir, _)| *dir == vf_dir)
    else {
        return Ok(None);
    };
    let ib = vf_dir.join("infiniband");
    std::fs::rename(ib.join(&old), ib.join(UNBOUND))
        .map_err(|e| Error::internal(format!("fake unbind: sysfs: {e}")))?;
    Ok(Some(Unbound { dir: vf_dir }))
}

/// Where an unbound device waits for its bind (a name no device takes).
const UNBOUND: &str = ".unbound";

/// The driver's bind: the device registered under the first `mlx5_%d` no
/// other device holds now; its name.
pub fn register(sysfs: &Path, unbound: &Unbound) -> Result<String> {
    let all = rdma_devices(sysfs);
    let new = (0..)
        .map(|i| format!("mlx5_{i}"))
        .find(|n| !all.iter().any(|(_, m)| m == n))
        .unwrap_or_else(|| "mlx5_0".into());
    let ib = unbound.dir.join("infiniband");
    std::fs::rename(ib.join(UNBOUND), ib.join(&new))
        .map_err(|e| Error::internal(format!("fake bind: sysfs: {e}")))?;
    Ok(new)
}

/// udev's rename of `device` to rdma-core's NAME_PCI name (`ibp<bus>s<slot>f<fn>`
/// from its VF's PCI address, as `rdma_rename` builds it); the new name.
pub fn udev_rename(sysfs: &Path, device: &str) -> Result<String> {
    let Some((dir, _)) = rdma_devices(sysfs).into_iter().find(|(_, n)| n == device) else {
        return Err(Error::internal(format!("fake udev: no device {device}")));
    };
    let pci = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let num = |s: &str| u32::from_str_radix(s, 16).unwrap_or(0);
    let parts: Vec<&str> = pci.split([':', '.']).collect();
    let new = match parts.as_slice() {
        [_, bus, slot, func] => format!("ibp{}s{}f{}", num(bus), num(slot), num(func)),
        _ => format!("ibp_{device}"),
    };
    let ib = dir.join("infiniband");
    std::fs::rename(ib.join(device), ib.join(&new))
        .map_err(|e| Error::internal(format!("fake udev: sysfs: {e}")))?;
    Ok(new)
}
