//! Projection: an exact result rounded **once** into a format, then saturated (IEEE P3109
//! §4.7.3: `Project = Encode ∘ Saturate ∘ RoundToPrecision`), for every format of lowprec.
//!
//! Rounding is done with the exponent unbounded above; only the rounded value is compared
//! with the format's range. The saturation modes ([`Saturation`]):
//!
//! | result | `SatFinite` | `SatPropagate` | `SatNone` |
//! |---|---|---|---|
//! | finite, beyond ±max | ±max | ±max | ±Inf; ±max under the directed mode toward zero (`rtz`, and `rdn` above / `rup` below); NaN in a format without Inf (`--draft d1`), ±max (`--draft v4.0`) |
//! | ±Inf | ±max | ±Inf; ±max without Inf | ±Inf; NaN without Inf (`d1`), ±max (`v4.0`) |
//! | negative, in an unsigned P3109 format | 0 | 0 | 0 under `rtz`, `rup`; else NaN |
//!
//! lowprec's older names map onto these: `ovf` is `SatNone` and `sat` is `SatFinite`. For
//! the formats that are not P3109 formats the draft option does not apply: a result beyond
//! the range of an `fn`/`fnuz` format under `SatNone` is NaN (as `ovf` casts give), round to
//! odd overflows to ±max as `ovf` casts do, and negative values into E8M0/UE4M3 are NaN.
//! A format without NaN (`none`: FP6, FP4) always saturates, and has no code for a NaN
//! result.

use super::wide::Wide;
use crate::format::{FloatFormat, Specials};
use crate::round::RoundingMode;
use std::fmt;

/// What a result beyond the format's range becomes (P3109's saturation modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Saturation {
    /// `SatFinite` (lowprec's `sat`): every out-of-range value, ±Inf included, becomes ±max.
    Finite,
    /// `SatPropagate`: finite values beyond the range become ±max, infinities stay infinite.
    Propagate,
    /// `SatNone` (older name `OvfInf`, lowprec's `ovf`): IEEE-style overflow to ±Inf.
    #[default]
    None,
}

impl Saturation {
    /// Every mode.
    pub const ALL: [Saturation; 3] = [Saturation::Finite, Saturation::Propagate, Saturation::None];

    /// The draft's name.
    pub const fn name(self) -> &'static str {
        match self {
            Saturation::Finite => "SatFinite",
            Saturation::Propagate => "SatPropagate",
            Saturation::None => "SatNone",
        }
    }

    /// Parse `finite`/`satfinite`/`sat`, `propagate`/`satpropagate`, `none`/`satnone`/
    /// `ovfinf`/`ovf` (any case).
    pub fn parse(s: &str) -> Option<Saturation> {
        let k: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        Some(match k.as_str() {
            "finite" | "satfinite" | "sat" | "saturate" => Saturation::Finite,
            "propagate" | "satpropagate" => Saturation::Propagate,
            "none" | "satnone" | "ovfinf" | "ovf" | "ieee" => Saturation::None,
            _ => return None,
        })
    }
}

impl fmt::Display for Saturation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which P3109 text decides `SatNone` on a finite format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Draft {
    /// The current text (formal specification after the v4.0 report, July 2026): NaN.
    #[default]
    D1,
    /// The Interim Report v4.0 (June 2026): ±max finite (and round to odd into an unsigned
    /// extended format saturates).
    V4,
}

impl Draft {
    /// Parse `d1` or `v4.0` (`v4`, `4.0`).
    pub fn parse(s: &str) -> Option<Draft> {
        match s.trim().to_ascii_lowercase().as_str() {
            "d1" => Some(Draft::D1),
            "v4.0" | "v4" | "4.0" | "4" => Some(Draft::V4),
            _ => None,
        }
    }
}

/// A rounding of the P3109 draft (§4.7.4); the stochastic ones carry their number `N` of
/// random bits (1 to 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Rounding {
    /// Nearest, ties to the even code (`rne`).
    #[default]
    NearestTiesToEven,
    /// Nearest, ties away from zero (`rna`).
    NearestTiesToAway,
    /// Toward +∞ (`rup`).
    TowardPositive,
    /// Toward −∞ (`rdn`).
    TowardNegative,
    /// Toward zero (`rtz`).
    TowardZero,
    /// To odd (`rto`): inexact results take the odd code of the two neighbours.
    ToOdd,
    /// `⌊ν·2^N⌋ + R ≥ 2^N` rounds away (ν the discarded fraction, `R < 2^N` random).
    StochasticA(u8),
    /// `⌊ν·2^(N+1)⌋ + 2R + 1 ≥ 2^(N+1)` rounds away.
    StochasticB(u8),
    /// `RNITE(ν·2^N) + R ≥ 2^N` rounds away (ν·2^N rounded to nearest, ties to even).
    StochasticC(u8),
}

impl Rounding {
    /// The deterministic roundings.
    pub const DETERMINISTIC: [Rounding; 6] = [
        Rounding::NearestTiesToEven,
        Rounding::NearestTiesToAway,
        Rounding::TowardPositive,
        Rounding::TowardNegative,
        Rounding::TowardZero,
        Rounding::ToOdd,
    ];

    /// The number of random bits, 0 for the deterministic roundings.
    pub const fn random_bits(self) -> u32 {
        match self {
            Rounding::StochasticA(n) | Rounding::StochasticB(n) | Rounding::StochasticC(n) => {
                n as u32
            }
            Rounding::NearestTiesToEven
            | Rounding::NearestTiesToAway
            | Rounding::TowardPositive
            | Rounding::TowardNegative
            | Rounding::TowardZero
            | Rounding::ToOdd => 0,
        }
    }

    /// The draft's name (`StochasticA8` for 8 random bits).
    pub fn name(self) -> String {
        match self {
            Rounding::NearestTiesToEven => "NearestTiesToEven".into(),
            Rounding::NearestTiesToAway => "NearestTiesToAway".into(),
            Rounding::TowardPositive => "TowardPositive".into(),
            Rounding::TowardNegative => "TowardNegative".into(),
            Rounding::TowardZero => "TowardZero".into(),
            Rounding::ToOdd => "ToOdd".into(),
            Rounding::StochasticA(n) => format!("StochasticA{n}"),
            Rounding::StochasticB(n) => format!("StochasticB{n}"),
            Rounding::StochasticC(n) => format!("StochasticC{n}"),
        }
    }

    /// Parse a short name (`rne`, `rna`, `rup`, `rdn`, `rtz`, `rto`, `sra`, `srb`, `src`,
    /// and lowprec's `sr` = `sra32`) or the draft's name, any case, with an optional number
    /// of random bits (`sra8`, `StochasticC:12`; default 32).
    ///
    /// ```
    /// use lowprec::ops::Rounding;
    /// assert_eq!(Rounding::parse("TowardZero"), Some(Rounding::TowardZero));
    /// assert_eq!(Rounding::parse("sra8"), Some(Rounding::StochasticA(8)));
    /// assert_eq!(Rounding::parse("StochasticC:12"), Some(Rounding::StochasticC(12)));
    /// assert_eq!(Rounding::parse("sra40"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Rounding> {
        let k: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' ' | ':'))
            .flat_map(char::to_lowercase)
            .collect();
        let digits = k.trim_start_matches(|c: char| !c.is_ascii_digit());
        let head = &k[..k.len() - digits.len()];
        let n: Option<u8> = if digits.is_empty() {
            None
        } else {
            Some(digits.parse().ok().filter(|n| (1..=32).contains(n))?)
        };
        let det = |r: Rounding| if n.is_none() { Some(r) } else { None };
        let bits = n.unwrap_or(32);
        match head {
            "rne" | "rn" | "nearesttiestoeven" | "nearesteven" => det(Rounding::NearestTiesToEven),
            "rna" | "nearesttiestoaway" | "nearestaway" => det(Rounding::NearestTiesToAway),
            "rup" | "ru" | "towardpositive" | "up" => det(Rounding::TowardPositive),
            "rdn" | "rd" | "towardnegative" | "down" => det(Rounding::TowardNegative),
            "rtz" | "rz" | "towardzero" => det(Rounding::TowardZero),
            "rto" | "toodd" | "odd" => det(Rounding::ToOdd),
            "sra" | "sr" | "stochastica" | "stochastic" => Some(Rounding::StochasticA(bits)),
            "srb" | "stochasticb" => Some(Rounding::StochasticB(bits)),
            "src" | "stochasticc" => Some(Rounding::StochasticC(bits)),
            _ => None,
        }
    }
}

impl From<RoundingMode> for Rounding {
    /// lowprec's modes; `sr` is StochasticA with 32 bits (the same rule, `⌊f·2^32⌋ + R ≥ 2^32`).
    fn from(m: RoundingMode) -> Rounding {
        match m {
            RoundingMode::NearestEven => Rounding::NearestTiesToEven,
            RoundingMode::NearestAway => Rounding::NearestTiesToAway,
            RoundingMode::TowardZero => Rounding::TowardZero,
            RoundingMode::Up => Rounding::TowardPositive,
            RoundingMode::Down => Rounding::TowardNegative,
            RoundingMode::ToOdd => Rounding::ToOdd,
            RoundingMode::Stochastic => Rounding::StochasticA(32),
        }
    }
}

/// A projection: rounding, saturation and the draft text for `SatNone` on finite formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Projection {
    /// The rounding.
    pub rounding: Rounding,
    /// The saturation mode.
    pub saturation: Saturation,
    /// The draft whose `SatNone` rule applies to finite P3109 formats.
    pub draft: Draft,
}

impl Projection {
    /// A projection with the default draft (D1).
    pub fn new(rounding: Rounding, saturation: Saturation) -> Projection {
        Projection {
            rounding,
            saturation,
            draft: Draft::D1,
        }
    }
}

/// What happened in one projection (bits of [`Outcome::flags`]).
pub mod flag {
    /// The result differs from the exact value.
    pub const INEXACT: u8 = 1;
    /// The rounded value was beyond the format's largest finite value.
    pub const OVERFLOW: u8 = 2;
    /// The exact result was nonzero, below the smallest normal, and inexact.
    pub const UNDERFLOW: u8 = 4;
    /// A NaN came from operands that were not NaN (0/0, ∞ − ∞, √−1, negative into unsigned).
    pub const INVALID: u8 = 8;
    /// A value beyond the range (or an infinity) became ±max.
    pub const SATURATED: u8 = 16;
}

/// An exact result before projection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exact {
    /// Not a number; `invalid` when no operand was NaN.
    Nan {
        /// Whether the NaN was produced from non-NaN operands.
        invalid: bool,
    },
    /// ±∞.
    Inf(bool),
    /// ±0 (exact).
    Zero(bool),
    /// A nonzero finite value.
    Val(Wide),
}

/// The result code and what happened; `code` is `None` for a NaN into a format without NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The code, or `None` when the result is NaN and the format has none.
    pub code: Option<u64>,
    /// [`flag`] bits.
    pub flags: u8,
}

enum Edge {
    Max,
    Inf,
    Nan,
    Zero,
}

/// Project an exact result into `fmt`. `p3109` selects the draft's rules for zeros (no −0 in
/// any result) and `random` holds the stochastic bits (`R < 2^N`).
pub fn project(fmt: &FloatFormat, x: Exact, prj: &Projection, p3109: bool, random: u32) -> Outcome {
    let pf = fmt.specials().is_p3109();
    let nan = |flags: u8| Outcome {
        code: fmt.nan_code(false),
        flags,
    };
    match x {
        Exact::Nan { invalid } => nan(if invalid { flag::INVALID } else { 0 }),
        Exact::Zero(neg) => zero(fmt, neg && !p3109, 0),
        Exact::Inf(neg) => {
            let edge = if !fmt.is_signed() && neg {
                match prj.saturation {
                    Saturation::Finite | Saturation::Propagate if pf => Edge::Zero,
                    _ => Edge::Nan,
                }
            } else {
                match prj.saturation {
                    Saturation::Finite => Edge::Max,
                    Saturation::Propagate if fmt.has_inf() => Edge::Inf,
                    Saturation::Propagate => Edge::Max,
                    Saturation::None if fmt.has_inf() => Edge::Inf,
                    Saturation::None if pf && prj.draft == Draft::V4 => Edge::Max,
                    Saturation::None => Edge::Nan,
                }
            };
            let sat = if matches!(edge, Edge::Max | Edge::Zero) {
                flag::SATURATED
            } else {
                0
            };
            edge_code(fmt, edge, neg, sat)
        }
        Exact::Val(w) => finite(fmt, &w, prj, p3109, random),
    }
}

fn zero(fmt: &FloatFormat, neg: bool, flags: u8) -> Outcome {
    if !fmt.has_zero() {
        return Outcome {
            code: fmt.nan_code(false),
            flags: flags | flag::INVALID,
        };
    }
    let code = if neg && fmt.has_negative_zero() {
        fmt.sign_mask()
    } else {
        0
    };
    Outcome {
        code: Some(code),
        flags,
    }
}

fn edge_code(fmt: &FloatFormat, edge: Edge, neg: bool, flags: u8) -> Outcome {
    let sign = if neg { fmt.sign_mask() } else { 0 };
    match edge {
        Edge::Max => Outcome {
            code: Some(fmt.max_mag() | sign),
            flags,
        },
        Edge::Inf => Outcome {
            code: fmt.inf_code(neg),
            flags,
        },
        Edge::Zero => Outcome {
            code: Some(0),
            flags,
        },
        Edge::Nan if !fmt.has_nan() => Outcome {
            code: Some(fmt.max_mag() | sign),
            flags: flags | flag::SATURATED,
        },
        Edge::Nan => Outcome {
            code: fmt.nan_code(false),
            flags,
        },
    }
}

fn finite(fmt: &FloatFormat, w: &Wide, prj: &Projection, p3109: bool, random: u32) -> Outcome {
    let pf = fmt.specials().is_p3109();
    let neg = w.neg;
    if neg && !fmt.is_signed() && !pf {
        // E8M0, UE4M3: negative values are NaN, as in casts
        return Outcome {
            code: fmt.nan_code(false),
            flags: flag::INVALID | flag::INEXACT,
        };
    }
    let m = fmt.man_bits() as i32;
    let emin = fmt.emin();
    let msb = w.msb();
    if !fmt.has_zero() && msb < emin {
        // below a format without zero (E8M0): its smallest value, as casts give
        return Outcome {
            code: Some(0),
            flags: flag::INEXACT | flag::UNDERFLOW,
        };
    }
    let e_eff = msb.max(emin);
    let q = e_eff - m; // quantum exponent
    let shift = q - w.exp;
    // N = ⌊|x| / 2^q⌋; remainder against half a quantum
    let (n, rem_cmp, exact, rem, sh) = if shift <= 0 {
        debug_assert!(!w.sticky);
        (
            (w.sig << (-shift) as u32),
            std::cmp::Ordering::Less,
            true,
            0u128,
            0u32,
        )
    } else if shift >= 128 {
        // everything below the quantum; |x| < 2^q / 2 since msb < q − 1 here
        let below = std::cmp::Ordering::Less;
        (0u128, below, false, w.sig, shift.min(1000) as u32)
    } else {
        let sh = shift as u32;
        let n = w.sig >> sh;
        let rem = w.sig & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        let c = match rem.cmp(&half) {
            std::cmp::Ordering::Equal if w.sticky => std::cmp::Ordering::Greater,
            o => o,
        };
        (n, c, rem == 0 && !w.sticky, rem, sh)
    };
    let nozero_min: u128 = if fmt.has_zero() { 0 } else { 1u128 << m };
    let base = (((e_eff - emin) as u128) << m) + n; // ordinal with the implicit bit, truncated
    let ord_t = base - nozero_min;
    let even = if pf && m == 0 {
        ord_t.is_multiple_of(2)
    } else {
        n.is_multiple_of(2)
    };
    use std::cmp::Ordering::*;
    let away = !exact
        && match prj.rounding {
            Rounding::NearestTiesToEven => rem_cmp == Greater || (rem_cmp == Equal && !even),
            Rounding::NearestTiesToAway => rem_cmp != Less,
            Rounding::TowardPositive => !neg,
            Rounding::TowardNegative => neg,
            Rounding::TowardZero => false,
            Rounding::ToOdd => even,
            Rounding::StochasticA(nb) => {
                let t = top_bits(rem, sh, nb as u32);
                t + random as u128 >= 1u128 << nb
            }
            Rounding::StochasticB(nb) => {
                let t = top_bits(rem, sh, nb as u32 + 1);
                t + 2 * random as u128 + 1 >= 1u128 << (nb + 1)
            }
            Rounding::StochasticC(nb) => {
                let nb = nb as u32;
                let t = if sh > nb {
                    let d = sh - nb;
                    let y = shr(rem, d);
                    let low = if d >= 128 {
                        rem
                    } else {
                        rem & ((1u128 << d) - 1)
                    };
                    let up = d <= 128 && {
                        let half = 1u128 << (d - 1);
                        low > half || (low == half && (w.sticky || y % 2 == 1))
                    };
                    y + up as u128
                } else {
                    top_bits(rem, sh, nb)
                };
                t + random as u128 >= 1u128 << nb
            }
        };
    let mut flags = 0u8;
    if !exact {
        flags |= flag::INEXACT;
        if msb < emin {
            flags |= flag::UNDERFLOW;
        }
    }
    let ord = ord_t + away as u128;
    if ord == 0 && fmt.has_zero() {
        return zero(fmt, neg && !p3109, flags);
    }
    let sign = if neg { fmt.sign_mask() } else { 0 };
    if neg && !fmt.is_signed() {
        // unsigned P3109 format, X < Mlo = 0
        let edge = match (prj.saturation, prj.rounding) {
            (Saturation::Finite | Saturation::Propagate, _) => Edge::Zero,
            (Saturation::None, Rounding::TowardZero | Rounding::TowardPositive) => Edge::Zero,
            (Saturation::None, _) => Edge::Nan,
        };
        let extra = match edge {
            Edge::Nan => flag::INVALID,
            _ => flag::SATURATED,
        };
        return edge_code(fmt, edge, true, flags | extra);
    }
    if ord > fmt.max_mag() as u128 {
        flags |= flag::OVERFLOW | flag::INEXACT;
        let toward_zero = match prj.rounding {
            Rounding::TowardZero => true,
            Rounding::TowardNegative => !neg,
            Rounding::TowardPositive => neg,
            Rounding::ToOdd => !pf || (prj.draft == Draft::V4 && !fmt.is_signed() && fmt.has_inf()),
            Rounding::NearestTiesToEven
            | Rounding::NearestTiesToAway
            | Rounding::StochasticA(_)
            | Rounding::StochasticB(_)
            | Rounding::StochasticC(_) => false,
        };
        let edge = match prj.saturation {
            Saturation::Finite | Saturation::Propagate => Edge::Max,
            Saturation::None if toward_zero => Edge::Max,
            Saturation::None if fmt.has_inf() => Edge::Inf,
            Saturation::None if pf && prj.draft == Draft::V4 => Edge::Max,
            Saturation::None if fmt.specials() == Specials::None => Edge::Max,
            Saturation::None => Edge::Nan,
        };
        let extra = match edge {
            Edge::Max | Edge::Zero => flag::SATURATED,
            Edge::Inf | Edge::Nan => 0,
        };
        return edge_code(fmt, edge, neg, flags | extra);
    }
    Outcome {
        code: Some(ord as u64 | sign),
        flags,
    }
}

/// `⌊rem · 2^(k − sh)⌋`: the top `k` bits of a remainder of `sh` bits.
fn top_bits(rem: u128, sh: u32, k: u32) -> u128 {
    if sh >= k {
        shr(rem, sh - k)
    } else {
        rem << (k - sh)
    }
}

fn shr(x: u128, s: u32) -> u128 {
    if s >= 128 {
        0
    } else {
        x >> s
    }
}

impl std::str::FromStr for Rounding {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Rounding> {
        Rounding::parse(s).ok_or_else(|| {
            crate::Error::InvalidArgument(format!(
                "unknown rounding `{s}`; write rne, rna, rup, rdn, rtz, rto, sra<N>, srb<N>, src<N> (N random bits, 1 to 32) or the draft's names (NearestTiesToEven, StochasticA8, ...)"
            ))
        })
    }
}

impl std::str::FromStr for Saturation {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Saturation> {
        Saturation::parse(s).ok_or_else(|| {
            crate::Error::InvalidArgument(format!(
                "unknown saturation `{s}`; write finite (SatFinite, sat), propagate (SatPropagate) or none (SatNone, OvfInf, ovf)"
            ))
        })
    }
}

impl std::str::FromStr for Draft {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Draft> {
        Draft::parse(s).ok_or_else(|| {
            crate::Error::InvalidArgument(format!("unknown draft `{s}`; write d1 or v4.0"))
        })
    }
}
