//! A small deterministic generator for the frame kernels' randomized tests (xorshift64*).

/// Xorshift64* state; seed it with any non-zero value.
pub(crate) struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `Some(f())` except one time in `null_every`.
    pub fn maybe<T>(&mut self, null_every: u64, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        (self.below(null_every) != 0).then(|| f(self))
    }
}
