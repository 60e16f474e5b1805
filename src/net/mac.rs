//! Ethernet MAC addresses: `[u8; 6]` in memory, `02:00:00:00:00:01` in text.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// A 6-byte hardware address; `None` for any other length (IPoIB, none).
    pub fn from_slice(bytes: &[u8]) -> Option<Mac> {
        bytes.try_into().ok().map(Mac)
    }

    pub fn is_unicast(self) -> bool {
        self.0[0] & 1 == 0 && self.0 != [0; 6]
    }
}

impl FromStr for Mac {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a MAC address like 02:00:00:00:00:01");
        let mut mac = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut mac {
            let part = parts.next().filter(|p| p.len() == 2).ok_or_else(bad)?;
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Mac(mac))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_hw_addr(&self.0))
    }
}

/// Any hardware address as colon-separated hex, as iproute2 prints it.
pub fn format_hw_addr(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prints_and_round_trips_through_json() {
        let m: Mac = "02:0A:00:00:00:ff".parse().unwrap();
        assert_eq!(m.0, [2, 10, 0, 0, 0, 255]);
        assert_eq!(m.to_string(), "02:0a:00:00:00:ff");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Mac>(&json).unwrap(), m);
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "2:00:00:00:00:01",
            "zz:00:00:00:00:01",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
        assert!(!Mac([1, 0, 0, 0, 0, 1]).is_unicast());
        assert!(!Mac([0; 6]).is_unicast());
        assert_eq!(Mac::from_slice(&[0; 20]), None);
    }
}
