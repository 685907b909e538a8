//! Exact rationals on big integers for the operation tests' references (plain and slow).

use num_bigint::BigInt;
use std::cmp::Ordering;

/// `n / d` with `d > 0`.
#[derive(Clone, Debug)]
pub struct Rat {
    /// Numerator.
    pub n: BigInt,
    /// Denominator, positive.
    pub d: BigInt,
}

impl Rat {
    /// `(−1)^neg · m · 2^e`.
    pub fn dyadic(neg: bool, m: u64, e: i32) -> Rat {
        let n = BigInt::from(m);
        let n = if neg { -n } else { n };
        if e >= 0 {
            Rat {
                n: n << e as usize,
                d: BigInt::from(1),
            }
        } else {
            Rat {
                n,
                d: BigInt::from(1) << (-e) as usize,
            }
        }
    }

    /// The exact value of a finite binary64 number, from its fields.
    pub fn of(v: f64) -> Rat {
        assert!(v.is_finite());
        let bits = v.to_bits();
        let field = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let neg = bits >> 63 == 1;
        if field == 0 {
            Rat::dyadic(neg, frac, -1074)
        } else {
            Rat::dyadic(neg, frac | 1 << 52, field - 1075)
        }
    }

    /// The exact value of a finite binary32 number, from its fields.
    pub fn of_f32(x: f32) -> Rat {
        assert!(x.is_finite());
        let bits = x.to_bits();
        let f = (bits >> 23) & 0xff;
        let man = (bits & 0x7f_ffff) as u64;
        let neg = bits >> 31 == 1;
        if f == 0 {
            Rat::dyadic(neg, man, -149)
        } else {
            Rat::dyadic(neg, man | 1 << 23, f as i32 - 150)
        }
    }

    /// Compare exactly.
    pub fn cmp(&self, o: &Rat) -> Ordering {
        (&self.n * &o.d).cmp(&(&o.n * &self.d))
    }

    /// `self + o`.
    pub fn add(&self, o: &Rat) -> Rat {
        Rat {
            n: &self.n * &o.d + &o.n * &self.d,
            d: &self.d * &o.d,
        }
    }

    /// `self · o`.
    pub fn mul(&self, o: &Rat) -> Rat {
        Rat {
            n: &self.n * &o.n,
            d: &self.d * &o.d,
        }
    }

    /// `self / o` (`o ≠ 0`).
    pub fn div(&self, o: &Rat) -> Rat {
        let (n, d) = (&self.n * &o.d, &self.d * &o.n);
        if d < BigInt::from(0) {
            Rat { n: -n, d: -d }
        } else {
            Rat { n, d }
        }
    }

    /// `self / 2`.
    pub fn half(&self) -> Rat {
        Rat {
            n: self.n.clone(),
            d: &self.d * 2u32,
        }
    }

    /// The sign.
    pub fn sign(&self) -> Ordering {
        self.n.cmp(&BigInt::from(0))
    }
}
