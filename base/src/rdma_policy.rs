//! `rdma`: what a rail does with its VF's RDMA device. One word for the
//! NAD, the plan, the node file and the doctor, each rule about it here.

use serde::{Deserialize, Deserializer, Serialize};

/// Move the VF's RDMA device with it (exclusive netns mode only)?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RdmaPolicy {
    /// Move it when there is one and the mode is exclusive; otherwise log.
    Auto,
    /// Fail ADD when there is none or the mode is shared.
    Required,
    Off,
}

/// The link a rail's VFs speak: it decides the policy a rail that names
/// none gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    Ethernet,
    InfiniBand,
}

/// Why `rdmaQoS` cannot go with `rdma: off`, in the words every reader uses.
pub const QOS_NEEDS_RDMA: &str =
    "sets the RDMA device's QoS, but rdma is off; set rdma to auto or required, or remove rdmaQoS";

/// The plan's (YAML or JSON) word, read as the NAD's and the node file's are.
impl<'de> Deserialize<'de> for RdmaPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        RdmaPolicy::from_word(&word).map_err(serde::de::Error::custom)
    }
}

impl RdmaPolicy {
    pub const WORDS: &'static str = "auto, required, off";

    /// The NAD's word; `None` for a word that is not one.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "auto" => Some(RdmaPolicy::Auto),
            "required" => Some(RdmaPolicy::Required),
            "off" => Some(RdmaPolicy::Off),
            _ => None,
        }
    }

    /// `parse`, or the one sentence every reader (NAD, node file, plan)
    /// gives for a word that is not one.
    pub fn from_word(word: &str) -> Result<Self, String> {
        Self::parse(word).ok_or_else(|| format!("{word:?} is not one of {}", Self::WORDS))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RdmaPolicy::Auto => "auto",
            RdmaPolicy::Required => "required",
            RdmaPolicy::Off => "off",
        }
    }

    /// A rail that names no policy: InfiniBand rails are RDMA rails
    /// (`required`); an Ethernet VF may or may not have a device (`auto`).
    pub fn default_for(link: LinkType) -> Self {
        match link {
            LinkType::InfiniBand => RdmaPolicy::Required,
            LinkType::Ethernet => RdmaPolicy::Auto,
        }
    }

    /// What a rail gets: the policy it names, else its link's default.
    pub fn or_default_for(asked: Option<Self>, link: LinkType) -> Self {
        asked.unwrap_or(Self::default_for(link))
    }

    /// A storage rail carries no RDMA unless its plan says so: the planner
    /// writes `off` into its NADs and node file entries.
    pub fn for_planned_rail(asked: Option<Self>, storage: bool) -> Option<Self> {
        asked.or(storage.then_some(RdmaPolicy::Off))
    }

    /// `rdmaQoS` with this policy: refused when it is off.
    pub fn allows_qos(self) -> Result<(), &'static str> {
        match self {
            RdmaPolicy::Off => Err(QOS_NEEDS_RDMA),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for RdmaPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_reads_back_and_others_are_none() {
        for p in [RdmaPolicy::Auto, RdmaPolicy::Required, RdmaPolicy::Off] {
            assert_eq!(RdmaPolicy::parse(p.as_str()), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{p}\""));
        }
        assert_eq!(RdmaPolicy::parse("sometimes"), None);
        // The plan's serde path says what the NAD's and node file's do.
        let e = serde_json::from_str::<RdmaPolicy>("\"sometimes\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("\"sometimes\" is not one of auto, required, off"),
            "{e}"
        );
        assert_eq!(RdmaPolicy::parse("Required"), None);
    }

    #[test]
    fn infiniband_rails_require_rdma_ethernet_ones_take_it_when_there() {
        let ib = RdmaPolicy::or_default_for(None, LinkType::InfiniBand);
        assert_eq!(ib, RdmaPolicy::Required);
        let eth = RdmaPolicy::or_default_for(None, LinkType::Ethernet);
        assert_eq!(eth, RdmaPolicy::Auto);
        let asked = RdmaPolicy::or_default_for(Some(RdmaPolicy::Off), LinkType::InfiniBand);
        assert_eq!(asked, RdmaPolicy::Off);
    }

    #[test]
    fn storage_rails_default_off_and_qos_needs_rdma() {
        assert_eq!(
            RdmaPolicy::for_planned_rail(None, true),
            Some(RdmaPolicy::Off)
        );
        assert_eq!(RdmaPolicy::for_planned_rail(None, false), None);
        let asked = Some(RdmaPolicy::Auto);
        assert_eq!(RdmaPolicy::for_planned_rail(asked, true), asked);
        assert!(RdmaPolicy::Off.allows_qos().is_err());
        assert!(RdmaPolicy::Auto.allows_qos().is_ok());
    }
}
