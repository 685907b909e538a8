//! Block Hadamard rotations: each run of `b` elements along the last axis (`b` a power of
//! two) becomes `y = x · diag(s) · H_b / √b`, `H_b` Sylvester's matrix
//! (`H[i][j] = (−1)^popcount(i & j)`), `s` the sign vector. The transform is orthogonal:
//! the inverse is `x = (y · H_b / √b) · diag(s)`.
//!
//! Arithmetic: without `bf16`, the fast Walsh–Hadamard butterflies in binary64, then one
//! multiplication by `1/√b` (exact for `b = 4^k`: 16, 64, …). With `bf16`, TransformerEngine's
//! arithmetic: the inputs in binary32, the butterflies in binary32, `⊗ RN32(1/√b)`, `+ 0` (a
//! GEMM's accumulator starts at +0, so an all-zero run gives +0, never −0), then one
//! rounding to BF16 (nearest even). That is binary32 then BF16, a double rounding, as TE's
//! GEMM with a binary32 accumulator gives (an exact sum rounded once to BF16 can differ: for
//! `(1, 2^−8, 2^−30, 0, …)` TE gives 1, a single rounding 1 + 2^−7). The butterflies are one
//! order of the binary32 additions; where the order matters TE's own result depends on its
//! GEMM's order (the vectors of `tests/vectors/te_nvfp4.csv` are order-independent). The
//! inverse is binary64 and not rounded.

use super::axes::{Rotation, Signs};

/// TransformerEngine's fixed sign vector (`get_wgrad_sign_vector`, torchao's
/// `DEFAULT_SIGN_VECTOR`).
pub const TE_SIGNS: [i8; 16] = [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1];

/// The sign vector of a rotation.
pub fn signs(r: &Rotation) -> Vec<f64> {
    (0..r.size)
        .map(|i| match r.signs {
            Signs::Ones => 1.0,
            Signs::Te => TE_SIGNS.get(i).copied().unwrap_or(1) as f64,
            Signs::Seeded(seed) => {
                if crate::round::random_bits(seed, i as u64) & 1 == 1 {
                    -1.0
                } else {
                    1.0
                }
            }
        })
        .collect()
}

/// In-place Walsh–Hadamard transform (unnormalised, Sylvester order) of one block, in the
/// arithmetic of `T` (binary64, or binary32 for TransformerEngine's RHT).
#[inline(always)]
fn fwht<T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>>(v: &mut [T]) {
    let n = v.len();
    let mut h = 1;
    while h < n {
        for i in (0..n).step_by(2 * h) {
            for j in i..i + h {
                let (a, b) = (v[j], v[j + h]);
                v[j] = a + b;
                v[j + h] = a - b;
            }
        }
        h *= 2;
    }
}

/// `x` rotated, block by block along rows of `cols` (a multiple of `r.size`); with `r.bf16`
/// in TransformerEngine's arithmetic ([`forward_bf16`]).
pub fn forward(r: &Rotation, x: &[f64], cols: usize) -> Vec<f64> {
    debug_assert!(cols.is_multiple_of(r.size));
    if r.bf16 {
        return forward_bf16(r, x).into_iter().map(f64::from).collect();
    }
    let mut out = x.to_vec();
    f64_blocks(r, &mut out, true);
    out
}

/// Rotate whole blocks of `v` in place, binary64, unrounded: forward `v ⊗ s`, [`fwht`],
/// `⊗ k`; inverse [`fwht`], `⊗ k ⊗ s` (`k = 1/√size`), compiled for the widest vector unit.
fn f64_blocks(r: &Rotation, v: &mut [f64], forward: bool) {
    f64_blocks_from::<f64>(r, &[], v, forward)
}

/// [`f64_blocks`] of `x` (converted to binary64 on the way; empty: `v` in place) into `v`.
fn f64_blocks_from<I: crate::round::Float>(r: &Rotation, x: &[I], v: &mut [f64], forward: bool) {
    let s = signs(r);
    let k = 1.0 / (r.size as f64).sqrt();
    crate::simd::dispatch(F64Blocks {
        x,
        v,
        s: &s,
        k,
        forward,
    })
}

/// See [`f64_blocks_from`].
struct F64Blocks<'a, I> {
    x: &'a [I],
    v: &'a mut [f64],
    s: &'a [f64],
    k: f64,
    forward: bool,
}

/// One butterfly stage `H` of [`fwht`] on a fixed-size block (nothing when `H ≥ N`): the
/// lower of a pair takes `a + b`, the upper `a − b` (the same operations as the loop).
#[inline(always)]
fn stage<const N: usize, const H: usize>(b: &mut [f64; N]) {
    if H >= N {
        return;
    }
    let mut o = [0f64; N];
    for i in 0..N {
        o[i] = if i & H == 0 {
            b[i] + b[i ^ H]
        } else {
            b[i ^ H] - b[i]
        };
    }
    *b = o;
}

impl<I: crate::round::Float> F64Blocks<'_, I> {
    /// Blocks of a size known here: [`fwht`]'s additions stage by stage on a fixed-size
    /// array (the same operations in the same order, so the same bits), vectorised.
    #[inline(always)]
    fn fixed<const N: usize>(self) {
        let k = self.k;
        let s: &[f64; N] = self.s.try_into().expect("N signs");
        for (j, b) in self.v.chunks_exact_mut(N).enumerate() {
            let b: &mut [f64; N] = b.try_into().expect("chunks of N");
            if let Some(xb) = self.x.get(j * N..(j + 1) * N) {
                for i in 0..N {
                    b[i] = xb[i].to_f64();
                }
            }
            if self.forward {
                for i in 0..N {
                    b[i] *= s[i];
                }
            }
            stage::<N, 1>(b);
            stage::<N, 2>(b);
            stage::<N, 4>(b);
            stage::<N, 8>(b);
            stage::<N, 16>(b);
            stage::<N, 32>(b);
            stage::<N, 64>(b);
            for i in 0..N {
                b[i] = if self.forward {
                    b[i] * k
                } else {
                    b[i] * k * s[i]
                };
            }
        }
    }
}

impl<I: crate::round::Float> crate::simd::Kernel for F64Blocks<'_, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        if !self.x.is_empty() && matches!(self.s.len(), 16 | 32 | 64 | 128) {
            (self.v.iter_mut().zip(self.x)).for_each(|(o, v)| *o = v.to_f64());
            if crate::simd::fwht_f64(self.v, self.s, self.k, self.forward) {
                return;
            }
        } else if crate::simd::fwht_f64(self.v, self.s, self.k, self.forward) {
            return;
        }
        match self.s.len() {
            16 => self.fixed::<16>(),
            32 => self.fixed::<32>(),
            64 => self.fixed::<64>(),
            128 => self.fixed::<128>(),
            n => {
                if !self.x.is_empty() {
                    (self.v.iter_mut().zip(self.x)).for_each(|(o, v)| *o = v.to_f64());
                }
                for b in self.v.chunks_mut(n) {
                    if self.forward {
                        b.iter_mut().zip(self.s).for_each(|(v, s)| *v *= s);
                        fwht(b);
                        b.iter_mut().for_each(|v| *v *= self.k);
                    } else {
                        fwht(b);
                        b.iter_mut()
                            .zip(self.s)
                            .for_each(|(v, s)| *v = *v * self.k * s);
                    }
                }
            }
        }
    }
}

/// TransformerEngine's RHT arithmetic on inputs of any type: each input rounded to binary32,
/// binary32 butterflies and scaling, `+0`, rounded to BF16; the BF16 values as binary32.
pub fn forward_bf16<I: crate::round::Float>(r: &Rotation, x: &[I]) -> Vec<f32> {
    use rayon::prelude::*;
    let s: Vec<f32> = signs(r).iter().map(|&v| v as f32).collect();
    let k = 1.0f32 / (r.size as f32).sqrt();
    let mut out = vec![0f32; x.len()];
    // pieces of whole blocks, fixed by the length (the result does not depend on threads)
    let piece = r.size * (4096 / r.size).max(1);
    let run = |(o, b): (&mut [f32], &[I])| crate::simd::dispatch(Bf16Piece { o, x: b, s: &s, k });
    if x.len() >= crate::block::PARALLEL_MIN {
        out.par_chunks_mut(piece)
            .zip(x.par_chunks(piece))
            .for_each(run);
    } else {
        out.chunks_mut(piece).zip(x.chunks(piece)).for_each(run);
    }
    out
}

/// The type a rotation's output is held in, with the rotation of a piece of whole blocks
/// into it: binary32 for TransformerEngine's BF16 output ([`forward_bf16_into`]), binary64
/// for the unrounded rotation ([`forward_into`]).
pub(crate) trait Rotated: crate::round::Float {
    /// The rotation `r` of `x` (whole blocks) into `out` (as long), on the calling thread.
    fn rotate_into<I: crate::round::Float>(r: &Rotation, x: &[I], out: &mut [Self]);
}

impl Rotated for f32 {
    fn rotate_into<I: crate::round::Float>(r: &Rotation, x: &[I], out: &mut [f32]) {
        forward_bf16_into(r, x, out)
    }
}

impl Rotated for f64 {
    fn rotate_into<I: crate::round::Float>(r: &Rotation, x: &[I], out: &mut [f64]) {
        forward_into(r, x, out)
    }
}

/// [`forward`] (not rounded) of a piece of whole blocks into `out` (as long), on the
/// calling thread: the same operations in the same order, so the same bits.
pub fn forward_into<I: crate::round::Float>(r: &Rotation, x: &[I], out: &mut [f64]) {
    f64_blocks_from(r, x, out, true);
}

/// [`forward_bf16`] of a piece of whole blocks into `out` (as long), on the calling thread.
pub fn forward_bf16_into<I: crate::round::Float>(r: &Rotation, x: &[I], out: &mut [f32]) {
    let s: Vec<f32> = signs(r).iter().map(|&v| v as f32).collect();
    let k = 1.0f32 / (r.size as f32).sqrt();
    crate::simd::dispatch(Bf16Piece {
        o: out,
        x,
        s: &s,
        k,
    })
}

/// A piece of [`forward_bf16`] (whole blocks of `s.len()`), compiled for the widest vector
/// unit of the CPU.
struct Bf16Piece<'a, I> {
    o: &'a mut [f32],
    x: &'a [I],
    s: &'a [f32],
    k: f32,
}

impl<I: crate::round::Float> crate::simd::Kernel for Bf16Piece<'_, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (s, k, n) = (self.s, self.k, self.s.len());
        if let (Ok(s16), Some(x32)) = (<&[f32; 16]>::try_from(s), I::as_f32_slice(self.x)) {
            if crate::simd::rht16_bf16(x32, s16, k, self.o) {
                return;
            }
        }
        if let Ok(s16) = <[f32; 16]>::try_from(s) {
            // TE's size: one vector per block, every step on a fixed-size array
            for (o, b) in self.o.chunks_exact_mut(16).zip(self.x.chunks_exact(16)) {
                let mut v = [0f32; 16];
                for i in 0..16 {
                    v[i] = (b[i].to_f64() as f32) * s16[i];
                }
                // (the barrier keeps the compiler from vectorising across blocks with
                // gathers and scatters, slower than one vector per block)
                let mut v = std::hint::black_box(v);
                fwht16(&mut v);
                for i in 0..16 {
                    o[i] = bf16_rne(v[i] * k + 0.0);
                }
            }
            return;
        }
        for (o, b) in self.o.chunks_mut(n).zip(self.x.chunks(n)) {
            o.iter_mut()
                .zip(b.iter().zip(s))
                .for_each(|(o, (v, s))| *o = (v.to_f64() as f32) * s);
            fwht(o);
            o.iter_mut().for_each(|v| *v = bf16_rne(*v * k + 0.0));
        }
    }
}

/// [`fwht`] of 16 binary32 values, the same additions in the same order, as whole-vector
/// steps: stage `h` pairs lane `i` with lane `i ^ h` (a lane shuffle); the lower lane of
/// a pair takes `a + b` and the upper `a − b`, which is the partner's `b − a` read from the
/// upper lane (IEEE addition is commutative, so the bits are those of [`fwht`]).
#[inline(always)]
fn fwht16(v: &mut [f32; 16]) {
    #[inline(always)]
    fn stage<const H: usize>(v: [f32; 16]) -> [f32; 16] {
        let mut p = [0f32; 16];
        for i in 0..16 {
            p[i] = v[i ^ H];
        }
        let mut o = [0f32; 16];
        for i in 0..16 {
            o[i] = if i & H == 0 { v[i] + p[i] } else { p[i] - v[i] };
        }
        o
    }
    *v = stage::<8>(stage::<4>(stage::<2>(stage::<1>(*v))));
}

/// `v` rounded to nearest even into BF16 (overflow to ±Inf, NaN kept), as binary32.
#[inline(always)]
fn bf16_rne(v: f32) -> f32 {
    let b = v.to_bits();
    let r = f32::from_bits((b.wrapping_add(0x7fff + ((b >> 16) & 1))) & 0xffff_0000);
    // (a select, not a branch: NaN kept)
    if v.is_nan() {
        v
    } else {
        r
    }
}

/// The inverse rotation of `y` (binary64, not rounded).
pub fn inverse(r: &Rotation, y: &[f64], cols: usize) -> Vec<f64> {
    debug_assert!(cols.is_multiple_of(r.size));
    let mut out = y.to_vec();
    f64_blocks(r, &mut out, false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BF16 rounding of the RHT is the core's general rounding into BF16, on every
    /// 2^-12th binary32 pattern and the edges.
    #[test]
    fn bf16_rounding_is_the_general_one() {
        let o = crate::RoundOptions::default();
        let edges = [
            0u32,
            0x8000_0000,
            0x7f7f_ffff,
            0x7f7f_7fff,
            0x7f7f_8000,
            0x0000_8000,
            0x0001_8000,
            0x7f80_0000,
            0xff80_0000,
        ];
        for b in (0..=u32::MAX).step_by(4093).chain(edges) {
            let v = f32::from_bits(b);
            let want = crate::FloatFormat::BF16.round(v as f64, &o);
            let got = bf16_rne(v) as f64;
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{b:#x}"
            );
        }
    }

    /// The vector kernels of TE's RHT give the portable butterflies' bits, on every
    /// instruction level: ordinary values, ±0, subnormals, sums that overflow BF16, NaN, ±Inf.
    #[test]
    fn te_rotation_is_the_same_on_every_instruction_level() {
        use crate::simd::{set_max_level, Level};
        let r = Rotation {
            size: 16,
            signs: Signs::Te,
            bf16: true,
        };
        let specials = [
            0.0f32,
            -0.0,
            f32::MIN_POSITIVE / 3.0,
            3.0e38,
            -3.3e38,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.0 + f32::EPSILON,
        ];
        let x: Vec<f32> = (0..16 * 4099)
            .map(|i| {
                if i % 97 < specials.len() && i / 97 % 5 == 1 {
                    specials[i % 97]
                } else {
                    let u = ((i as u64 * 0x9e37_79b9_7f4a_7c15) >> 40) as f32 / (1u32 << 24) as f32;
                    (u - 0.5) * 2f32.powi((i % 41) as i32 - 20)
                }
            })
            .collect();
        let at = |level| {
            set_max_level(level);
            let y = forward_bf16(&r, &x);
            set_max_level(Level::Avx512);
            y
        };
        let want = at(Level::Portable);
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for got in [at(Level::Avx2), at(Level::Avx512), forward_bf16(&r, &x64)] {
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "element {i}: {a} vs {b}"
                );
            }
        }
        // and the portable butterflies are the plain loop's
        let plain: Vec<f32> = x
            .chunks(16)
            .flat_map(|b| {
                let mut v: Vec<f32> = b.iter().zip(TE_SIGNS).map(|(x, s)| x * s as f32).collect();
                fwht(&mut v);
                v.into_iter()
                    .map(|v| bf16_rne(v * 0.25 + 0.0))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(plain
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())));
    }

    /// The binary64 rotations of fixed sizes (vectorised arrays) are the plain loop's, bit
    /// for bit, forward and inverse, on every instruction level.
    #[test]
    fn binary64_blocks_are_the_plain_loop() {
        use crate::simd::{set_max_level, Level};
        for size in [8usize, 16, 32, 64, 128, 256] {
            let r = Rotation {
                size,
                signs: Signs::Seeded(size as u64),
                bf16: false,
            };
            let x: Vec<f64> = (0..size * 12)
                .map(|i| {
                    let b = crate::round::random_bits(3, i as u64);
                    ((b >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2f64.powi((b % 61) as i32 - 30)
                })
                .collect();
            let (s, k) = (signs(&r), 1.0 / (size as f64).sqrt());
            let (mut fwd, mut inv) = (x.clone(), x.clone());
            for b in fwd.chunks_mut(size) {
                b.iter_mut().zip(&s).for_each(|(v, s)| *v *= s);
                fwht(b);
                b.iter_mut().for_each(|v| *v *= k);
            }
            for b in inv.chunks_mut(size) {
                fwht(b);
                b.iter_mut().zip(&s).for_each(|(v, s)| *v = *v * k * s);
            }
            let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            for level in [Level::Portable, Level::Avx2, Level::Avx512] {
                set_max_level(level);
                let (f, i) = (forward(&r, &x, size), inverse(&r, &x, size));
                let mut f2 = vec![0.0; x.len()];
                forward_into(&r, &x, &mut f2);
                set_max_level(Level::Avx512);
                assert_eq!(bits(&f), bits(&fwd), "size {size} {level:?} forward");
                assert_eq!(bits(&f2), bits(&fwd), "size {size} {level:?} forward_into");
                assert_eq!(bits(&i), bits(&inv), "size {size} {level:?} inverse");
            }
        }
    }

    #[test]
    fn the_transform_is_the_matrix_product_and_inverts() {
        let r = Rotation {
            size: 16,
            signs: Signs::Te,
            bf16: false,
        };
        let x: Vec<f64> = (0..32).map(|i| (i as f64 * 0.37).sin()).collect();
        let y = forward(&r, &x, 32);
        // y_j = Σ_i x_i s_i H_ij / 4, written plainly
        for blk in 0..2 {
            for j in 0..16usize {
                let mut acc = 0.0;
                for i in 0..16usize {
                    let h = if (i & j).count_ones().is_multiple_of(2) {
                        1.0
                    } else {
                        -1.0
                    };
                    acc += x[blk * 16 + i] * TE_SIGNS[i] as f64 * h;
                }
                assert!((y[blk * 16 + j] - acc / 4.0).abs() < 1e-12);
            }
        }
        let back = inverse(&r, &y, 32);
        for (a, b) in back.iter().zip(&x) {
            assert!((a - b).abs() < 1e-15);
        }
        // random signs are ±1 and depend on the seed
        let s1 = signs(&Rotation {
            size: 32,
            signs: Signs::Seeded(1),
            bf16: false,
        });
        let s2 = signs(&Rotation {
            size: 32,
            signs: Signs::Seeded(2),
            bf16: false,
        });
        assert!(s1.iter().all(|v| v.abs() == 1.0) && s1 != s2);
    }
}
