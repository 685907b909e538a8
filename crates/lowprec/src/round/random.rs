//! The counter-based generator of stochastic rounding.
//!
//! Element `i` of a call draws the 32-bit word `R = `[`random_bits`]`(seed, i)`: a pure
//! function of the seed and the element's index, so that results do not depend on the
//! thread count, the chunk size or the order of evaluation. Rounding goes up when
//! `floor(f · 2^32) + R ≥ 2^32`, where `f = (x − lower)/(upper − lower)` is the exact
//! fraction of the gap, so `P(up) = floor(f · 2^32)/2^32` (within 2^−32 of `f`), for binary32
//! and binary64 inputs alike. With `r` hardware bits, both terms keep their top `r` bits.
//!
//! The 32-bit hash is two rounds of a keyed integer finalizer (Wellons' `lowbias32`
//! constants), a bijection of the counter for each key: cheap in SIMD lanes (32-bit
//! multiplies) and of ample quality for rounding decisions.

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function.
#[inline(always)]
pub(crate) const fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 32-bit integer finalizer: a bijection of `u32` with strong avalanche.
#[inline(always)]
pub(crate) const fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x21f0_aaad);
    x ^= x >> 15;
    x = x.wrapping_mul(0x735a_2d97);
    x ^ (x >> 15)
}

/// The two 32-bit keys of the block of 2^32 indices whose high half is `hi`.
#[inline]
pub(crate) const fn block_keys(seed: u64, hi: u32) -> [u32; 2] {
    let a = splitmix64(splitmix64(seed ^ GOLDEN).wrapping_add(GOLDEN.wrapping_mul(hi as u64 + 1)));
    [a as u32, (a >> 32) as u32]
}

/// The keyed 32-bit hash of a counter.
#[inline(always)]
pub(crate) const fn hash32(lo: u32, k0: u32, k1: u32) -> u32 {
    lowbias32(lowbias32(lo ^ k0) ^ k1)
}

/// The 32 random bits that stochastic rounding uses for element `index` under `seed`.
///
/// ```
/// use lowprec::round::random_bits;
/// assert_eq!(random_bits(7, 1_000), random_bits(7, 1_000));
/// assert_ne!(random_bits(7, 1_000), random_bits(8, 1_000));
/// assert_ne!(random_bits(7, 1_000), random_bits(7, 1_001));
/// ```
pub fn random_bits(seed: u64, index: u64) -> u32 {
    let k = block_keys(seed, (index >> 32) as u32);
    hash32(index as u32, k[0], k[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_balanced_and_uncorrelated_between_neighbours() {
        let n = 1u64 << 16;
        let mut ones = [0u32; 32];
        let mut agree = 0u64;
        let mut prev = random_bits(3, 0);
        for i in 1..n {
            let r = random_bits(3, i);
            for (b, c) in ones.iter_mut().enumerate() {
                *c += (r >> b) & 1;
            }
            agree += (!(r ^ prev)).count_ones() as u64;
            prev = r;
        }
        // Each bit is 1 with probability 1/2: n/2 ± 4σ with σ = sqrt(n)/2.
        let sigma = (n as f64).sqrt() / 2.0;
        for c in ones {
            assert!(((c as f64) - n as f64 / 2.0).abs() < 4.0 * sigma, "{c}");
        }
        // Neighbouring words agree on half their bits.
        let total = (n - 1) * 32;
        let s = (total as f64).sqrt() / 2.0;
        assert!(((agree as f64) - total as f64 / 2.0).abs() < 4.0 * s);
    }

    #[test]
    fn high_index_blocks_differ() {
        assert_ne!(random_bits(0, 5), random_bits(0, 5 + (1 << 32)));
    }
}
