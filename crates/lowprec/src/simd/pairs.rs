//! The AVX-512 kernel of the pair tables of two-operand operations on 8-bit codes
//! (`crate::ops::PairTable`): sixteen elements per step, each table entry gathered
//! (`vpgatherdd`) by its index `(a & mask_a) · 2^bits_b + (b & mask_b)`; an entry holds the
//! result code in its low byte and six counters of one bit each in the 4-bit fields above
//! it, summed in the vector lanes for fifteen steps (a field stays below 16) and then
//! added to the totals.

/// Apply the table `t` (length `2^(bits_a + bits_b)`, entries `code | Σ flag_f · 2^(8+4f)`)
/// to `a` and `b` into `out` (all as long): the sums of the six flag fields, or `None`, with
/// nothing written, when the CPU has no AVX-512.
pub(crate) fn pair_u8(
    t: &[u32],
    bits_a: u32,
    bits_b: u32,
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> Option<[u64; 6]> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        assert!(
            bits_a <= 8
                && bits_b <= 8
                && t.len() == 1 << (bits_a + bits_b)
                && a.len() == out.len()
                && b.len() == out.len()
        );
        // SAFETY: AVX-512F/BW were detected; every gathered index is below
        // 2^(bits_a + bits_b) = t.len() (the operands are masked to their widths), and
        // every load and store goes through a checked slice of sixteen.
        return Some(unsafe { x86::pair_u8(t, bits_a, bits_b, a, b, out) });
    }
    let _ = (t, bits_a, bits_b, a, b, out);
    None
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
        let (mask_a, mask_b) = ((1usize << bits_a) - 1, (1usize << bits_b) - 1);
        for ((&x, &y), o) in a[whole..].iter().zip(&b[whole..]).zip(&mut out[whole..]) {
            let e = t[((x as usize & mask_a) << bits_b) | (y as usize & mask_b)];
            *o = e as u8;
            for (f, s) in sums.iter_mut().enumerate() {
                *s += u64::from((e >> (8 + 4 * f)) & 1);
            }
        }
        sums
    }
}
