//! InfiniBand GUIDs (node and port GUID of a VF): `00:11:22:33:44:55:66:77`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guid(pub u64);

impl FromStr for Guid {
    type Err = String;

    /// 8 bytes in hex, colon-separated; all-zero and all-ones are refused
    /// (they mean "unset" and "broadcast" to the subnet manager).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a GUID like 00:11:22:33:44:55:66:77 (8 bytes)");
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 8 || parts.iter().any(|p| p.len() != 2) {
            return Err(bad());
        }
        let mut v = 0u64;
        for p in parts {
            v = v << 8 | u64::from(u8::from_str_radix(p, 16).map_err(|_| bad())?);
        }
        if v == 0 || v == u64::MAX {
            return Err(format!("{s} is not a usable GUID (all zeros or all ones)"));
        }
        Ok(Guid(v))
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0.to_be_bytes();
        let parts: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
        f.write_str(&parts.join(":"))
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Guid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        // A GUID read back from the PF may be all zeros (unset): keep it.
        if s == "00:00:00:00:00:00:00:00" {
            return Ok(Guid(0));
        }
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prints_and_refuses() {
        let g: Guid = "00:11:22:33:44:55:66:77".parse().unwrap();
        assert_eq!(g.0, 0x0011_2233_4455_6677);
        assert_eq!(g.to_string(), "00:11:22:33:44:55:66:77");
        for bad in [
            "",
            "00:11:22:33:44:55:66",
            "00:11:22:33:44:55:66:77:88",
            "0:11:22:33:44:55:66:77",
            "zz:11:22:33:44:55:66:77",
            "00:00:00:00:00:00:00:00",
            "ff:ff:ff:ff:ff:ff:ff:ff",
        ] {
            assert!(bad.parse::<Guid>().is_err(), "{bad}");
        }
        let back: Guid = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }
}
