//! binary32 arithmetic of `lowprec::ops` (Add, Subtract, Multiply, Divide, Sqrt, FMA)
//! against the machine's own correctly rounded `f32` operations under NearestTiesToEven, on
//! 10^8 operand patterns per operation (a tenth for Subtract; `LOWPREC_F32_CASES` sets
//! another count), and against an exact big-rational reference under
//! every deterministic rounding (the directed ones and round to odd) on 10^5 operand
//! patterns per operation.
//!
//! Operands are random bit patterns from a fixed-seed SplitMix64, mixed with special values
//! (±0, ±Inf, quiet and signalling NaNs of both signs, subnormals, ±max) and with operand
//! pairs built to land near overflow, in the subnormal range, or on cancellation.

mod common;

use common::rat::Rat;
use lowprec::ops::{self, Op, Projection, Random, Rounding, Saturation};
use lowprec::FloatFormat;
use std::cmp::Ordering;

/// The canonical NaN the library gives in binary32.
const CANONICAL_NAN: u32 = 0x7fc0_0000;

use common::Rng as SplitMix64;

const SPECIALS: [u32; 22] = [
    0x0000_0000, // +0
    0x8000_0000, // −0
    0x7f80_0000, // +Inf
    0xff80_0000, // −Inf
    0x7fc0_0000, // quiet NaN
    0xffc0_0000, // −quiet NaN
    0x7f80_0001, // signalling NaN
    0xffbf_ffff, // −signalling NaN
    0x0000_0001, // smallest subnormal
    0x8000_0001,
    0x007f_ffff, // largest subnormal
    0x807f_ffff,
    0x0080_0000, // smallest normal
    0x8080_0000,
    0x7f7f_ffff, // max
    0xff7f_ffff,
    0x3f80_0000, // 1
    0xbf80_0000,
    0x7f00_0000, // 2^127
    0x0040_0000, // 2^−127
    0x3f7f_ffff, // 1 − 2^−24
    0x3f80_0001, // 1 + 2^−23
];

/// A bit pattern with the exponent field replaced.
fn with_field(bits: u32, field: u32) -> u32 {
    (bits & 0x807f_ffff) | (field << 23)
}

/// One operand: a special value, a value near overflow, a tiny value, or random bits.
fn operand(rng: &mut SplitMix64) -> u32 {
    let bits = rng.next_u64() as u32;
    match rng.below(16) {
        0 => SPECIALS[rng.below(SPECIALS.len() as u64) as usize],
        1 | 2 => with_field(bits, 250 + rng.below(5) as u32),
        3 | 4 => with_field(bits, rng.below(4) as u32),
        _ => bits,
    }
}

/// The exponent field of a pattern (0..=255).
fn field(bits: u32) -> i64 {
    ((bits >> 23) & 0xff) as i64
}

/// A field near `target`, or `None` when it is not a finite number's field.
fn near(target: i64, rng: &mut SplitMix64) -> Option<u32> {
    let f = target + rng.below(9) as i64 - 4;
    (0..=254).contains(&f).then_some(f as u32)
}

/// Operands for one case of `op` (unused operands are 0).
fn case(op: Op, rng: &mut SplitMix64) -> [u32; 3] {
    let a = operand(rng);
    let b = operand(rng);
    let c = operand(rng);
    if rng.below(8) < 5 {
        return [a, b, c];
    }
    let bits = rng.next_u64() as u32;
    // a result exponent near the top (254) or the bottom (0, and below into subnormals)
    let edge = if rng.below(2) == 0 {
        254
    } else {
        rng.below(30) as i64 - 24
    };
    let b2 = match op {
        Op::Add | Op::Subtract => {
            if rng.below(2) == 0 {
                // cancellation: −a (Add) or a (Subtract), a few units in the last place apart
                let flip = if op == Op::Add { 0x8000_0000 } else { 0 };
                (a ^ flip).wrapping_add(rng.below(5) as u32).wrapping_sub(2)
            } else {
                // a close exponent, any sign and significand
                let f = (field(a) - rng.below(30) as i64).max(0);
                with_field(bits, f as u32)
            }
        }
        // fa + fb − 127 ≈ edge
        Op::Multiply => near(edge - field(a) + 127, rng).map_or(b, |f| with_field(bits, f)),
        // fa − fb + 127 ≈ edge
        Op::Divide => near(field(a) + 127 - edge, rng).map_or(b, |f| with_field(bits, f)),
        // mostly nonnegative operands
        Op::Sqrt => b & 0x7fff_ffff,
        _ => b,
    };
    let c2 = if op == Op::Fma {
        // the negated product, a few units apart: heavy cancellation
        let p = f32::from_bits(a) * f32::from_bits(b);
        (p.to_bits() ^ 0x8000_0000)
            .wrapping_add(rng.below(5) as u32)
            .wrapping_sub(2)
    } else {
        c
    };
    if op == Op::Sqrt {
        return [b2, 0, 0];
    }
    [a, b2, c2]
}

fn hardware(op: Op, x: [u32; 3]) -> f32 {
    let [a, b, c] = x.map(f32::from_bits);
    match op {
        Op::Add => a + b,
        Op::Subtract => a - b,
        Op::Multiply => a * b,
        Op::Divide => a / b,
        Op::Sqrt => a.sqrt(),
        Op::Fma => a.mul_add(b, c),
        _ => unreachable!(),
    }
}

/// Run `op` on binary32 operand columns into binary32.
fn library(op: Op, cols: &[Vec<u64>; 3], prj: &Projection) -> Vec<u64> {
    let fp32 = FloatFormat::FP32;
    let operands: Vec<(FloatFormat, &[u64])> = cols[..op.arity()]
        .iter()
        .map(|c| (fp32, c.as_slice()))
        .collect();
    let mut out = vec![0u64; cols[0].len()];
    ops::apply(
        op,
        &operands,
        &fp32,
        prj,
        Random::Seeded {
            seed: 0,
            index_offset: 0,
        },
        &mut out,
    )
    .unwrap();
    out
}

#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    nan: u64,
    inf: u64,
    zero: u64,
    subnormal: u64,
}

/// `cases` operand triples of `op` from the generator seeded with `seed`, library against
/// hardware under NearestTiesToEven, in pieces of 2^20; what kinds of results were seen.
fn against_the_hardware(op: Op, cases: usize, seed: u64) -> Tally {
    const CHUNK: usize = 1 << 20;
    let prj = Projection::new(Rounding::NearestTiesToEven, Saturation::None);
    let mut rng = SplitMix64(seed);
    let mut t = Tally::default();
    let mut done = 0;
    while done < cases {
        let n = CHUNK.min(cases - done);
        let xs: Vec<[u32; 3]> = (0..n).map(|_| case(op, &mut rng)).collect();
        let cols: [Vec<u64>; 3] = [0, 1, 2].map(|j| xs.iter().map(|x| x[j] as u64).collect());
        let got = library(op, &cols, &prj);
        for (x, &g) in xs.iter().zip(&got) {
            let want = hardware(op, *x);
            let g = g as u32;
            let ok = if want.is_nan() {
                g == CANONICAL_NAN
            } else {
                g == want.to_bits()
            };
            assert!(
                ok,
                "{op}({:?} = {:#010x?}): library {g:#010x} ({}), hardware {:#010x} ({want})",
                x.map(f32::from_bits),
                x,
                f32::from_bits(g),
                want.to_bits()
            );
            t.cases += 1;
            t.nan += want.is_nan() as u64;
            t.inf += want.is_infinite() as u64;
            t.zero += (want == 0.0) as u64;
            t.subnormal += want.is_subnormal() as u64;
        }
        done += n;
    }
    t
}

/// Add, Multiply, Divide, Sqrt and FMA on `LOWPREC_F32_CASES` operand triples each (default
/// 10^8, as docs/testing.md says: about two minutes on two cores), Subtract (Add with the second sign
/// flipped) on a tenth of that; two threads with their own seeds.
#[test]
fn nearest_even_matches_the_hardware_on_random_and_special_operands() {
    let n: usize = std::env::var("LOWPREC_F32_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000)
        .max(1_000_000);
    for (k, (op, cases)) in [
        (Op::Add, n),
        (Op::Subtract, n / 10),
        (Op::Multiply, n),
        (Op::Divide, n),
        (Op::Sqrt, n),
        (Op::Fma, n),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 0x0123_4567_89ab_cdef ^ k as u64;
        let halves = std::thread::scope(|sc| {
            let a = sc.spawn(move || against_the_hardware(op, cases / 2, seed));
            let b = against_the_hardware(op, cases - cases / 2, seed ^ 0xffff_0000);
            [a.join().expect("first half"), b]
        });
        let t = Tally {
            cases: halves[0].cases + halves[1].cases,
            nan: halves[0].nan + halves[1].nan,
            inf: halves[0].inf + halves[1].inf,
            zero: halves[0].zero + halves[1].zero,
            subnormal: halves[0].subnormal + halves[1].subnormal,
        };
        assert_eq!(t.cases, cases as u64);
        // every kind of result is well represented
        assert!(t.nan > 10_000, "{op}: {t:?}");
        assert!(t.zero > 10_000 || op == Op::Sqrt, "{op}: {t:?}");
        assert!(t.inf > 10_000, "{op}: {t:?}");
        assert!(t.subnormal > 10_000 || op == Op::Sqrt, "{op}: {t:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The exact reference
// ---------------------------------------------------------------------------------------

/// An exact result: NaN, ±Inf, a zero (its sign normally, its sign under TowardNegative),
/// a nonzero rational, or the square root of a positive rational.
#[derive(Clone, Debug)]
enum Exact {
    Nan,
    Inf(bool),
    Zero(bool, bool),
    Num(Rat),
    Sqrt(Rat),
}

impl Exact {
    fn negative(&self) -> bool {
        match self {
            Exact::Num(q) => q.sign() == Ordering::Less,
            _ => false,
        }
    }
    fn cmp(&self, c: &Rat) -> Ordering {
        match self {
            Exact::Num(q) => q.cmp(c),
            Exact::Sqrt(q) => {
                if c.sign() != Ordering::Greater {
                    Ordering::Greater
                } else {
                    q.cmp(&c.mul(c))
                }
            }
            _ => unreachable!(),
        }
    }
}

/// IEEE 754's exact results of the four operations.
fn exact(op: Op, a: f32, b: f32) -> Exact {
    let sa = a.is_sign_negative();
    let sb = b.is_sign_negative();
    match op {
        Op::Add => {
            if a.is_nan() || b.is_nan() || (a.is_infinite() && b.is_infinite() && sa != sb) {
                return Exact::Nan;
            }
            if a.is_infinite() {
                return Exact::Inf(sa);
            }
            if b.is_infinite() {
                return Exact::Inf(sb);
            }
            if a == 0.0 && b == 0.0 {
                // −0 + −0 = −0; +0 + −0 = +0, −0 under TowardNegative
                return Exact::Zero(sa && sb, sa || sb);
            }
            let s = Rat::of_f32(a).add(&Rat::of_f32(b));
            if s.sign() == Ordering::Equal {
                return Exact::Zero(false, true);
            }
            Exact::Num(s)
        }
        Op::Multiply => {
            if a.is_nan() || b.is_nan() {
                return Exact::Nan;
            }
            let neg = sa != sb;
            if a.is_infinite() || b.is_infinite() {
                return if a == 0.0 || b == 0.0 {
                    Exact::Nan
                } else {
                    Exact::Inf(neg)
                };
            }
            if a == 0.0 || b == 0.0 {
                return Exact::Zero(neg, neg);
            }
            Exact::Num(Rat::of_f32(a).mul(&Rat::of_f32(b)))
        }
        Op::Divide => {
            if a.is_nan() || b.is_nan() {
                return Exact::Nan;
            }
            let neg = sa != sb;
            if (a == 0.0 && b == 0.0) || (a.is_infinite() && b.is_infinite()) {
                return Exact::Nan;
            }
            if a.is_infinite() || b == 0.0 {
                return Exact::Inf(neg);
            }
            if b.is_infinite() || a == 0.0 {
                return Exact::Zero(neg, neg);
            }
            Exact::Num(Rat::of_f32(a).div(&Rat::of_f32(b)))
        }
        Op::Sqrt => {
            if a.is_nan() || (a < 0.0) {
                Exact::Nan
            } else if a == 0.0 {
                Exact::Zero(sa, sa)
            } else if a.is_infinite() {
                Exact::Inf(false)
            } else {
                Exact::Sqrt(Rat::of_f32(a))
            }
        }
        _ => unreachable!(),
    }
}

/// binary32 codes as signed keys in value order: `±magnitude bits` (±0 are both 0). The key
/// `±TOP` stands for `±2^128`, one step beyond ±max with the exponent unbounded.
const TOP: i64 = 0x7f80_0000;

fn key_value(k: i64) -> Rat {
    let mag = k.unsigned_abs();
    let f = (mag >> 23) as i32;
    let man = mag & 0x7f_ffff;
    if f == 0 {
        Rat::dyadic(k < 0, man, -149)
    } else {
        Rat::dyadic(k < 0, man | 1 << 23, f - 150)
    }
}

fn key_of(x: f32) -> i64 {
    let mag = (x.to_bits() & 0x7fff_ffff) as i64;
    if x.is_sign_negative() {
        -mag.min(TOP)
    } else {
        mag.min(TOP)
    }
}

fn bits_of_key(k: i64, negative_zero: bool) -> u32 {
    if k == 0 {
        return if negative_zero { 0x8000_0000 } else { 0 };
    }
    let sign = if k < 0 { 0x8000_0000 } else { 0 };
    sign | k.unsigned_abs() as u32
}

/// Where a nonzero finite exact value lies among the binary32 numbers.
enum Place {
    /// At or beyond +2^128 (or −2^128).
    Above,
    Below,
    /// `key_value(lo) ≤ r < key_value(lo + 1)`.
    From(i64),
}

fn place(r: &Exact, guess: f32) -> Place {
    if r.cmp(&key_value(TOP)) != Ordering::Less {
        return Place::Above;
    }
    if r.cmp(&key_value(-TOP)) != Ordering::Greater {
        return Place::Below;
    }
    let mut k = if guess.is_nan() { 0 } else { key_of(guess) };
    while r.cmp(&key_value(k)) == Ordering::Less {
        k -= 1;
    }
    while r.cmp(&key_value(k + 1)) != Ordering::Less {
        k += 1;
    }
    Place::From(k)
}

/// The binary32 result of an exact value under a rounding (IEEE 754: overflow to ±Inf
/// unless the rounding goes toward zero there; round to odd gives ±max).
fn round_ref(r: &Exact, guess: f32, mode: Rounding) -> u32 {
    let neg = r.negative();
    match r {
        Exact::Nan => return CANONICAL_NAN,
        Exact::Inf(n) => return if *n { 0xff80_0000 } else { 0x7f80_0000 },
        Exact::Zero(normal, down) => {
            let n = if mode == Rounding::TowardNegative {
                *down
            } else {
                *normal
            };
            return bits_of_key(0, n);
        }
        _ => {}
    }
    let inf = if neg { 0xff80_0000 } else { 0x7f80_0000 };
    let max = if neg { 0xff7f_ffff } else { 0x7f7f_ffff };
    let lo = match place(r, guess) {
        Place::Above | Place::Below => {
            let to_inf = match mode {
                Rounding::NearestTiesToEven | Rounding::NearestTiesToAway => true,
                Rounding::TowardPositive => !neg,
                Rounding::TowardNegative => neg,
                _ => false,
            };
            return if to_inf { inf } else { max };
        }
        Place::From(k) => k,
    };
    let hi = lo + 1;
    let pick = if r.cmp(&key_value(lo)) == Ordering::Equal {
        lo
    } else {
        let mid = || r.cmp(&key_value(lo).add(&key_value(hi)).half());
        let odd = |k: i64| k.unsigned_abs() % 2 == 1;
        match mode {
            Rounding::NearestTiesToEven => match mid() {
                Ordering::Less => lo,
                Ordering::Greater => hi,
                Ordering::Equal => {
                    if odd(lo) {
                        hi
                    } else {
                        lo
                    }
                }
            },
            Rounding::NearestTiesToAway => match mid() {
                Ordering::Less => lo,
                Ordering::Greater => hi,
                Ordering::Equal => {
                    if neg {
                        lo
                    } else {
                        hi
                    }
                }
            },
            Rounding::TowardPositive => hi,
            Rounding::TowardNegative => lo,
            Rounding::TowardZero => {
                if neg {
                    hi
                } else {
                    lo
                }
            }
            Rounding::ToOdd => {
                if odd(lo) {
                    lo
                } else {
                    hi
                }
            }
            _ => unreachable!(),
        }
    };
    if pick.abs() == TOP {
        return inf;
    }
    bits_of_key(pick, neg)
}

#[test]
fn every_deterministic_rounding_matches_the_exact_reference() {
    const CASES: usize = 100_000;
    let modes = [
        Rounding::TowardZero,
        Rounding::TowardPositive,
        Rounding::TowardNegative,
        Rounding::ToOdd,
        Rounding::NearestTiesToEven,
        Rounding::NearestTiesToAway,
    ];
    let mut checked = 0u64;
    let mut inexact = 0u64;
    for (k, op) in [Op::Add, Op::Multiply, Op::Divide, Op::Sqrt]
        .into_iter()
        .enumerate()
    {
        let mut rng = SplitMix64(0xfeed_f00d_0000_0000 + k as u64);
        let xs: Vec<[u32; 3]> = (0..CASES).map(|_| case(op, &mut rng)).collect();
        let cols: [Vec<u64>; 3] = [0, 1, 2].map(|j| xs.iter().map(|x| x[j] as u64).collect());
        let refs: Vec<(Exact, f32)> = xs
            .iter()
            .map(|x| {
                let [a, b, _] = x.map(f32::from_bits);
                // a first guess for the bracket search only
                let guess = match op {
                    Op::Add => (a as f64 + b as f64) as f32,
                    Op::Multiply => (a as f64 * b as f64) as f32,
                    Op::Divide => (a as f64 / b as f64) as f32,
                    _ => (a as f64).sqrt() as f32,
                };
                (exact(op, a, b), guess)
            })
            .collect();
        for mode in modes {
            let got = library(op, &cols, &Projection::new(mode, Saturation::None));
            for (i, (r, guess)) in refs.iter().enumerate() {
                let want = round_ref(r, *guess, mode);
                let g = got[i] as u32;
                assert_eq!(
                    g,
                    want,
                    "{op}({:?} = {:#010x?}) under {}: library {g:#010x} ({}), exact {r:?} → {want:#010x} ({})",
                    xs[i].map(f32::from_bits),
                    xs[i],
                    mode.name(),
                    f32::from_bits(g),
                    f32::from_bits(want)
                );
                let w = f32::from_bits(want);
                if matches!(r, Exact::Num(_) | Exact::Sqrt(_))
                    && w.is_finite()
                    && r.cmp(&Rat::of_f32(w)) != Ordering::Equal
                {
                    inexact += 1;
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 * 6 * CASES as u64);
    assert!(inexact > checked / 4, "mostly inexact results: {inexact}");
}
