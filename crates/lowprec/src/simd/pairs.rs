//! The vector kernels of the pair tables of two-operand operations on 8-bit codes
//! (`crate::ops::PairTable`): each table entry gathered (`vpgatherdd`, sixteen lanes per
//! step on AVX-512, eight on AVX2) by its index `(a & mask_a) · 2^bits_b + (b & mask_b)`;
//! an entry holds the result code in its low byte and six counters of one bit each in the
//! 4-bit fields above it, summed in the vector lanes for fifteen steps (a field stays below
//! 16) and then added to the totals.

/// Apply the table `t` (length `2^(bits_a + bits_b)`, entries `code | Σ flag_f · 2^(8+4f)`)
/// to `a` and `b` into `out` (all as long): the sums of the six flag fields, or `None`, with
/// nothing written, when the CPU has neither AVX-512 nor AVX2.
pub(crate) fn pair_u8(
    t: &[u32],
    bits_a: u32,
    bits_b: u32,
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> Option<[u64; 6]> {
    #[cfg(target_arch = "x86_64")]
    {
        let level = super::active();
        if level != super::Level::Portable {
            assert!(
                bits_a <= 8
                    && bits_b <= 8
                    && t.len() == 1 << (bits_a + bits_b)
                    && a.len() == out.len()
                    && b.len() == out.len()
            );
        }
        // SAFETY (both arms): the level's features were detected; every gathered index is
        // below 2^(bits_a + bits_b) = t.len() (the operands are masked to their widths),
        // and every load and store goes through a checked slice of sixteen (eight).
        match level {
            super::Level::Avx512 => {
                return Some(unsafe { x86::pair_u8(t, bits_a, bits_b, a, b, out) })
            }
            super::Level::Avx2 => {
                return Some(unsafe { x86::pair_u8_avx2(t, bits_a, bits_b, a, b, out) })
            }
            super::Level::Portable => {}
        }
    }
    let _ = (t, bits_a, bits_b, a, b, out);
    None
}

/// The scalar tail of both kernels: the elements `whole..` of `a`, `b`, `out`, their flag
/// fields added to `sums`.
fn tail(
    t: &[u32],
    bits_a: u32,
    bits_b: u32,
    (a, b, out): (&[u8], &[u8], &mut [u8]),
    sums: &mut [u64; 6],
) {
    let (mask_a, mask_b) = ((1usize << bits_a) - 1, (1usize << bits_b) - 1);
    for ((&x, &y), o) in a.iter().zip(b).zip(out) {
        let e = t[((x as usize & mask_a) << bits_b) | (y as usize & mask_b)];
        *o = e as u8;
        for (f, s) in sums.iter_mut().enumerate() {
            *s += u64::from((e >> (8 + 4 * f)) & 1);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Add the six 4-bit fields of every lane of `acc` to `sums`.
    #[inline(always)]
    unsafe fn flush(acc: __m512i, sums: &mut [u64; 6]) {
        let nibble = _mm512_set1_epi32(0xf);
        for (f, s) in sums.iter_mut().enumerate() {
            let field = _mm512_and_si512(
                _mm512_srlv_epi32(acc, _mm512_set1_epi32(4 * f as i32)),
                nibble,
            );
            *s += _mm512_reduce_add_epi32(field) as u64;
        }
    }

    /// See [`super::pair_u8`].
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn pair_u8(
        t: &[u32],
        bits_a: u32,
        bits_b: u32,
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
    ) -> [u64; 6] {
        let ma = _mm512_set1_epi32((1i32 << bits_a) - 1);
        let mb = _mm512_set1_epi32((1i32 << bits_b) - 1);
        let shift = _mm_cvtsi32_si128(bits_b as i32);
        let mut sums = [0u64; 6];
        let mut acc = _mm512_setzero_si512();
        let mut steps = 0;
        let whole = out.len() / 16 * 16;
        for ((xa, xb), o) in a[..whole]
            .chunks_exact(16)
            .zip(b[..whole].chunks_exact(16))
            .zip(out[..whole].chunks_exact_mut(16))
        {
            let va = _mm512_cvtepu8_epi32(_mm_loadu_si128(xa.as_ptr().cast()));
            let vb = _mm512_cvtepu8_epi32(_mm_loadu_si128(xb.as_ptr().cast()));
            let idx = _mm512_or_si512(
                _mm512_sll_epi32(_mm512_and_si512(va, ma), shift),
                _mm512_and_si512(vb, mb),
            );
            let e = _mm512_i32gather_epi32::<4>(idx, t.as_ptr().cast());
            _mm_storeu_si128(o.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(e));
            acc = _mm512_add_epi32(acc, _mm512_srli_epi32::<8>(e));
            steps += 1;
            if steps == 15 {
                flush(acc, &mut sums);
                acc = _mm512_setzero_si512();
                steps = 0;
            }
        }
        flush(acc, &mut sums);
        let rest = (&a[whole..], &b[whole..], &mut out[whole..]);
        super::tail(t, bits_a, bits_b, rest, &mut sums);
        sums
    }

    /// Add the six 4-bit fields of every lane of `acc` to `sums`.
    #[inline(always)]
    unsafe fn flush8(acc: __m256i, sums: &mut [u64; 6]) {
        let nibble = _mm256_set1_epi32(0xf);
        for (f, s) in sums.iter_mut().enumerate() {
            let field = _mm256_and_si256(
                _mm256_srlv_epi32(acc, _mm256_set1_epi32(4 * f as i32)),
                nibble,
            );
            let half = _mm_add_epi32(
                _mm256_castsi256_si128(field),
                _mm256_extracti128_si256::<1>(field),
            );
            let pair = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
            let one = _mm_add_epi32(pair, _mm_shuffle_epi32::<0b01>(pair));
            *s += _mm_cvtsi128_si32(one) as u64;
        }
    }

    /// See [`super::pair_u8`]: eight lanes per step.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pair_u8_avx2(
        t: &[u32],
        bits_a: u32,
        bits_b: u32,
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
    ) -> [u64; 6] {
        let ma = _mm256_set1_epi32((1i32 << bits_a) - 1);
        let mb = _mm256_set1_epi32((1i32 << bits_b) - 1);
        let shift = _mm_cvtsi32_si128(bits_b as i32);
        // the low byte of every 32-bit lane into the lane's first four bytes, then the two
        // halves' first words together
        let low_bytes = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let join = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
        let mut sums = [0u64; 6];
        let mut acc = _mm256_setzero_si256();
        let mut steps = 0;
        let whole = out.len() / 8 * 8;
        for ((xa, xb), o) in a[..whole]
            .chunks_exact(8)
            .zip(b[..whole].chunks_exact(8))
            .zip(out[..whole].chunks_exact_mut(8))
        {
            let va = _mm256_cvtepu8_epi32(_mm_loadl_epi64(xa.as_ptr().cast()));
            let vb = _mm256_cvtepu8_epi32(_mm_loadl_epi64(xb.as_ptr().cast()));
            let idx = _mm256_or_si256(
                _mm256_sll_epi32(_mm256_and_si256(va, ma), shift),
                _mm256_and_si256(vb, mb),
            );
            let e = _mm256_i32gather_epi32::<4>(t.as_ptr().cast(), idx);
            let codes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(e, low_bytes), join);
            _mm_storel_epi64(o.as_mut_ptr().cast(), _mm256_castsi256_si128(codes));
            acc = _mm256_add_epi32(acc, _mm256_srli_epi32::<8>(e));
            steps += 1;
            if steps == 15 {
                flush8(acc, &mut sums);
                acc = _mm256_setzero_si256();
                steps = 0;
            }
        }
        flush8(acc, &mut sums);
        let rest = (&a[whole..], &b[whole..], &mut out[whole..]);
        super::tail(t, bits_a, bits_b, rest, &mut sums);
        sums
    }
}
