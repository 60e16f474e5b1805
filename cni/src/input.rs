//! The config as it comes on stdin, read once and kept where it was read.
//!
//! A NAD with 16k inline allocations is 1.4 MB. Read into a growing buffer,
//! that is some 350 fresh pages, each a fault (a costly one in a VM) that
//! costs more than everything railcni then does with the text. So a config
//! that does not fit the first 64 KiB goes into a buffer whose data starts
//! on a 2 MiB boundary, advised to huge pages: one fault for all of it.
//! Parts of it (the cut-out `staticAllocations`) are handed on as ranges of
//! that same buffer, never copied.

use std::io::{self, Read};
use std::ops::{Deref, Range};

/// What fits here is read as is (every ordinary config does).
const FIRST: usize = 64 << 10;
/// The huge page size on x86_64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;
/// Address space set aside for a big config: untouched, so it costs nothing
/// but what is written. A bigger config falls back to a growing buffer.
const RESERVED: usize = 16 << 20;

/// Bytes of stdin: `buf[range]`.
pub struct Input {
    buf: Vec<u8>,
    range: Range<usize>,
}

impl Input {
    /// All of stdin. A pipe (as every runtime passes the config) is first
    /// widened to 1 MiB, so a big config's writer and this process take
    /// turns a few times instead of dozens. Best effort: a file, or a lower
    /// `fs.pipe-max-size`, stays as it is.
    pub fn stdin() -> io::Result<Input> {
        let stdin = io::stdin();
        let _ = nix::fcntl::fcntl(&stdin, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
        Input::read_from(stdin.lock())
    }

    pub fn read_from(mut reader: impl Read) -> io::Result<Input> {
        let mut head = Vec::with_capacity(FIRST);
        (&mut reader).take(FIRST as u64).read_to_end(&mut head)?;
        if head.len() < FIRST {
            return Ok(Input::from(head));
        }
        // Zeroed by the allocator's fresh mapping: not a page is touched yet.
        let mut buf = vec![0u8; RESERVED];
        // `align_offset` may decline (usize::MAX): then the data just starts
        // unaligned, on ordinary pages.
        let start = buf.as_ptr().align_offset(HUGE).min(HUGE);
        advise_huge_pages(&mut buf[start..]);
        let mut end = start + head.len();
        buf[start..end].copy_from_slice(&head);
        loop {
            if end == buf.len() {
                let mut all = buf[start..end].to_vec();
                reader.read_to_end(&mut all)?;
                return Ok(Input::from(all));
            }
            match reader.read(&mut buf[end..]) {
                Ok(0) => break,
                Ok(n) => end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Input {
            buf,
            range: start..end,
        })
    }

    /// The bytes at `part` (of these bytes), in the same buffer.
    pub fn into_part(self, part: Range<usize>) -> Input {
        let start = (self.range.start + part.start).min(self.range.end);
        let end = (self.range.start + part.end).clamp(start, self.range.end);
        Input {
            buf: self.buf,
            range: start..end,
        }
    }
}

/// Ask for huge pages under `region` (it starts on a 2 MiB boundary).
/// Advice only: where the kernel has none to give, nothing changes.
fn advise_huge_pages(region: &mut [u8]) {
    let Some(addr) = std::ptr::NonNull::new(region.as_mut_ptr().cast()) else {
        return;
    };
    // SAFETY: MADV_HUGEPAGE only changes how the kernel backs this range of
    // our own live allocation; its contents and validity are untouched.
    let _ = unsafe {
        nix::sys::mman::madvise(
            addr,
            region.len(),
            nix::sys::mman::MmapAdvise::MADV_HUGEPAGE,
        )
    };
}

impl From<Vec<u8>> for Input {
    fn from(buf: Vec<u8>) -> Input {
        let range = 0..buf.len();
        Input { buf, range }
    }
}

impl Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// Equal bytes (wherever they sit in their buffers).
impl PartialEq for Input {
    fn eq(&self, other: &Input) -> bool {
        **self == **other
    }
}

/// A copy of the bytes only (not the reserved space around them).
impl Clone for Input {
    fn clone(&self) -> Input {
        Input::from(self.to_vec())
    }
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Input({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_big_inputs_read_whole_and_big_ones_start_on_a_huge_page() {
        let small = b"{\"cniVersion\":\"1.1.0\"}".to_vec();
        assert_eq!(&*Input::read_from(&small[..]).unwrap(), &small[..]);
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let read = Input::read_from(&big[..]).unwrap();
        assert_eq!(&*read, &big[..]);
        assert_eq!(read.as_ptr().align_offset(HUGE), 0);
        let exactly_first = vec![7u8; FIRST];
        assert_eq!(
            &*Input::read_from(&exactly_first[..]).unwrap(),
            &exactly_first[..]
        );
    }

    #[test]
    fn a_config_past_the_reserved_space_still_reads_whole() {
        let huge = vec![b'x'; RESERVED + 12345];
        assert_eq!(Input::read_from(&huge[..]).unwrap().len(), huge.len());
    }

    #[test]
    fn a_part_is_a_range_of_the_same_bytes() {
        let input = Input::from(b"0123456789".to_vec());
        let part = input.into_part(2..5);
        assert_eq!(&*part, b"234");
        assert_eq!(&*part.clone(), b"234");
        assert_eq!(&*part.into_part(1..10), b"34", "clamped to the part");
    }
}
