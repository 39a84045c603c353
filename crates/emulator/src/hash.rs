//! FNV-1a, the emulator's one stable hash: the same value on every run and platform, for ids,
//! ETags, seeds and request fingerprints that must not change between runs.

/// FNV-1a's offset basis: where a hash of nothing starts.
const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0100_0000_01b3;

/// FNV-1a of `bytes`.
pub(crate) fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    fnv1a_from(OFFSET_BASIS, bytes)
}

/// FNV-1a of `bytes` with `seed` mixed into the offset basis.
pub(crate) fn fnv1a_seeded(seed: u64, bytes: impl IntoIterator<Item = u8>) -> u64 {
    fnv1a_from(seed ^ OFFSET_BASIS, bytes)
}

fn fnv1a_from(start: u64, bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes
        .into_iter()
        .fold(start, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_has_its_published_values() {
        // The FNV reference test vectors.
        assert_eq!(fnv1a(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_seeded(0, *b"a"), fnv1a(*b"a"));
    }
}
