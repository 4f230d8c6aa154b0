//! What the integration tests of stcheck's crates share (a dev-dependency only, never
//! published): a loopback HTTP server ([`http`]), running a command-line binary and reading
//! what it printed ([`cli`]), the corpus manifest as types ([`corpus`]), and a reader that notes
//! where its bytes went ([`Noting`]).

pub mod cli;
pub mod corpus;
pub mod http;

/// `{:?}` of `x`, cut to `n` characters (a corpus file can hold a 65,536-character name).
pub fn short<T: std::fmt::Debug>(x: &T, n: usize) -> String {
    let s = format!("{x:?}");
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// A valid file of `n` one-element F32 tensors named `layer.{i}.weight` (a header of about
/// 80 bytes per tensor), and the end of its header (8 + N): the input of the tests that check
/// where a header's bytes are read into.
pub fn many_tensors(n: usize) -> (Vec<u8>, usize) {
    use stcheck::write::{serialize, TensorSpec};
    let names: Vec<String> = (0..n).map(|i| format!("layer.{i}.weight")).collect();
    let specs: Vec<TensorSpec<'_>> = names
        .iter()
        .map(|name| TensorSpec::new(name, stcheck::Dtype::F32, &[], &[0u8; 4]))
        .collect();
    let file = serialize(&specs, &[]).expect("serialize");
    let len = u64::from_le_bytes(file[..8].try_into().expect("8 bytes"));
    let end = 8 + usize::try_from(len).expect("fits");
    (file, end)
}

/// A reader over `bytes` that notes each read: the stream position it started at, the address
/// of the memory it wrote to, and how many bytes it gave. A test can tell from it that bytes
/// were read once, in order, into the memory that keeps them rather than into a buffer they
/// were then copied from.
#[derive(Debug)]
pub struct Noting<'b> {
    bytes: &'b [u8],
    pos: usize,
    /// `(position, address, bytes)` of each read, in order.
    pub reads: Vec<(usize, usize, usize)>,
}

impl<'b> Noting<'b> {
    /// A reader of `bytes` from `pos` on.
    pub fn new(bytes: &'b [u8], pos: usize) -> Self {
        Noting {
            bytes,
            pos,
            reads: Vec::new(),
        }
    }

    /// Where the next read starts.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Panics unless every byte of `range` of the stream was written at `base` plus its offset
    /// from `range.start` (and each read that touched the range stayed inside it).
    pub fn assert_read_into(&self, range: std::ops::Range<usize>, base: usize) {
        let mut covered = 0;
        for &(pos, addr, k) in self
            .reads
            .iter()
            .filter(|r| r.2 > 0 && range.contains(&r.0))
        {
            assert_eq!(
                addr,
                base + (pos - range.start),
                "the bytes at {pos}..{} were read into another buffer",
                pos + k
            );
            assert!(pos + k <= range.end, "a read went past {}", range.end);
            covered += k;
        }
        assert_eq!(covered, range.len(), "reads: {:?}", self.reads);
    }
}

impl std::io::Read for Noting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = buf.len().min(self.bytes.len() - self.pos);
        buf[..k].copy_from_slice(&self.bytes[self.pos..self.pos + k]);
        self.reads.push((self.pos, buf.as_ptr() as usize, k));
        self.pos += k;
        Ok(k)
    }
}
