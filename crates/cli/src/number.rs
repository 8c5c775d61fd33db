//! Numbers as the CLI prints them for people.

/// `x` with `digits` decimals, in scientific notation when its magnitude is 1e15 or more (or
/// below 1e-4 and not 0), so that a valid but extreme input (a weight of 1e300, a deficit of
/// -1.8e308) prints as a number a reader can take in, not as 300 digits.
pub fn fixed(x: f64, digits: usize) -> String {
    let a = x.abs();
    if x.is_finite() && a != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:.digits$e}")
    } else {
        format!("{x:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn ordinary_numbers_keep_their_decimals_and_extreme_ones_take_an_exponent() {
        assert_eq!(fixed(1.8333333333, 6), "1.833333");
        assert_eq!(fixed(0.0, 4), "0.0000");
        assert_eq!(fixed(-1.0, 4), "-1.0000");
        assert_eq!(fixed(123456789012345.0, 2), "123456789012345.00");
        assert_eq!(fixed(1e15, 3), "1.000e15");
        assert_eq!(fixed(-f64::MAX, 4), "-1.7977e308");
        assert_eq!(fixed(2.5e-7, 4), "2.5000e-7");
        assert_eq!(fixed(f64::INFINITY, 4), "inf");
    }
}
