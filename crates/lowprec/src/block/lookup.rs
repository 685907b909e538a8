//! NVFP4's element step in binary32 lanes by table lookup: the E2M1 code of
//! `y = |x| ⊗ r`, `r = RN32(1/s)`, read from the bits of `y`, with a flag on every block
//! holding an element whose rounding could differ from that of the exact quotient `|x| / s`.
//!
//! For `y ≥ 0` with bits `b`, `⌊b / 2^21⌋` is `y`'s exponent field and its top two fraction
//! bits: the quarter binade `[2^e·(1 + j/4), 2^e·(1 + (j+1)/4))` holding `y`. Every midpoint
//! of E2M1's grid (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, and 7, above which it saturates)
//! starts such a quarter, so inside a quarter the rounded magnitude is constant:
//!
//! ```text
//! idx  = clamp(⌊b / 2^21⌋, 499, 520)      499: y < 0.25 (→ 0);  520: y ≥ 8 (→ 6, saturated)
//! mag  = LUT[idx mod 32]                    (22 entries, one vector permute)
//! code = mag | 8·sign(x)
//! near = b ≥ 499 · 2^21  and  (b + 16) mod 2^21 < 32      (within 16 ulps of a quarter start)
//! ```
//!
//! `y` differs from `q = |x|/s` by less than `2^−22.9·q` (one rounding of the reciprocal in
//! binary64, one to binary32, one of the product), at most 4 units in the last place of `y`
//! at these magnitudes. An element whose `y` and `q` lie on different sides of a midpoint
//! `μ` (or `q = μ`, a tie) has `|y − μ| ≤ |y − q|`, so it is `near` (every `μ` has bits
//! `≡ 0 mod 2^21`); an element that is not near therefore rounds exactly as `q` does. Near
//! flags also fall on the quarter starts that are not midpoints (about `2^−16` of the
//! elements): those blocks are redone by division, which costs time, never bits.
//!
//! Counts of an unflagged block: saturated when `y ≥ 7` (`idx ≥ 519`), flushed when
//! `x ≠ 0` and `y < 0.25` (`idx = 499`).
//!
//! The AVX-512 and AVX2 kernels (`crate::simd::e2m1_lookup`) compute the same bits with the
//! same product and the same tests; the portable loop here serves every other machine.

pub(crate) use crate::simd::quarter::{Tally, IDX_HI, IDX_LO, IDX_SAT, IDX_ZERO, SHIFT, TOL};
use crate::FloatFormat;

/// The magnitude code of each quarter index `idx` at `LUT[idx mod 32]`, from E2M1's own
/// rounding (to nearest even, saturating) of the quarter's middle.
pub(crate) fn lut() -> [u32; 32] {
    let e2m1 = super::fused::Elem::<f32>::new(&FloatFormat::FP4_E2M1).expect("E2M1 has a step");
    let mut t = [0u32; 32];
    for idx in IDX_LO..=IDX_HI {
        let mid = f32::from_bits((idx << SHIFT) | (1 << (SHIFT - 1)));
        t[(idx % 32) as usize] = u32::from(e2m1.round(mid).0);
    }
    t
}

/// The step over whole blocks of 16: block `k`, whose scale code is `scales[k]`, has its
/// elements `x` become `y = |x| ⊗ recip[scales[k]]`, their codes (`mag | 8·sign(x)`) go to
/// `codes`, and, unless `values` is empty, their values `±vtab[scales[k]][mag]` (the sign
/// of `x`) to `values`. The indices of flagged blocks go to the front of `flagged`; their
/// codes and values are to be replaced, and they are not counted.
///
/// # Panics
///
/// On lengths that do not match, or more than `2^16` blocks (an internal error).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn e2m1_blocks(
    lut: &[u32; 32],
    x: &[f32],
    scales: &[u8],
    recip: &[f32; 256],
    vtab: &[[f32; 8]],
    codes: &mut [u8],
    values: &mut [f32],
    flagged: &mut [u16],
) -> Tally {
    // (the AVX-512 entry checks every length; the portable loop indexes with checks)
    if let Some(t) = crate::simd::e2m1_lookup(lut, x, scales, recip, vtab, codes, values, flagged) {
        return t;
    }
    let mut t = Tally::default();
    for (k, (xb, cb)) in x
        .chunks_exact(16)
        .zip(codes.chunks_exact_mut(16))
        .enumerate()
    {
        let r = recip[scales[k] as usize];
        let (mut near, mut sat, mut fl) = (false, 0u64, 0u64);
        let mut mags = [0u32; 16];
        for ((&e, c), m) in xb.iter().zip(cb.iter_mut()).zip(mags.iter_mut()) {
            let xb = e.to_bits();
            let ab = xb & 0x7fff_ffff;
            let yb = (f32::from_bits(ab) * r).to_bits();
            let idx = (yb >> SHIFT).clamp(IDX_LO, IDX_HI);
            *m = lut[(idx % 32) as usize];
            *c = (*m | ((xb >> 28) & 8)) as u8;
            near |= yb >= IDX_LO << SHIFT && (yb.wrapping_add(TOL) & ((1 << SHIFT) - 1)) < 2 * TOL;
            sat += u64::from(idx >= IDX_SAT);
            fl += u64::from(ab != 0 && idx < IDX_ZERO);
        }
        if !values.is_empty() {
            let vt = &vtab[scales[k] as usize];
            for ((v, &e), &m) in values[k * 16..k * 16 + 16].iter_mut().zip(xb).zip(&mags) {
                *v = f32::from_bits(vt[m as usize].to_bits() | (e.to_bits() & 0x8000_0000));
            }
        }
        if near {
            flagged[t.flagged] = u16::try_from(k).expect("at most 2^16 blocks");
            t.flagged += 1;
        } else {
            t.saturated += sat;
            t.flushed += fl;
        }
    }
    t
}

/// The exact-scale variant's table: [`lut`]'s code in the low four bits, and bit 4 set
/// where the quarter starts at a midpoint whose tie goes down (to the even neighbour below:
/// 0.25, 1.25, 2.5, 5), so that a `y` exactly there gets one less.
pub(crate) fn lut_exact() -> [u32; 32] {
    let e2m1 = super::fused::Elem::<f32>::new(&FloatFormat::FP4_E2M1).expect("E2M1 has a step");
    let mut t = lut();
    for idx in IDX_ZERO..=IDX_HI {
        let start = f32::from_bits(idx << SHIFT);
        let code = u32::from(e2m1.round(start).0);
        if code < t[(idx % 32) as usize] {
            t[(idx % 32) as usize] |= 16;
        }
    }
    t
}

/// E2M1 of exactly scaled elements (MXFP4: `y = |x| ⊗ 2^−e` is exact wherever the code is
/// not 0), blocks of `b` elements (a multiple of 16): block `k` scales by `inv[k]`, its
/// codes go to `codes` and, unless `values` is empty, its values `±E2M1(mag) ⊗ up[k]` to
/// `values`. The quarter table ([`lut_exact`]) gives every code, ties included: a `y`
/// exactly at a quarter start whose midpoint rounds down takes one less. Returns
/// `(saturated, flushed)`, the same counts as [`super::fused::blocks`] with E2M1's step.
///
/// # Panics
///
/// On lengths that do not match (an internal error).
#[inline(always)]
pub(crate) fn e2m1_exact_blocks(
    lut: &[u32; 32],
    x: &[f32],
    b: usize,
    inv: &[f32],
    up: &[f32],
    codes: &mut [u8],
    values: &mut [f32],
) -> (u64, u64) {
    // (the AVX-512 entry checks every length; the portable loop indexes with checks)
    if let Some(t) = crate::simd::e2m1_exact(lut, x, b, inv, up, codes, values) {
        return t;
    }
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let (mut sat, mut fl) = (0u64, 0u64);
    for (i, (&e, c)) in x.iter().zip(codes.iter_mut()).enumerate() {
        let k = i / b;
        let xb = e.to_bits();
        let ab = xb & 0x7fff_ffff;
        let yb = (f32::from_bits(ab) * inv[k]).to_bits();
        let idx = (yb >> SHIFT).clamp(IDX_LO, IDX_HI);
        let t = lut[(idx % 32) as usize];
        let start = yb & ((1 << SHIFT) - 1) == 0;
        let mag = (t & 15) - u32::from(start && t & 16 != 0);
        *c = (mag | ((xb >> 28) & 8)) as u8;
        if !values.is_empty() {
            let v = E2M1[mag as usize] * up[k];
            values[i] = f32::from_bits(v.to_bits() | (xb & 0x8000_0000));
        }
        sat += u64::from(idx >= IDX_SAT);
        fl += u64::from(ab != 0 && mag == 0);
    }
    (sat, fl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::fused::Elem;

    /// Every binary32 `y` in [0, 9] on a fine comb and around every quarter start: a `y`
    /// that is not near has the code E2M1's own rounding gives, and the counts agree.
    #[test]
    fn lookup_equals_rounding_away_from_quarter_starts() {
        let e2m1 = Elem::<f32>::new(&FloatFormat::FP4_E2M1).unwrap();
        let t = lut();
        let mut checked = 0;
        let mut ys: Vec<u32> = (0..=9.0f32.to_bits()).step_by(97).collect();
        for q in 0..(9.0f32.to_bits() >> SHIFT) + 1 {
            for d in 0..64u32 {
                ys.push((q << SHIFT).wrapping_add(d).wrapping_sub(32));
            }
        }
        for yb in ys.into_iter().filter(|&b| b <= 9.0f32.to_bits()) {
            let y = f32::from_bits(yb);
            let idx = (yb >> SHIFT).clamp(IDX_LO, IDX_HI);
            let near =
                yb >= IDX_LO << SHIFT && (yb.wrapping_add(TOL) & ((1 << SHIFT) - 1)) < 2 * TOL;
            let (code, _, sat) = e2m1.round(y);
            if !near {
                assert_eq!(t[(idx % 32) as usize], u32::from(code), "y = {y:e}");
                assert_eq!(idx >= IDX_SAT, sat, "y = {y:e}");
                assert_eq!(idx < IDX_ZERO, code == 0, "y = {y:e}");
                checked += 1;
            }
        }
        assert!(checked > 1_000_000, "{checked}");
    }

    /// NVFP4-like scales `s = e4m3 · g` and elements at and around `μ · s` for every
    /// midpoint `μ`: every block the step does not flag has exactly the codes, values and
    /// counts of binary64 division; flags are rare on random data.
    #[test]
    fn unflagged_blocks_round_as_the_exact_quotient() {
        let exact = Elem::<f64>::new(&FloatFormat::FP4_E2M1).unwrap();
        let e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        let mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0];
        let t = lut();
        let mut bits = crate::block::test_bits(7);
        let (mut blocks_checked, mut random_flagged, mut random_blocks) = (0, 0, 0);
        for round in 0..6000 {
            let g = (f32::from_bits(0x3000_0000 + (bits() as u32 % 0x1800_0000))) as f64;
            let sb = crate::FloatFormat::FP8_E4M3.decode(1 + bits() % 126);
            let s = sb * g;
            let r = (1.0 / s) as f32;
            if !r.is_normal() {
                continue;
            }
            // every other block: one element within 24 ulps of `μ · s` for a midpoint `μ`
            let adversarial = round % 2 == 0;
            let at = (bits() % 16) as usize;
            let x: Vec<f32> = (0..16)
                .map(|i| {
                    let v = if adversarial && i == at {
                        let mu = mids[(bits() % 8) as usize] * s;
                        let b = (mu as f32).to_bits() as i64 + (bits() % 49) as i64 - 24;
                        f32::from_bits(b as u32)
                    } else {
                        ((bits() >> 11) as f64 / (1u64 << 53) as f64 * 7.0 * s) as f32
                    };
                    if i % 3 == 0 {
                        -v
                    } else {
                        v
                    }
                })
                .collect();
            let mut vt = vec![[0f32; 8]; 256];
            vt[1] = std::array::from_fn(|j| (e2m1[j] * s) as f32);
            let mut recip = [0f32; 256];
            recip[1] = r;
            let (mut c, mut v, mut fl) = ([0u8; 16], [0f32; 16], [0u16; 1]);
            let tally = e2m1_blocks(&t, &x, &[1], &recip, &vt, &mut c, &mut v, &mut fl);
            if !adversarial {
                random_blocks += 1;
                random_flagged += tally.flagged;
            }
            if tally.flagged == 1 {
                continue;
            }
            let (mut sat, mut flushed) = (0, 0);
            for i in 0..16 {
                let (code, val, s8) = exact.round(x[i] as f64 / s);
                assert_eq!(c[i], code, "x = {:e}, s = {s:e}", x[i]);
                assert_eq!(
                    v[i].to_bits(),
                    ((val * s) as f32).to_bits(),
                    "x = {:e}",
                    x[i]
                );
                sat += u64::from(s8);
                flushed += u64::from(x[i] != 0.0 && code & 7 == 0);
            }
            assert_eq!((tally.saturated, tally.flushed), (sat, flushed));
            blocks_checked += 1;
        }
        assert!(blocks_checked > 3000, "{blocks_checked}");
        assert!(
            random_flagged * 50 < random_blocks,
            "{random_flagged} of {random_blocks}"
        );
    }

    /// The portable loop and the AVX-512 and AVX2 kernels give the same bits, flags and counts.
    #[test]
    fn portable_and_vector_kernels_agree() {
        let t = lut();
        // the AVX2 kernel's byte tables rely on it: every y below 1/4 has the code 0
        assert_eq!(
            (
                t[(IDX_LO % 32) as usize],
                lut_exact()[(IDX_LO % 32) as usize]
            ),
            (0, 0)
        );
        let mut bits = crate::block::test_bits(11);
        // an odd number of blocks: the AVX2 kernel's pairs and its last block alone
        let n = 16 * 301;
        let recip: [f32; 256] = std::array::from_fn(|k| {
            if k == 0 {
                0.0
            } else {
                f32::from_bits(0x3c00_0000 + (bits() as u32 % 0x0800_0000))
            }
        });
        let scales: Vec<u8> = (0..n / 16)
            .map(|k| if k % 37 == 0 { 0 } else { bits() as u8 })
            .collect();
        // some elements right at a quarter start of `y` (flagged), the rest spread widely
        let x: Vec<f32> = (0..n)
            .map(|i| {
                let v = f32::from_bits(0x3800_0000 + (bits() as u32 % 0x0d00_0000));
                let r = recip[scales[i / 16] as usize];
                match i % 5 {
                    // ∞ ⊗ 0 (a zero scale) is the CPU's default NaN, sign bit set: the
                    // comparisons must be unsigned on every path
                    _ if i % 997 == 5 => f32::INFINITY,
                    0 => -v,
                    1 => 0.0,
                    2 => -0.0,
                    3 if i % 160 == 3 && r > 0.0 => 1.25 / r,
                    _ => v,
                }
            })
            .collect();
        let vtab: Vec<[f32; 8]> = (0..256)
            .map(|k| std::array::from_fn(|j| (j * k) as f32))
            .collect();
        let run = |level| {
            crate::simd::set_max_level(level);
            let (mut c, mut v, mut f) = (vec![0u8; n], vec![0f32; n], vec![0u16; n / 16]);
            let tally = e2m1_blocks(&t, &x, &scales, &recip, &vtab, &mut c, &mut v, &mut f);
            let (mut c2, mut f2) = (vec![0u8; n], vec![0u16; n / 16]);
            let tally2 = e2m1_blocks(&t, &x, &scales, &recip, &[], &mut c2, &mut [], &mut f2);
            crate::simd::set_max_level(crate::simd::Level::Avx512);
            assert_eq!((&c, &f, tally), (&c2, &f2, tally2));
            (
                c,
                v.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                f[..tally.flagged].to_vec(),
                tally,
            )
        };
        let portable = run(crate::simd::Level::Portable);
        let best = run(crate::simd::Level::Avx512);
        assert_eq!(best, portable);
        assert_eq!(run(crate::simd::Level::Avx2), portable);
        assert!(
            best.3.flagged > 0 && best.3.saturated > 0 && best.3.flushed > 0,
            "{:?}",
            best.3
        );
    }

    /// Every binary32 `y` in [0, 9] around and at every quarter start, and on a comb: the
    /// exact-scale table gives E2M1's own rounding (ties to even included) and counts,
    /// with values, and the AVX-512 and portable kernels agree.
    #[test]
    fn exact_lookup_equals_rounding_everywhere() {
        let e2m1 = Elem::<f32>::new(&FloatFormat::FP4_E2M1).unwrap();
        let t = lut_exact();
        let mut ys: Vec<u32> = (0..=9.0f32.to_bits()).step_by(89).collect();
        for q in 0..(9.0f32.to_bits() >> SHIFT) + 1 {
            for d in 0..8u32 {
                ys.push((q << SHIFT).wrapping_add(d).wrapping_sub(4));
            }
        }
        ys.retain(|&b| b <= 9.0f32.to_bits());
        ys.truncate(ys.len() / 32 * 32);
        let x: Vec<f32> = ys
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if i % 3 == 0 {
                    -f32::from_bits(b)
                } else {
                    f32::from_bits(b)
                }
            })
            .collect();
        let blocks = x.len() / 32;
        let (inv, up) = (vec![1.0f32; blocks], vec![0.25f32; blocks]);
        let mut expect = (vec![0u8; x.len()], vec![0f32; x.len()], 0u64, 0u64);
        for (i, &e) in x.iter().enumerate() {
            let (c, r, s) = e2m1.round(e);
            expect.0[i] = c;
            expect.1[i] = r * 0.25;
            expect.2 += u64::from(s);
            expect.3 += u64::from(e != 0.0 && c & 7 == 0);
        }
        for level in [
            crate::simd::Level::Avx512,
            crate::simd::Level::Avx2,
            crate::simd::Level::Portable,
        ] {
            crate::simd::set_max_level(level);
            let (mut c, mut v) = (vec![0u8; x.len()], vec![0f32; x.len()]);
            let (sat, fl) = e2m1_exact_blocks(&t, &x, 32, &inv, &up, &mut c, &mut v);
            let mut c2 = vec![0u8; x.len()];
            let counts2 = e2m1_exact_blocks(&t, &x, 32, &inv, &up, &mut c2, &mut []);
            crate::simd::set_max_level(crate::simd::Level::Avx512);
            assert_eq!(c, expect.0, "{level:?}");
            assert_eq!(c2, expect.0, "{level:?}");
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v), bits(&expect.1), "{level:?}");
            assert_eq!((sat, fl), (expect.2, expect.3), "{level:?}");
            assert_eq!(counts2, (sat, fl));
        }
        assert!(expect.2 > 0 && expect.3 > 0);
    }

    /// Random blocks of 16, 32 and 64 with factors over a wide range, zero factors (MX's
    /// NaN blocks) and non-finite elements: every vector kernel gives the portable loop's
    /// codes, values and counts.
    #[test]
    fn exact_kernels_agree_on_wide_and_special_inputs() {
        let t = lut_exact();
        let mut bits = crate::block::test_bits(23);
        for b in [16, 32, 64] {
            let blocks = 96;
            let n = blocks * b;
            let inv: Vec<f32> = (0..blocks)
                .map(|k| match k % 11 {
                    0 => 0.0,
                    _ => f32::from_bits(0x3000_0000 + (bits() as u32 % 0x1c00_0000)),
                })
                .collect();
            let up: Vec<f32> = inv.iter().map(|&f| 1.0 / f).collect();
            let x: Vec<f32> = (0..n)
                .map(|i| match i % 101 {
                    7 => f32::INFINITY,
                    8 => f32::NEG_INFINITY,
                    9 => f32::NAN,
                    10 => -0.0,
                    _ => f32::from_bits(bits() as u32),
                })
                .collect();
            let run = |level| {
                crate::simd::set_max_level(level);
                let (mut c, mut v) = (vec![0u8; n], vec![0f32; n]);
                let k = e2m1_exact_blocks(&t, &x, b, &inv, &up, &mut c, &mut v);
                let mut c2 = vec![0u8; n];
                let k2 = e2m1_exact_blocks(&t, &x, b, &inv, &up, &mut c2, &mut []);
                crate::simd::set_max_level(crate::simd::Level::Avx512);
                assert_eq!((&c, k), (&c2, k2), "{level:?}");
                (c, v.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), k)
            };
            let portable = run(crate::simd::Level::Portable);
            assert!(portable.2 .0 > 0 && portable.2 .1 > 0, "{:?}", portable.2);
            for level in [crate::simd::Level::Avx2, crate::simd::Level::Avx512] {
                assert_eq!(run(level), portable, "{level:?}, blocks of {b}");
            }
        }
    }
}
