//! The relative error of a result against the oracle. (Min, median and max of the timed
//! repetitions are [`alto::harness::record::min_median_max`], the one definition every record
//! of the workspace uses.)

/// Largest `|got - want| / max(|want|, tiny)` over all entries (inputs are non-negative, so
/// there is no cancellation and every entry is accurate to a few ulps per term).
pub fn max_relative_error(got: &alto::Matrix, want: &alto::Matrix) -> f64 {
    if (got.rows(), got.cols()) != (want.rows(), want.cols()) {
        return f64::INFINITY;
    }
    let scale = want
        .as_slice()
        .iter()
        .fold(0.0f64, |a, &x| a.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    got.as_slice()
        .iter()
        .zip(want.as_slice())
        .map(|(&g, &w)| {
            let d = (g - w).abs();
            if d.is_nan() {
                f64::NAN
            } else {
                d / w.abs().max(scale * 1e-6)
            }
        })
        .fold(0.0, |a: f64, x| {
            if x.is_nan() || a.is_nan() {
                f64::NAN
            } else {
                a.max(x)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alto::Matrix;

    #[test]
    fn relative_errors() {
        let a = Matrix::from_vec(1, 3, vec![1.0, 2.0, 0.0]).unwrap();
        let b = Matrix::from_vec(1, 3, vec![1.0, 2.0 + 2e-12, 0.0]).unwrap();
        assert!(max_relative_error(&b, &a) < 1e-11);
        let c = Matrix::from_vec(1, 3, vec![1.0, f64::NAN, 0.0]).unwrap();
        assert!(max_relative_error(&c, &a).is_nan());
    }
}
