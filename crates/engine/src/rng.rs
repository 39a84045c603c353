//! The engine's only source of randomness: SplitMix64, seeded from the configuration, so the same
//! seed always yields the same job ids, delays and event log.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max` (slightly biased for huge `max`, irrelevant at millisecond jitter).
    pub fn upto(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.next_u64() % (max + 1)
        }
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A version-4 UUID string, as AWS uses for job ids.
    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        Self::uuid_of(a, b)
    }

    /// The version-4 UUID string made of two draws.
    pub fn uuid_of(a: u64, b: u64) -> String {
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0x0fff,
            ((b >> 48) & 0x3fff) | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }

    /// 32 lowercase hex digits, as in SageMaker training job names made by Batch.
    pub fn hex32(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        Self::hex32_of(a, b)
    }

    /// 32 lowercase hex digits made of two draws.
    pub fn hex32_of(a: u64, b: u64) -> String {
        format!("{a:016x}{b:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(8).next_u64(), xs[0]);
    }

    #[test]
    fn uuid_shape() {
        let u = Rng::new(1).uuid();
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
    }

    #[test]
    fn upto_in_range() {
        let mut r = Rng::new(3);
        for _ in 0..1000 {
            assert!(r.upto(10) <= 10);
        }
        assert_eq!(r.upto(0), 0);
    }
}
