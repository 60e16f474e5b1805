//! FNV-1a (64-bit): the lease file's checksum, byte by byte (a format: a
//! lease file names it as `fnv1a64:`). The marks of validated configs are
//! named by BLAKE3 (`railcni_ipam::config::validated`), not by this.

/// The offset basis.
const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0100_0000_01b3;

/// One FNV-1a step: `h` with `v` mixed in.
fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(PRIME)
}

/// FNV-1a 64 of `bytes`, byte by byte.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(BASIS, |h, b| mix(h, u64::from(*b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
