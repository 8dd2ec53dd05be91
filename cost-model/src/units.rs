//! Memory sizes. All memory is bytes in a `u64` newtype: never `usize`, which is
//! 32-bit on wasm32. GiB = 2^30 bytes, MiB = 2^20 bytes (what nvidia-smi prints),
//! GB = 10^9 bytes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign};

/// 2^20 bytes: the unit nvidia-smi prints as "MiB".
pub const MIB: u64 = 1 << 20;
/// 2^30 bytes.
pub const GIB: u64 = 1 << 30;
/// 10^9 bytes: the unit of the ZeRO paper's "GB".
pub const GB: u64 = 1_000_000_000;

/// A number of bytes. Arithmetic saturates: no input can overflow it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);

    pub const fn new(b: u64) -> Self {
        Bytes(b)
    }

    pub const fn from_mib(m: u64) -> Self {
        Bytes(m.saturating_mul(MIB))
    }

    pub const fn from_gib(g: u64) -> Self {
        Bytes(g.saturating_mul(GIB))
    }

    /// Rounds a non-negative real byte count to the nearest byte. Negative and
    /// NaN map to zero, values past `u64::MAX` saturate (Rust's `as` semantics).
    ///
    /// The same result as `b.round() as u64` (halves away from zero), without
    /// the libm call `round` is on baseline x86-64 and wasm32 (perf: 18 % of
    /// an 8-stage estimate's time) and through the signed conversions, one
    /// instruction each there where the unsigned ones are a branchy sequence:
    /// below 2^63 `as i64` truncates, and the fraction `b − trunc(b)` is exact
    /// in f64 (Sterbenz for b ≥ 1; zero past 2^53, where every f64 is an
    /// integer). Tests below check it against `round` bit for bit.
    #[inline]
    pub fn from_f64(b: f64) -> Self {
        // Zero, negatives and NaN.
        if b.is_nan() || b <= 0.0 {
            return Bytes(0);
        }
        // Every f64 from 2^63 up is an integer; `as` saturates past u64::MAX.
        if b >= 9_223_372_036_854_775_808.0 {
            return Bytes(b as u64);
        }
        let t = b as i64;
        let up = b - t as f64 >= 0.5;
        Bytes(t as u64 + up as u64)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    pub fn gib(self) -> f64 {
        self.0 as f64 / GIB as f64
    }

    pub fn mib(self) -> f64 {
        self.0 as f64 / MIB as f64
    }

    pub fn gb(self) -> f64 {
        self.0 as f64 / GB as f64
    }

    pub const fn saturating_sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }

    /// Multiplies by a real factor (≥ 0), saturating.
    pub fn scale(self, k: f64) -> Bytes {
        Bytes::from_f64(self.0 as f64 * k)
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Bytes {
    /// Binary (IEC) units, as nvidia-smi and PyTorch print them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= GIB {
            write!(f, "{:.2} GiB", self.gib())
        } else if b >= MIB {
            write!(f, "{:.1} MiB", self.mib())
        } else if b >= 1024 {
            write!(f, "{:.1} KiB", b as f64 / 1024.0)
        } else {
            write!(f, "{b} B")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_uses_binary_units() {
        assert_eq!(Bytes::from_gib(80).to_string(), "80.00 GiB");
        assert_eq!(Bytes::from_mib(512).to_string(), "512.0 MiB");
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(7).to_string(), "7 B");
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Bytes(u64::MAX) + Bytes(1), Bytes(u64::MAX));
        assert_eq!(Bytes(1).saturating_sub(Bytes(2)), Bytes::ZERO);
        assert_eq!(Bytes::from_f64(f64::NAN), Bytes::ZERO);
        assert_eq!(Bytes::from_f64(-3.0), Bytes::ZERO);
        assert_eq!(Bytes::from_f64(1e30), Bytes(u64::MAX));
    }

    /// `from_f64` is `round() as u64` exactly: at every half, at the f64
    /// just below a half, where f64 stops holding fractions, at the ends of
    /// u64, and over a sweep of byte counts from one byte to 2^70.
    #[test]
    fn from_f64_rounds_as_round_does() {
        let below_half = 0.5f64.next_down();
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            below_half,
            1.5,
            2.5,
            1.0 + below_half,
            4_503_599_627_370_495.5,      // 2^52 − 0.5
            9_007_199_254_740_991.0,      // 2^53 − 1
            18_446_744_073_709_549_568.0, // the last f64 below 2^64
            18_446_744_073_709_551_616.0, // 2^64
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            -0.5,
            -1.5,
        ];
        let mut x = 1.0f64;
        while x < 1.2e21 {
            for k in [0.0, 0.25, 0.5, 0.75] {
                xs.push(x + k);
                xs.push((x + k).next_down());
                xs.push((x + k).next_up());
            }
            x *= 1.37;
        }
        for x in xs {
            assert_eq!(Bytes::from_f64(x).get(), x.round() as u64, "{x:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn from_f64_rounds_as_round_does_for_any_f64(x in proptest::num::f64::ANY) {
            proptest::prop_assert_eq!(Bytes::from_f64(x).get(), x.round() as u64);
        }

        #[test]
        fn from_f64_rounds_as_round_does_for_byte_counts(x in 0.0f64..1e15) {
            proptest::prop_assert_eq!(Bytes::from_f64(x).get(), x.round() as u64);
        }
    }
}
