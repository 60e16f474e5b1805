//! IPAM failures, each with the CNI code it is reported with.

use std::fmt;

use cni::{Error, Reply};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpamError {
    /// A failure with a spec code: 4 env, 5 I/O, 7 config, 11 lock busy, 50 STATUS.
    Spec(Error),
    /// 110: the node's prefix has no free address.
    Exhausted(String),
    /// 111: the lease file fails its checksum or does not parse.
    Corrupt(String),
    /// 112: a requested address is outside the prefix, reserved or taken.
    AddressUnavailable(String),
    /// 113: CHECK found no lease for the attachment.
    NoLease(String),
}

impl IpamError {
    pub fn config(field: &str, msg: impl fmt::Display) -> Self {
        IpamError::Spec(Error::config(field, msg.to_string()))
    }

    /// `what` failed with `e`: its errno kept (a read-only, full or
    /// forbidden state dir each named with what to do).
    pub fn io(what: impl Into<String>, e: &std::io::Error) -> Self {
        IpamError::Spec(Error::Io(cni::IoFailure::new(what, e)))
    }

    /// An I/O-class failure with no errno behind it.
    pub fn io_plain(what: impl Into<String>) -> Self {
        IpamError::Spec(Error::Io(cni::IoFailure::plain(what)))
    }
}

impl From<base::node_file::NodeFileError> for IpamError {
    fn from(e: base::node_file::NodeFileError) -> Self {
        use base::node_file::NodeFileError;
        match &e {
            NodeFileError::Unreadable { path, error } => {
                IpamError::io(format!("cannot read node config {}", path.display()), error)
            }
            NodeFileError::Invalid { .. } | NodeFileError::OtherMachine { .. } => {
                IpamError::config("node file", e)
            }
        }
    }
}

impl From<Error> for IpamError {
    fn from(e: Error) -> Self {
        IpamError::Spec(e)
    }
}

impl Reply for IpamError {
    fn code(&self) -> u32 {
        match self {
            IpamError::Spec(e) => e.code(),
            IpamError::Exhausted(_) => 110,
            IpamError::Corrupt(_) => 111,
            IpamError::AddressUnavailable(_) => 112,
            IpamError::NoLease(_) => 113,
        }
    }

    fn summary(&self) -> &'static str {
        match self {
            IpamError::Spec(e) => e.summary(),
            IpamError::Exhausted(_) => "address pool exhausted",
            IpamError::Corrupt(_) => "lease file corrupt",
            IpamError::AddressUnavailable(_) => "requested address unavailable",
            IpamError::NoLease(_) => "no lease",
        }
    }

    fn details(&self) -> String {
        match self {
            IpamError::Spec(e) => e.details(),
            IpamError::Exhausted(m)
            | IpamError::Corrupt(m)
            | IpamError::AddressUnavailable(m)
            | IpamError::NoLease(m) => m.clone(),
        }
    }
}

impl fmt::Display for IpamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.details())
    }
}

impl std::error::Error for IpamError {}
