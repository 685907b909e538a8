//! The binary32 AVX-512 kernel of the prefix scan's first eight levels
//! (`crate::range::prefix_sum`): the in-vector shifts `1, 2, 4, 8` as lane alignments
//! (`valignd`), which the portable build cannot express without spilling, and the shifts
//! `16 … 128` as delays held in registers. The same IEEE additions in the same order as
//! the portable kernel, so the same bits.

use std::any::TypeId;

/// The scan's first eight levels (shifts `1 … 128`) streamed along `src` into
/// `dst[..⌈len/16⌉·16]`, entries with no predecessor adding `−0` (a copy), when `T` is
/// `f32` and the CPU has AVX-512; `false` (nothing written) otherwise.
///
/// # Panics
/// If `dst` is shorter than `src` rounded up to 16 entries (an internal error).
pub(crate) fn stream8<T: Copy + 'static>(src: &[T], dst: &mut [T]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if TypeId::of::<T>() == TypeId::of::<f32>() && super::active() == super::Level::Avx512 {
        assert!(dst.len() >= src.len().div_ceil(16) * 16);
        // SAFETY: `T` is `f32` (the same type), so both slices are `f32` slices of their
        // own lengths; AVX-512F was detected (`active()` never exceeds `detected()`).
        unsafe {
            let src = std::slice::from_raw_parts(src.as_ptr().cast::<f32>(), src.len());
            let dst = std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<f32>(), dst.len());
            x86::stream8_f32(src, dst);
        }
        return true;
    }
    let _ = (src, dst);
    false
}

/// Four column levels (row shifts `1, 2, 4, 8`) in place on the first `rows` rows of
/// `buf`, rows of `row` entries (a multiple of 16), streamed down each column of 16 lanes,
/// when `T` is `f32` and the CPU has AVX-512; `false` (nothing done) otherwise.
///
/// # Panics
/// If `buf` holds fewer than `rows × row` entries (an internal error).
pub(crate) fn columns4<T: Copy + 'static>(buf: &mut [T], row: usize, rows: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if TypeId::of::<T>() == TypeId::of::<f32>() && super::active() == super::Level::Avx512 {
        assert!(row.is_multiple_of(16) && buf.len() >= rows * row);
        // SAFETY: as in `stream8`.
        unsafe {
            let buf = std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<f32>(), buf.len());
            x86::columns4_f32(buf, row, rows);
        }
        return true;
    }
    let _ = (buf, row, rows);
    false
}

// The AVX-512 intrinsics and the `avx512f` target feature are stable since Rust 1.89, the
// workspace's `rust-version`.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Lanes `l ≥ 16 − I` of `v` shifted up by `16 − I`, the low lanes from the top of
    /// `prev`: entry `i − (16 − I)` for every lane.
    #[inline(always)]
    unsafe fn shifted<const I: i32>(v: __m512, prev: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_alignr_epi32::<I>(
            _mm512_castps_si512(v),
            _mm512_castps_si512(prev),
        ))
    }

    /// The four levels streamed down one column of `rows` vectors, vector `r` at `at(r)`.
    #[inline(always)]
    #[allow(unused_assignments)]
    unsafe fn column4(rows: usize, mut at: impl FnMut(usize) -> *mut f32) {
        let z = _mm512_set1_ps(-0.0);
        let full = rows / 8 * 8;
        let mut d1 = z;
        let mut d2 = [z; 2];
        let mut d4 = [z; 4];
        let mut d8 = [z; 8];
        macro_rules! step {
            ($v:expr, $k:expr) => {{
                let v = $v;
                let v1 = _mm512_add_ps(v, d1);
                d1 = v;
                let v2 = _mm512_add_ps(v1, d2[$k % 2]);
                d2[$k % 2] = v1;
                let v3 = _mm512_add_ps(v2, d4[$k % 4]);
                d4[$k % 4] = v2;
                let v4 = _mm512_add_ps(v3, d8[$k % 8]);
                d8[$k % 8] = v3;
                v4
            }};
        }
        macro_rules! block {
            ($b:expr) => {{
                let b: &mut [__m512; 8] = $b;
                b[0] = step!(b[0], 0);
                b[1] = step!(b[1], 1);
                b[2] = step!(b[2], 2);
                b[3] = step!(b[3], 3);
                b[4] = step!(b[4], 4);
                b[5] = step!(b[5], 5);
                b[6] = step!(b[6], 6);
                b[7] = step!(b[7], 7);
            }};
        }
        if full > 0 {
            // the next block is loaded before this one is stored: a store and a later
            // load 4 KiB apart would otherwise wait on each other
            let mut p: [*mut f32; 8] = std::array::from_fn(&mut at);
            let mut b: [__m512; 8] = std::array::from_fn(|k| _mm512_loadu_ps(p[k]));
            for r0 in (8..=full).step_by(8) {
                block!(&mut b);
                let (np, nb) = if r0 < full {
                    let np: [*mut f32; 8] = std::array::from_fn(|k| at(r0 + k));
                    let nb: [__m512; 8] = std::array::from_fn(|k| _mm512_loadu_ps(np[k]));
                    (np, nb)
                } else {
                    (p, b)
                };
                for (k, v) in b.iter().enumerate() {
                    _mm512_storeu_ps(p[k], *v);
                }
                (p, b) = (np, nb);
            }
        }
        if full < rows {
            let mut b = [z; 8];
            for (k, v) in b.iter_mut().enumerate().take(rows - full) {
                *v = _mm512_loadu_ps(at(full + k));
            }
            block!(&mut b);
            for (k, v) in b.iter().enumerate().take(rows - full) {
                _mm512_storeu_ps(at(full + k), *v);
            }
        }
    }

    /// See [`super::columns4`].
    #[target_feature(enable = "avx512f")]
    #[allow(unused_assignments)]
    pub(super) unsafe fn columns4_f32(buf: &mut [f32], row: usize, rows: usize) {
        for c in (0..row).step_by(16) {
            column4(rows, |r| buf[r * row + c..][..16].as_mut_ptr());
        }
    }

    /// See [`super::stream8`]; `dst` holds at least `src.len()` rounded up to 16.
    #[target_feature(enable = "avx512f")]
    #[allow(unused_assignments)]
    pub(super) unsafe fn stream8_f32(src: &[f32], dst: &mut [f32]) {
        let z = _mm512_set1_ps(-0.0);
        let (mut p0, mut p1, mut p2, mut p3) = (z, z, z, z);
        let mut d1 = z;
        let mut d2 = [z; 2];
        let mut d4 = [z; 4];
        let mut d8 = [z; 8];
        macro_rules! step {
            ($v:expr, $k:expr) => {{
                let v = $v;
                let v1 = _mm512_add_ps(v, shifted::<15>(v, p0));
                p0 = v;
                let v2 = _mm512_add_ps(v1, shifted::<14>(v1, p1));
                p1 = v1;
                let v3 = _mm512_add_ps(v2, shifted::<12>(v2, p2));
                p2 = v2;
                let v4 = _mm512_add_ps(v3, shifted::<8>(v3, p3));
                p3 = v3;
                let v5 = _mm512_add_ps(v4, d1);
                d1 = v4;
                let v6 = _mm512_add_ps(v5, d2[$k % 2]);
                d2[$k % 2] = v5;
                let v7 = _mm512_add_ps(v6, d4[$k % 4]);
                d4[$k % 4] = v6;
                let v8 = _mm512_add_ps(v7, d8[$k % 8]);
                d8[$k % 8] = v7;
                v8
            }};
        }
        macro_rules! block {
            ($b:expr) => {{
                let b: &mut [__m512; 8] = $b;
                b[0] = step!(b[0], 0);
                b[1] = step!(b[1], 1);
                b[2] = step!(b[2], 2);
                b[3] = step!(b[3], 3);
                b[4] = step!(b[4], 4);
                b[5] = step!(b[5], 5);
                b[6] = step!(b[6], 6);
                b[7] = step!(b[7], 7);
            }};
        }
        let n = src.len();
        let full = n / 128 * 128;
        for at in (0..full).step_by(128) {
            let s = &src[at..at + 128];
            let mut b: [__m512; 8] = std::array::from_fn(|k| _mm512_loadu_ps(s[16 * k..].as_ptr()));
            block!(&mut b);
            let d = &mut dst[at..at + 128];
            for (k, v) in b.iter().enumerate() {
                _mm512_storeu_ps(d[16 * k..].as_mut_ptr(), *v);
            }
        }
        if full < n {
            let mut t = [0f32; 128];
            t[..n - full].copy_from_slice(&src[full..]);
            let mut b: [__m512; 8] = std::array::from_fn(|k| _mm512_loadu_ps(t[16 * k..].as_ptr()));
            block!(&mut b);
            for (k, v) in b.iter().enumerate() {
                _mm512_storeu_ps(t[16 * k..].as_mut_ptr(), *v);
            }
            let m = (n - full).div_ceil(16) * 16;
            dst[full..full + m].copy_from_slice(&t[..m]);
        }
    }
}
