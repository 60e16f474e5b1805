//! Where a JSON array ends, found without parsing it: square brackets
//! counted outside strings, strings and their escapes stepped over. Syntax
//! is not checked (whoever uses the text parses it). A pool of 16k inline
//! allocations is 1.4 MB of flat objects, so the scan takes sixteen bytes
//! at a time: a block with no backslash and no bracket outside a string
//! only changes whether the scan ends inside a string (the parity of its
//! quotes), and only the rare other block is read byte by byte.

/// Texts shorter than this are searched byte by byte (see `find`).
const SMALL: usize = 64 * 1024;

/// Where `needle` first occurs in `hay`. A config of ordinary size is
/// searched byte by byte: memchr's first search asks the CPU for its
/// features, and each CPUID instruction is a VM exit, which costs more on
/// a virtualised node than searching a few KiB.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    if hay.len() < SMALL {
        return hay.windows(needle.len()).position(|w| w == needle);
    }
    memchr::memmem::find(hay, needle)
}

/// Where byte `c` first occurs in `hay` (byte by byte when small, as `find`).
pub fn find_byte(c: u8, hay: &[u8]) -> Option<usize> {
    if hay.len() < SMALL {
        return hay.iter().position(|&b| b == c);
    }
    memchr::memchr(c, hay)
}

/// Where byte `c` last occurs in `hay` (byte by byte when small, as `find`).
pub fn rfind_byte(c: u8, hay: &[u8]) -> Option<usize> {
    if hay.len() < SMALL {
        return hay.iter().rposition(|&b| b == c);
    }
    memchr::memrchr(c, hay)
}

/// The index just past the array that opens at `start` (`b[start]` is
/// `[`), or `None` if it does not close.
pub fn end_of_array(b: &[u8], start: usize) -> Option<usize> {
    let mut scan = Scan::default();
    let (blocks, rest) = b.get(start..)?.as_chunks::<16>();
    let mut at = start;
    for block in blocks {
        if let Some(end) = scan.block(block) {
            return Some(at + end);
        }
        at += 16;
    }
    rest.iter().position(|&c| scan.byte(c)).map(|i| at + i + 1)
}

#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Scan {
    /// One byte; true when it closes the array.
    fn byte(&mut self, c: u8) -> bool {
        if self.in_string {
            match (self.escaped, c) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return false;
        }
        match c {
            b'"' => self.in_string = true,
            b'[' => self.depth += 1,
            b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }

    /// Sixteen bytes: `Some(i)` when the array ends just before byte `i`.
    fn block(&mut self, block: &[u8; 16]) -> Option<usize> {
        let m = masks(block);
        if !self.escaped && m.backslash == 0 {
            // Bit j: inside a string once byte j is read.
            let mut inside = prefix_xor(m.quote);
            if self.in_string {
                inside ^= 0xffff;
            }
            if m.bracket & !inside == 0 {
                self.in_string = inside & 0x8000 != 0;
                return None;
            }
        }
        self.bytes(block)
    }

    /// A block with a backslash or a bracket: byte by byte. Kept out of
    /// line, so the common path keeps the block in a register.
    #[cold]
    #[inline(never)]
    fn bytes(&mut self, block: &[u8; 16]) -> Option<usize> {
        block.iter().position(|&c| self.byte(c)).map(|i| i + 1)
    }
}

/// Bit j set where byte j of a 16-byte block is a quote, a backslash, a
/// square bracket.
struct Masks {
    quote: u32,
    backslash: u32,
    bracket: u32,
}

/// SSE2, which every x86_64 has.
#[cfg(target_arch = "x86_64")]
fn masks(block: &[u8; 16]) -> Masks {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x};
    let (lo, hi) = halves(block);
    // SAFETY: these intrinsics only need SSE2, which is part of the x86_64
    // baseline (every x86_64 CPU has it), and none of them touches memory.
    let (quote, backslash, open, close) = unsafe {
        let v = _mm_set_epi64x(hi as i64, lo as i64);
        let eq = |c: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)));
        (eq(b'"'), eq(b'\\'), eq(b'['), eq(b']'))
    };
    Masks {
        quote: quote as u32,
        backslash: backslash as u32,
        bracket: (open | close) as u32,
    }
}

/// Elsewhere, eight bytes at a time in a word.
#[cfg(not(target_arch = "x86_64"))]
fn masks(block: &[u8; 16]) -> Masks {
    word_masks(block)
}

#[cfg(any(not(target_arch = "x86_64"), test))]
fn word_masks(block: &[u8; 16]) -> Masks {
    let (lo, hi) = halves(block);
    let eq = |c: u8| pack(bytes_equal(lo, c)) | pack(bytes_equal(hi, c)) << 8;
    Masks {
        quote: eq(b'"'),
        backslash: eq(b'\\'),
        bracket: eq(b'[') | eq(b']'),
    }
}

/// The block as two little-endian words.
fn halves(block: &[u8; 16]) -> (u64, u64) {
    let v = u128::from_le_bytes(*block);
    (v as u64, (v >> 64) as u64)
}

/// Bit 7 of every byte of `w` that equals `c` (exact: no carries between bytes).
#[cfg(any(not(target_arch = "x86_64"), test))]
fn bytes_equal(w: u64, c: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LO * u64::from(c));
    !(((x & !HI) + !HI) | x) & HI
}

/// Bit 7 of byte j of `m` to bit j.
#[cfg(any(not(target_arch = "x86_64"), test))]
fn pack(m: u64) -> u32 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// Bit j becomes the parity of bits 0..=j.
fn prefix_xor(mut m: u32) -> u32 {
    m ^= m << 1;
    m ^= m << 2;
    m ^= m << 4;
    m ^= m << 8;
    m & 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Byte by byte, the reference.
    fn slow(b: &[u8], start: usize) -> Option<usize> {
        let mut scan = Scan::default();
        b[start..]
            .iter()
            .position(|&c| scan.byte(c))
            .map(|i| start + i + 1)
    }

    #[test]
    fn finds_the_end_past_strings_escapes_and_nesting() {
        let doc = br#"{"a":[{"n":"x]\"]"},[1,[2]],"\\"],"b":[]}"#;
        let start = doc.iter().position(|&c| c == b'[').unwrap();
        let end = end_of_array(doc, start).unwrap();
        assert_eq!(&doc[start..end], br#"[{"n":"x]\"]"},[1,[2]],"\\"]"#);
        assert_eq!(end_of_array(b"[1,2", 0), None);
        assert_eq!(end_of_array(br#"["]"#, 0), None, "a ] inside a string");
    }

    #[test]
    fn matches_byte_by_byte_on_a_big_pool() {
        let mut doc = b"[".to_vec();
        for i in 0..2000 {
            doc.extend_from_slice(
                format!(r#"{{"nodeName": "gpu-{i}", "prefix": "10.0.{i}.0/31"}},"#).as_bytes(),
            );
        }
        doc.extend_from_slice(br#"{"nodeName": "x\"]["}] , "tail": []"#);
        assert_eq!(end_of_array(&doc, 0), slow(&doc, 0));
        assert!(end_of_array(&doc, 0).is_some());
    }

    fn by_bytes(block: &[u8], c: u8) -> u32 {
        block
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == c)
            .fold(0u32, |m, (j, _)| m | 1 << j)
    }

    proptest! {
        #[test]
        fn sixteen_at_a_time_is_byte_by_byte(
            body in proptest::collection::vec(
                prop_oneof![
                    Just(b'"'), Just(b'\\'), Just(b'['), Just(b']'), Just(b'{'),
                    Just(b'}'), Just(b'a'), Just(b','), Just(b' '),
                ],
                0..400,
            )
        ) {
            let mut doc = b"[".to_vec();
            doc.extend_from_slice(&body);
            prop_assert_eq!(end_of_array(&doc, 0), slow(&doc, 0));
        }

        #[test]
        fn both_ways_of_masking_a_block_agree(block in proptest::array::uniform16(
            prop_oneof![Just(b'"'), Just(b'\\'), Just(b'['), Just(b']'), any::<u8>()]
        )) {
            let (fast, word) = (masks(&block), word_masks(&block));
            let exact = |c| by_bytes(&block, c);
            prop_assert_eq!((fast.quote, word.quote), (exact(b'"'), exact(b'"')));
            prop_assert_eq!((fast.backslash, word.backslash), (exact(b'\\'), exact(b'\\')));
            let brackets = exact(b'[') | exact(b']');
            prop_assert_eq!((fast.bracket, word.bracket), (brackets, brackets));
        }

        /// Small and big texts are searched differently, with one answer.
        #[test]
        fn searches_agree_with_memchr_on_either_side_of_small(
            head in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'"'), Just(b'{')], 0..64),
            pad in prop_oneof![Just(0usize), Just(SMALL)],
            needle in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'"')], 1..4),
        ) {
            let mut hay = vec![b' '; pad];
            hay.extend_from_slice(&head);
            prop_assert_eq!(find(&hay, &needle), memchr::memmem::find(&hay, &needle));
            prop_assert_eq!(find_byte(b'{', &hay), memchr::memchr(b'{', &hay));
            prop_assert_eq!(rfind_byte(b'"', &hay), memchr::memrchr(b'"', &hay));
        }
    }
}
