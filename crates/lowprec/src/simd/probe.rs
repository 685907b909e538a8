//! Streaming probes: the memory limit a cast or block encode runs against, measured on the
//! same bytes. A probe reads every binary32 input and writes one 1-, 2- or 4-byte word per
//! element, the cheapest transform that does (the input's top bits), so its rate is what
//! the memory system allows for that traffic. `lowprec bench` reports each kernel's rate
//! as a ratio to its probe's.

use rayon::prelude::*;

/// How a probe stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Ordinary stores (through the cache; the line is read for ownership first).
    Ordinary,
    /// Non-temporal (streaming) stores where the CPU has AVX2 or AVX-512; ordinary ones on
    /// the portable level.
    NonTemporal,
}

/// An output word of a probe: `u8`, `u16` or `u32`.
pub trait ProbeWord: Copy + Send + Sync + sealed::Sealed {
    /// The top `8 · size_of::<Self>()` bits of `x`.
    fn top(x: f32) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

impl ProbeWord for u8 {
    #[inline(always)]
    fn top(x: f32) -> u8 {
        (x.to_bits() >> 24) as u8
    }
}
impl ProbeWord for u16 {
    #[inline(always)]
    fn top(x: f32) -> u16 {
        (x.to_bits() >> 16) as u16
    }
}
impl ProbeWord for u32 {
    #[inline(always)]
    fn top(x: f32) -> u32 {
        x.to_bits()
    }
}

struct Ordinary<'a, T> {
    src: &'a [f32],
    dst: &'a mut [T],
}

impl<T: ProbeWord> super::Kernel for Ordinary<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (d, s) in self.dst.iter_mut().zip(self.src) {
            *d = T::top(*s);
        }
    }
}

struct Largest<'a>(&'a [f32]);

impl super::Kernel for Largest<'_> {
    type Output = u32;
    #[inline(always)]
    fn run(self) -> u32 {
        // eight independent lanes, so that the maximum vectorises
        let mut m = [0u32; 8];
        let whole = self.0.chunks_exact(8);
        let tail = whole.remainder();
        for c in whole {
            for (m, x) in m.iter_mut().zip(c) {
                *m = (*m).max(x.to_bits() & 0x7fff_ffff);
            }
        }
        let t = tail.iter().fold(0, |a, x| a.max(x.to_bits() & 0x7fff_ffff));
        m.iter().fold(t, |a, &e| a.max(e))
    }
}

/// Elements per parallel work item, and the length from which a probe runs in parallel: the
/// slice kernels' values (`round::slice`; `simd` depends on nothing above it).
const CHUNK: usize = 1 << 14;
const PARALLEL_MIN: usize = 1 << 17;

/// Write the top bits of each element of `src` into `dst` (the same length), with the
/// given stores, in parallel on rayon's pool above `2^17` elements.
///
/// ```
/// use lowprec::simd::{stream_probe, Store};
/// let x = [1.0f32, -2.0];
/// let mut d = [0u16; 2];
/// stream_probe(&x, &mut d, Store::NonTemporal);
/// assert_eq!(d, [0x3f80, 0xc000]);
/// ```
///
/// # Panics
///
/// If the lengths differ.
pub fn stream_probe<T: ProbeWord>(src: &[f32], dst: &mut [T], store: Store) {
    assert_eq!(src.len(), dst.len(), "stream_probe: lengths differ");
    let one = |(s, d): (&[f32], &mut [T])| probe_piece(s, d, store);
    if src.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        src.par_chunks(CHUNK)
            .zip(dst.par_chunks_mut(CHUNK))
            .for_each(one);
    } else {
        probe_piece(src, dst, store);
    }
    #[cfg(target_arch = "x86_64")]
    if store == Store::NonTemporal && super::active() >= super::Level::Avx2 {
        // SAFETY: SSE (the x86-64 baseline); orders the streaming stores before returning.
        unsafe { std::arch::x86_64::_mm_sfence() };
    }
}

/// The read-only probe: the largest magnitude of `src` as binary32 bits (`|x|`'s bits; a
/// NaN's bits are above every number's), the pass a per-tensor scale needs before any
/// element is encoded (NVFP4, per-tensor FP8). Its time beside [`stream_probe`]'s is the
/// memory limit of a two-pass encode. In parallel on rayon's pool above `2^17` elements.
///
/// ```
/// use lowprec::simd::read_probe;
/// assert_eq!(read_probe(&[1.0f32, -6.5, 2.0]), 6.5f32.to_bits());
/// assert_eq!(read_probe(&[]), 0);
/// ```
pub fn read_probe(src: &[f32]) -> u32 {
    if src.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        src.par_chunks(CHUNK)
            .map(|c| super::dispatch(Largest(c)))
            .max()
            .unwrap_or(0)
    } else {
        super::dispatch(Largest(src))
    }
}

fn probe_piece<T: ProbeWord>(src: &[f32], dst: &mut [T], store: Store) {
    #[cfg(target_arch = "x86_64")]
    if store == Store::NonTemporal && super::active() >= super::Level::Avx2 {
        // Scalar until the destination is aligned to a 32-byte store, vectors, scalar tail.
        let bytes = std::mem::size_of::<T>();
        let misalign = (dst.as_ptr() as usize) % 32;
        let head = if misalign == 0 {
            0
        } else {
            ((32 - misalign) / bytes).min(dst.len())
        };
        let (d0, d1) = dst.split_at_mut(head);
        let (s0, s1) = src.split_at(head);
        d0.iter_mut().zip(s0).for_each(|(d, s)| *d = T::top(*s));
        let per = 32 / bytes; // elements per 32-byte store
        let whole = s1.len() / per * per;
        // SAFETY: the AVX2 level was detected (`active()` never exceeds it); the function
        // stores only through `d1[..whole]`, whose start is 32-byte aligned, in 32-byte units.
        unsafe { x86::stream(&s1[..whole], &mut d1[..whole]) };
        d1[whole..]
            .iter_mut()
            .zip(&s1[whole..])
            .for_each(|(d, s)| *d = T::top(*s));
        return;
    }
    super::dispatch(Ordinary { src, dst });
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::ProbeWord;
    use std::arch::x86_64::*;

    /// Streaming stores of 32 bytes: 32 bytes of `u8` from 32 inputs, of `u16` from 16, of
    /// `u32` from 8. `dst` starts 32-byte aligned and its length is a multiple of the unit.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn stream<T: ProbeWord>(src: &[f32], dst: &mut [T]) {
        let bytes = std::mem::size_of::<T>();
        let per = 32 / bytes;
        debug_assert!(dst.len().is_multiple_of(per) && (dst.as_ptr() as usize).is_multiple_of(32));
        let ld = |i: usize| _mm256_loadu_si256(src[i..i + 8].as_ptr().cast());
        for i in (0..dst.len()).step_by(per) {
            let v = match bytes {
                1 => {
                    // top bytes of 32 inputs: shift, pack to 16 bits, then to 8, fix the lane order
                    let s = |k: usize| _mm256_srli_epi32::<24>(ld(i + 8 * k));
                    let w01 = _mm256_packus_epi32(s(0), s(1));
                    let w23 = _mm256_packus_epi32(s(2), s(3));
                    let b = _mm256_packus_epi16(w01, w23);
                    _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
                }
                2 => {
                    let s = |k: usize| _mm256_srli_epi32::<16>(ld(i + 8 * k));
                    let w = _mm256_packus_epi32(s(0), s(1));
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(w)
                }
                _ => ld(i),
            };
            let d = &mut dst[i..i + per];
            // SAFETY (alignment): `d` starts at a multiple of 32 bytes from the aligned start.
            _mm256_stream_si256(d.as_mut_ptr().cast(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{stream_probe, ProbeWord, Store};

    fn check<T: ProbeWord + PartialEq + std::fmt::Debug + Default>() {
        let x: Vec<f32> = (0..1000u32)
            .map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9)))
            .collect();
        for start in 0..40 {
            for len in [0, 1, 7, 31, 32, 33, 100, 900] {
                let s = &x[start..start + len];
                let want: Vec<T> = s.iter().map(|&v| T::top(v)).collect();
                for store in [Store::Ordinary, Store::NonTemporal] {
                    // an offset destination, so that every alignment is met
                    let mut buf = vec![T::default(); len + 40];
                    let d = &mut buf[start..start + len];
                    stream_probe(s, d, store);
                    assert_eq!(d, &want[..], "{store:?}, start {start}, len {len}");
                }
            }
        }
    }

    #[test]
    fn probes_write_the_top_bits_at_every_alignment() {
        check::<u8>();
        check::<u16>();
        check::<u32>();
    }

    #[test]
    fn the_read_probe_finds_the_largest_magnitude_anywhere() {
        // long enough for the parallel path; the largest element moved over every
        // position class of the eight lanes, the tail and the work items
        let n = (1 << 17) + 13;
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 - 500.0).collect();
        for at in [0, 1, 7, 8, 1 << 14, (1 << 14) + 3, n - 13, n - 1] {
            let mut y = x.clone();
            y[at] = -1e6;
            assert_eq!(super::read_probe(&y), 1e6f32.to_bits(), "at {at}");
            assert_eq!(super::read_probe(&y[..at + 1]), 1e6f32.to_bits(), "at {at}");
            let rest = y[at + 1..].iter().fold(0f32, |m, v| m.max(v.abs()));
            assert_eq!(
                super::read_probe(&y[at + 1..]),
                rest.to_bits(),
                "after {at}"
            );
        }
    }
}
