//! Base-2 logarithms in fixed point, with integers only, so BM25's inverse
//! document frequency is the same number on every CPU (docs/memory.md).

/// Fractional bits of a fixed-point logarithm: `1 << LOG2_FRACTION_BITS` is 1.0.
pub const LOG2_FRACTION_BITS: u32 = 16;

/// log2(`x`) in fixed point with `LOG2_FRACTION_BITS` fractional bits, for
/// `x` ≥ 1 (0 gives 0). The fraction is found bit by bit by squaring the
/// mantissa (exact integer steps, truncated), so it is never above the true
/// value and at most a few units of the last place below it.
pub fn log2_fixed(x: u64) -> u64 {
    if x <= 1 {
        return 0;
    }
    let whole = 63 - u64::from(x.leading_zeros());
    // The mantissa x / 2^whole in [1, 2), as a Q32 number.
    let mut mantissa: u128 = if whole <= 32 { u128::from(x) << (32 - whole) } else { u128::from(x >> (whole - 32)) };
    let mut fraction = 0u64;
    for bit in (0..LOG2_FRACTION_BITS).rev() {
        mantissa = (mantissa * mantissa) >> 32;
        if mantissa >= 2u128 << 32 {
            mantissa >>= 1;
            fraction |= 1 << bit;
        }
    }
    (whole << LOG2_FRACTION_BITS) | fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_are_exact_and_others_are_close_from_below() {
        let one = 1u64 << LOG2_FRACTION_BITS;
        let check = |x: u64, expected: u64| assert_eq!(log2_fixed(x), expected, "log2({x})");
        check(0, 0);
        check(1, 0);
        check(2, one);
        check(1024, 10 * one);
        check(1 << 40, 40 * one);
        // log2(3) = 1.5849625…, log2(10) = 3.3219280…, log2(1000001) = 19.931570…
        for (x, exact) in
            [(3u64, 1.584_962_500_721_156_f64), (10, std::f64::consts::LOG2_10), (1_000_001, 19.931_570_6)]
        {
            let got = log2_fixed(x);
            let expected = (exact * one as f64) as u64;
            assert!(got <= expected + 1 && expected - got <= 4, "log2({x}): {got} vs {expected}");
        }
        check(u64::MAX, log2_fixed(u64::MAX));
        assert!(log2_fixed(u64::MAX) < 64 * one);
    }

    #[test]
    fn the_logarithm_never_decreases() {
        let mut previous = 0;
        for x in 1..5_000u64 {
            let now = log2_fixed(x);
            assert!(now >= previous, "log2({x})");
            previous = now;
        }
    }
}
