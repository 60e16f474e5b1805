//! A recording stand-in for the hardware, for tests on machines without
//! SR-IOV or RDMA: VF state and RDMA mode live in a JSON file, and every
//! change is appended to its `calls` list. RoCE QoS lives in files, which
//! the fake sysfs and configfs trees hold as the kernel's do: the fake
//! writes them as the kernel does, records the call, and refuses what
//! `refuse` names (`rdmaQoS.tc`, `rdmaQoS.tos`).

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use serde_json::{Map, Value};

use super::Hardware;
use crate::attr_set::Attr as _;
use crate::error::{Error, Result};
use crate::net::rdma::RdmaNetnsMode;
use crate::net::roce::{RoceAttr, RocePort, RoceSettings};
use crate::net::vf_info::{LinkState, Rate, VfAttr, Vlan, VlanProto};
use crate::net::{Mac, NetNs};

/// A VF's attributes as JSON, named as `VfAttr` names them (`linkState`).
pub type FakeVf = Map<String, Value>;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FakeState {
    /// "<pf>/<vf>" → current attributes.
    #[serde(default)]
    pub vfs: BTreeMap<String, FakeVf>,
    /// "shared" or "exclusive"; absent: RDMA netlink unavailable.
    #[serde(default)]
    pub rdma_mode: Option<String>,
    /// RDMA device name → namespace it was moved to ("fd:<inode>").
    #[serde(default)]
    pub rdma_devices: BTreeMap<String, String>,
    #[serde(default)]
    pub calls: Vec<String>,
    /// PF → its DCB: `{"pfc": [3], "dscpPrio": {"24": 3}}`; a PF not
    /// listed has none (EOPNOTSUPP, as igb and veth answer).
    #[serde(default)]
    pub dcb: BTreeMap<String, FakeDcb>,
    /// VF settings the fake driver refuses: field (as `vfs` spells it,
    /// `linkState`) → errno name (`EOPNOTSUPP`), as igb refuses some;
    /// `moveRdma` refuses every RDMA device move, `moveRdmaOnce` the next.
    #[serde(default)]
    pub refuse: BTreeMap<String, String>,
    /// Where an InfiniBand VF's new IPoIB netdev appears when its RDMA
    /// device moves: `"host"` (kernels before 2025) or the device's new
    /// namespace (`"device"`, the default; see `fake_ipoib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipoib_netns: Option<String>,
    /// Setting an InfiniBand VF's GUID (applied by the driver rebind that
    /// follows) re-registers its RDMA device under the first free
    /// `mlx5_%d`, as the kernel does (`Recorder::rebind`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rebind_renames: bool,
    /// udev's persistent naming (rdma-core's `rdma_rename`, NAME_PCI):
    /// a device a rebind registered is renamed `ibp…` just after it
    /// appears, here as the first move by its kernel name arrives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub udev_renames: bool,
    /// Time the fake spent playing the kernel with ip(8) and /proc (the
    /// IPoIB re-creation, a namespace's liveness), which a kernel spends
    /// none of: benchmarks subtract it.
    #[serde(default)]
    pub played_us: u64,
    /// Devices registered and not yet renamed by udev.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub just_registered: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FakeDcb {
    /// Priorities PFC keeps lossless.
    #[serde(default)]
    pub pfc: Vec<u8>,
    /// DSCP → priority.
    #[serde(default)]
    pub dscp_prio: BTreeMap<u8, u8>,
}

pub struct Recorder {
    path: PathBuf,
}

/// What a fresh VF reports: no admin MAC, no VLAN, spoof check on.
pub fn factory_default() -> Vec<VfAttr> {
    vec![
        VfAttr::Mac(Mac([0; 6])),
        VfAttr::Vlan(Vlan {
            id: 0,
            qos: 0,
            proto: VlanProto::Dot1Q,
        }),
        VfAttr::Spoofchk(true),
        VfAttr::Trust(false),
        VfAttr::LinkState(LinkState::Auto),
        VfAttr::Rate(Rate {
            min_mbps: 0,
            max_mbps: 0,
        }),
    ]
}

/// `attr` as its one JSON member.
fn member(attr: &VfAttr) -> Result<(String, Value)> {
    match serde_json::to_value(attr) {
        Ok(Value::Object(o)) => o
            .into_iter()
            .next()
            .ok_or_else(|| Error::internal("fake hardware: an empty attribute")),
        other => Err(Error::internal(format!(
            "fake hardware: attribute as {other:?}"
        ))),
    }
}

fn as_json(attrs: &[VfAttr]) -> Result<FakeVf> {
    attrs.iter().map(member).collect()
}

fn from_json(vf: &FakeVf) -> Result<Vec<VfAttr>> {
    vf.iter()
        .map(|(k, v)| {
            let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
            serde_json::from_value(one)
                .map_err(|e| Error::internal(format!("fake hardware: VF attribute {k}: {e}")))
        })
        .collect()
}

impl Recorder {
    pub fn new(path: PathBuf) -> Self {
        Recorder { path }
    }

    /// One change at a time, as the kernel's locks (rtnl, the RDMA
    /// subsystem's devices_rwsem) order them: concurrent plugins share the
    /// state file. Held until the guard drops.
    fn lock(&self) -> Result<std::fs::File> {
        let path = self.path.with_extension("lock");
        let file = std::fs::File::create(&path)
            .map_err(|e| Error::internal(format!("fake hardware {}: {e}", path.display())))?;
        file.lock()
            .map_err(|e| Error::internal(format!("fake hardware {}: {e}", path.display())))?;
        Ok(file)
    }

    fn load(&self) -> Result<FakeState> {
        match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                Error::internal(format!("fake hardware {}: {e}", self.path.display()))
            }),
            Err(_) => Ok(FakeState::default()),
        }
    }

    fn save(&self, s: &FakeState) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(s).map_err(|e| Error::internal(e.to_string()))?;
        std::fs::write(&self.path, bytes)
            .map_err(|e| Error::internal(format!("fake hardware {}: {e}", self.path.display())))
    }
}

/// The fake sysfs tree the plugin reads (`RAILCNI_SYSFS_ROOT`), where the
/// fake kernel's RDMA devices and netdevs are described.
fn sysfs_root() -> Option<PathBuf> {
    std::env::var_os("RAILCNI_SYSFS_ROOT").map(PathBuf::from)
}

fn errno_named(name: &str) -> Option<nix::errno::Errno> {
    use nix::errno::Errno;
    [
        Errno::EOPNOTSUPP,
        Errno::EPROTONOSUPPORT,
        Errno::EINVAL,
        Errno::EBUSY,
        Errno::EADDRNOTAVAIL,
    ]
    .into_iter()
    .find(|e| format!("{e:?}") == name)
}

impl Hardware for Recorder {
    fn vf_state(&self, pf: &str, vf: u32) -> Result<Vec<VfAttr>> {
        let _kernel = self.lock()?;
        match self.load()?.vfs.get(&format!("{pf}/{vf}")) {
            Some(vf) => from_json(vf),
            None => Ok(factory_default()),
        }
    }

    fn set_vf(&self, pf: &str, vf: u32, attr: &VfAttr) -> Result<()> {
        let kernel = self.lock()?;
        let mut state = self.load()?;
        let (name, value) = member(attr)?;
        if let Some(errno) = state.refuse.get(&name) {
            let errno = errno_named(errno)
                .ok_or_else(|| Error::internal(format!("fake hardware: unknown errno {errno}")))?;
            return Err(Error::Kernel {
                what: format!("set VF {vf} on PF {pf}"),
                errno,
                said: None,
            });
        }
        let entry = match state.vfs.entry(format!("{pf}/{vf}")) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(as_json(&factory_default())?),
        };
        let shown = Value::Object(Map::from_iter([(name.clone(), value.clone())]));
        entry.insert(name, value);
        state.calls.push(format!("set_vf {pf} {vf} {shown}"));
        self.save(&state)?;
        match (
            matches!(attr, VfAttr::IbGuid(_)) && state.rebind_renames,
            sysfs_root(),
        ) {
            (true, Some(sysfs)) => self.rebind(&sysfs, pf, vf, kernel),
            _ => Ok(()),
        }
    }

    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode> {
        let _kernel = self.lock()?;
        match self.load()?.rdma_mode.as_deref() {
            Some("exclusive") => Ok(RdmaNetnsMode::Exclusive),
            Some("shared") => Ok(RdmaNetnsMode::Shared),
            _ => Err(Error::Kernel {
                what: "query the RDMA netns mode (is ib_core loaded?)".into(),
                errno: nix::errno::Errno::EPROTONOSUPPORT,
                said: None,
            }),
        }
    }

    fn dcb(&self, pf: &str) -> Result<crate::net::dcb::Dcb> {
        let _kernel = self.lock()?;
        match self.load()?.dcb.get(pf) {
            Some(d) => Ok(crate::net::dcb::Dcb {
                pfc_enabled: d
                    .pfc
                    .iter()
                    .filter(|p| **p < 8)
                    .fold(0, |m, p| m | (1 << p)),
                dscp_prio: d.dscp_prio.iter().map(|(d, p)| (*d, *p)).collect(),
            }),
            None => Err(Error::Kernel {
                what: format!("read the DCB of {pf}"),
                errno: nix::errno::Errno::EOPNOTSUPP,
                said: None,
            }),
        }
    }

    fn roce_state(
        &self,
        at: &RocePort,
        kind: &RoceAttr,
        how: crate::net::roce::Reading,
    ) -> Result<RoceSettings> {
        crate::net::roce::files::read(at, kind, how)
    }

    fn set_roce(&self, at: &RocePort, attr: &RoceAttr) -> Result<()> {
        let _kernel = self.lock()?;
        let mut state = self.load()?;
        if let Some(errno) = state.refuse.get(attr.name()) {
            let errno = errno_named(errno)
                .ok_or_else(|| Error::internal(format!("fake hardware: unknown errno {errno}")))?;
            return Err(Error::Kernel {
                what: format!("set {} of RDMA device {}", attr.name(), at.device),
                errno,
                said: None,
            });
        }
        crate::net::roce::files::write(at, attr)?;
        state.calls.push(format!(
            "set_roce {} {} {}",
            at.device,
            at.port,
            attr.describe()
        ));
        self.save(&state)
    }

    fn move_rdma_device(&self, name: &str, from: &NetNs, to: BorrowedFd<'_>) -> Result<()> {
        let _kernel = self.lock()?;
        let mut state = self.load()?;
        let sysfs = sysfs_root();
        // The RDMA subsystem moves only a device it has.
        if let Some(sysfs) = &sysfs {
            if !super::fake_ipoib::device_exists(sysfs, name) {
                return Err(no_device(name, "the RDMA subsystem has no such device"));
            }
            // udev renamed it just after it appeared: the name read is gone.
            if state.udev_renames && state.just_registered.iter().any(|n| n == name) {
                state.just_registered.retain(|n| n != name);
                let new = super::fake_ipoib::udev_rename(sysfs, name)?;
                state.calls.push(format!("udev_rename {name} {new}"));
                self.save(&state)?;
                return Err(no_device(name, "the RDMA subsystem has no such device"));
            }
        }
        let inode = |fd: BorrowedFd<'_>| {
            nix::sys::stat::fstat(fd)
                .map(|st| st.st_ino)
                .map_err(|e| Error::internal(format!("move RDMA device {name}: bad netns fd: {e}")))
        };
        let host = host_netns()?;
        let (from_ino, to_ino) = (inode(from.fd())?, inode(to)?);
        let was = state.rdma_devices.get(name).cloned();
        let playing = std::time::Instant::now();
        let at = where_now(was.as_deref(), host);
        state.played_us += micros(playing);
        if state.rdma_mode.as_deref() == Some("exclusive") && at != from_ino {
            return Err(no_device(
                name,
                "the RDMA subsystem shows no such device to a caller in another namespace",
            ));
        }
        if at == to_ino {
            return Ok(()); // the kernel's no-op
        }
        // A refusal comes from the move itself, after the no-op check.
        refuse_move(&mut state, name).map_err(|e| self.saved_then(&state, e))?;
        let ns = format!("ns:{to_ino}");
        state.rdma_devices.insert(name.to_string(), ns.clone());
        state.calls.push(format!("move_rdma {name} {ns}"));
        self.save(&state)?;
        // The kernel re-creates an InfiniBand VF's IPoIB netdev.
        let playing = std::time::Instant::now();
        let played = match sysfs {
            Some(sysfs) => super::fake_ipoib::recreate(
                &sysfs,
                name,
                (at != host).then_some(at),
                to,
                super::fake_ipoib::Generation::named(state.ipoib_netns.as_deref()),
            ),
            None => Ok(()),
        };
        state.played_us += micros(playing);
        self.save(&state)?;
        played
    }
}

/// Microseconds since `t`.
fn micros(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}

impl Recorder {
    /// Save `state` (a refusal consumed a one-shot), then answer `e`.
    fn saved_then(&self, state: &FakeState, e: Error) -> Error {
        self.save(state).err().unwrap_or(e)
    }

    /// A driver rebind of VF `vf` of `pf`: its RDMA device unregistered
    /// (its name free for any other device), the driver's probe (20 ms,
    /// other rebinds may run meanwhile), then registered again under the
    /// first free `mlx5_%d`. `kernel` is the fake's lock, let go for the
    /// probe as the kernel's is.
    fn rebind(
        &self,
        sysfs: &std::path::Path,
        pf: &str,
        vf: u32,
        kernel: std::fs::File,
    ) -> Result<()> {
        let Some(unbound) = super::fake_ipoib::unregister(sysfs, pf, vf)? else {
            return Ok(());
        };
        drop(kernel);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _kernel = self.lock()?;
        let name = super::fake_ipoib::register(sysfs, &unbound)?;
        let mut state = self.load()?;
        state.calls.push(format!("register {name}"));
        if state.udev_renames {
            state.just_registered.push(name);
        }
        self.save(&state)
    }
}

/// The refusals `refuse` names for a move: `moveRdmaOnce` (one, as a busy
/// device gives) or `moveRdma` (every one).
fn refuse_move(state: &mut FakeState, name: &str) -> Result<()> {
    let refused =
        (state.refuse.remove("moveRdmaOnce")).or_else(|| state.refuse.get("moveRdma").cloned());
    match refused {
        Some(errno) => {
            let errno = errno_named(&errno)
                .ok_or_else(|| Error::internal(format!("fake hardware: unknown errno {errno}")))?;
            Err(Error::Kernel {
                what: format!("move RDMA device {name}"),
                errno,
                said: None,
            })
        }
        None => Ok(()),
    }
}

fn no_device(name: &str, why: &str) -> Error {
    Error::DeviceNotFound(format!("move RDMA device {name}: {why}"))
}

/// The inode of the host's namespace: the plugin's, where it started.
fn host_netns() -> Result<u64> {
    let path = format!("/proc/{}/ns/net", std::process::id());
    std::fs::metadata(&path)
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
        .map_err(|e| Error::internal(format!("fake hardware: {path}: {e}")))
}

/// The namespace (inode) a device recorded at `was` ("ns:<inode>"; none:
/// never moved, on the host) is in now: a namespace that died gave its
/// devices back to the host (rdma_dev_exit_net moves them to init_net).
fn where_now(was: Option<&str>, host: u64) -> u64 {
    let ino = was
        .and_then(|s| s.strip_prefix("ns:"))
        .and_then(|i| i.parse::<u64>().ok());
    match ino {
        Some(ino) if super::fake_ipoib::netns_alive(ino) => ino,
        _ => host,
    }
}
