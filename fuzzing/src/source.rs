//! Sources of choices.

/// Where a generator draws its choices from. Exhausted sources return zeros, which always
/// select the smallest choice, so every input generates something.
pub trait Source {
    /// The next byte.
    fn byte(&mut self) -> u8;

    /// A little-endian u32.
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A little-endian u64.
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A number in `0..n` (`0` if `n` is 0). Small ranges take one byte.
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            0
        } else if n <= 256 {
            u64::from(self.byte()) % n
        } else if n <= 1 << 32 {
            u64::from(self.u32()) % n
        } else {
            self.u64() % n
        }
    }

    /// A number in `0..=max`.
    fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.u64()
        } else {
            self.below(max + 1)
        }
    }

    /// A coin with probability `num / 256`.
    fn chance(&mut self, num: u8) -> bool {
        self.byte() < num
    }

    /// One of `items` (which must not be empty).
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A seeded pseudo-random source (SplitMix64), for the smoke tests.
#[derive(Debug, Clone)]
pub struct Rng {
    pub(crate) state: u64,
    pub(crate) buf: u64,
    pub(crate) left: u8,
}

impl Rng {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng {
            state: seed,
            buf: 0,
            left: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }
}

impl Source for Rng {
    fn byte(&mut self) -> u8 {
        if self.left == 0 {
            self.buf = self.next_u64();
            self.left = 8;
        }
        let b = self.buf as u8;
        self.buf >>= 8;
        self.left -= 1;
        b
    }
}

/// A byte slice as a source: its bytes in order, then zeros.
#[derive(Debug, Clone)]
pub struct ByteSource<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> ByteSource<'a> {
    /// A source reading `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { data, pos: 0 }
    }
}

impl Source for ByteSource<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }
}

#[cfg(feature = "arbitrary")]
impl Source for arbitrary::Unstructured<'_> {
    fn byte(&mut self) -> u8 {
        <u8 as arbitrary::Arbitrary<'_>>::arbitrary(self).unwrap_or(0)
    }
}
