//! Runtime instruction-set dispatch: the one module with `unsafe`.
//!
//! The kernels are plain, portable Rust over slices, written so that the compiler
//! vectorises them. `dispatch` runs a closure inside a function compiled with AVX-512 or
//! AVX2 enabled when the CPU has them (detected once, at run time), so the same source is
//! vectorised for the widest unit the machine offers; elsewhere, or when
//! [`set_max_level`] says so, it runs the portable build. Every path computes with the same
//! integer and IEEE operations, so the bits are identical (the tests compare them).
//!
//! # Safety
//!
//! A `#[target_feature]` function may only run on a CPU with those features. `dispatch`
//! calls one only after `is_x86_feature_detected!` has confirmed every feature it enables,
//! and [`set_max_level`] can only lower the level below what was detected.

pub(crate) mod arith8;
pub(crate) mod cast16;
pub(crate) mod cast8;
mod e2m1;
mod intq;
mod maxima;
mod nvfp4te;
mod pairs;
mod probe;
pub(crate) mod quarter;
mod rht;
mod scan;

pub(crate) use e2m1::{e2m1_exact, e2m1_lookup};
pub(crate) use intq::{int_codes, IntLane};
pub(crate) use maxima::block_maxima16;
pub(crate) use nvfp4te::te_codes;
pub(crate) use pairs::pair_u8;
pub use probe::{read_probe, stream_probe, ProbeWord, Store};
pub(crate) use rht::{fwht_f64, rht16_bf16, rht16_bf16_max};
pub(crate) use scan::{columns4, stream8};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// An instruction-set level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The target's baseline (SSE2 on x86-64): the portable reference build.
    Portable = 0,
    /// AVX2 + FMA + BMI2.
    Avx2 = 1,
    /// AVX-512 F/BW/DQ/VL/CD.
    Avx512 = 2,
}

impl Level {
    /// A short name: `portable`, `avx2` or `avx512`.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }
}

static MAX_LEVEL: AtomicU8 = AtomicU8::new(Level::Avx512 as u8);

/// The best level this CPU supports (detected once).
pub fn detected() -> Level {
    static DETECTED: OnceLock<Level> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512cd")
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("bmi2")
            {
                return Level::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("bmi2")
            {
                return Level::Avx2;
            }
        }
        Level::Portable
    })
}

/// Cap the level used from now on (process-wide), for tests and benchmarks that compare
/// paths. Results do not depend on it.
pub fn set_max_level(level: Level) {
    MAX_LEVEL.store(level as u8, Ordering::Relaxed);
}

/// The level `dispatch` uses now: the detected one, capped by [`set_max_level`].
pub fn active() -> Level {
    let cap = MAX_LEVEL.load(Ordering::Relaxed);
    let d = detected();
    if (d as u8) <= cap {
        d
    } else if cap >= Level::Avx2 as u8 {
        Level::Avx2
    } else {
        Level::Portable
    }
}

/// A piece of work that can be compiled for several instruction sets. Implementations
/// mark [`Kernel::run`] `#[inline(always)]`, so that its body (and the loops it inlines) is
/// compiled inside the target-feature function that `dispatch` calls.
pub(crate) trait Kernel {
    /// The result.
    type Output;
    /// Do the work.
    fn run(self) -> Self::Output;
}

/// Run `k` compiled for the active level.
#[inline(always)]
pub(crate) fn dispatch<K: Kernel>(k: K) -> K::Output {
    #[cfg(target_arch = "x86_64")]
    {
        match active() {
            // SAFETY: `active()` never exceeds `detected()`, which checked every feature
            // these functions enable.
            Level::Avx512 => return unsafe { x86::avx512(k) },
            Level::Avx2 => return unsafe { x86::avx2(k) },
            Level::Portable => {}
        }
    }
    k.run()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Kernel;

    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx2,fma,bmi1,bmi2")]
    pub(super) unsafe fn avx512<K: Kernel>(k: K) -> K::Output {
        k.run()
    }

    #[target_feature(enable = "avx2,fma,bmi1,bmi2")]
    pub(super) unsafe fn avx2<K: Kernel>(k: K) -> K::Output {
        k.run()
    }

    /// The 4 × 4 blocks of [`super::transpose_f64`] (`rows`, `cols` multiples of 4).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose4(
        src: &[f64],
        src_stride: usize,
        rows: usize,
        cols: usize,
        dst: &mut [f64],
        dst_stride: usize,
    ) {
        use std::arch::x86_64::*;
        for r in (0..rows).step_by(4) {
            for c in (0..cols).step_by(4) {
                // Each load and store goes through a checked 4-element slice.
                let ld = |i: usize| {
                    let s = &src[(r + i) * src_stride + c..][..4];
                    _mm256_loadu_pd(s.as_ptr())
                };
                let (r0, r1, r2, r3) = (ld(0), ld(1), ld(2), ld(3));
                let t0 = _mm256_unpacklo_pd(r0, r1);
                let t1 = _mm256_unpackhi_pd(r0, r1);
                let t2 = _mm256_unpacklo_pd(r2, r3);
                let t3 = _mm256_unpackhi_pd(r2, r3);
                let cols4 = [
                    _mm256_permute2f128_pd::<0x20>(t0, t2),
                    _mm256_permute2f128_pd::<0x20>(t1, t3),
                    _mm256_permute2f128_pd::<0x31>(t0, t2),
                    _mm256_permute2f128_pd::<0x31>(t1, t3),
                ];
                for (i, v) in cols4.iter().enumerate() {
                    let d = &mut dst[(c + i) * dst_stride + r..][..4];
                    _mm256_storeu_pd(d.as_mut_ptr(), *v);
                }
            }
        }
    }
}

/// `dst[c · dst_stride + r] = src[r · src_stride + c]` for `r < rows`, `c < cols`: a
/// transposition, by 4 × 4 register blocks (AVX2 shuffles) where the CPU has AVX2, element by
/// element elsewhere. The same values either way (it only moves them).
///
/// # Panics
///
/// If either slice is too short for its shape (an internal error: callers size them).
pub(crate) fn transpose_f64(
    src: &[f64],
    src_stride: usize,
    rows: usize,
    cols: usize,
    dst: &mut [f64],
    dst_stride: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    assert!(src_stride >= cols && dst_stride >= rows);
    assert!(src.len() >= (rows - 1) * src_stride + cols);
    assert!(dst.len() >= (cols - 1) * dst_stride + rows);
    let (r4, c4) = (rows / 4 * 4, cols / 4 * 4);
    #[cfg(target_arch = "x86_64")]
    if active() >= Level::Avx2 {
        // SAFETY: AVX2 was detected (`active()` never exceeds `detected()`); the function
        // reads and writes only through bounds-checked slices of `src` and `dst`.
        unsafe { x86::transpose4(src, src_stride, r4, c4, dst, dst_stride) };
    } else {
        transpose_scalar(src, src_stride, 0..r4, 0..c4, dst, dst_stride);
    }
    #[cfg(not(target_arch = "x86_64"))]
    transpose_scalar(src, src_stride, 0..r4, 0..c4, dst, dst_stride);
    transpose_scalar(src, src_stride, r4..rows, 0..cols, dst, dst_stride);
    transpose_scalar(src, src_stride, 0..r4, c4..cols, dst, dst_stride);
}

fn transpose_scalar(
    src: &[f64],
    src_stride: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    dst: &mut [f64],
    dst_stride: usize,
) {
    for r in rows {
        for c in cols.clone() {
            dst[c * dst_stride + r] = src[r * src_stride + c];
        }
    }
}
