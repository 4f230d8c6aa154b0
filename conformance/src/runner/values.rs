//! Comparing decoded values (protocol v2's optional `values` report).
//!
//! Every value of every float format a safetensors file can hold is exactly representable as
//! a 64-bit float, so values are compared as `f64`: parsed from any decimal spelling
//! (`0.5`, `5e-1`, `-0`), or `nan`, `inf`, `-inf` (any case, `infinity` too). Two values match
//! when both are NaN (sign and payload are not compared), or when they are equal with the same
//! sign (so `-0` and `0` differ).

/// Parse one reported or expected value.
pub fn parse(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    match t.to_ascii_lowercase().as_str() {
        "nan" | "-nan" => Some(f64::NAN),
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => t.parse::<f64>().ok(),
    }
}

/// Whether two values match (see the module documentation).
pub fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
}

/// Compare a reported list with the expected one; the error names the first difference.
pub fn compare(reported: &[String], expected: &[String]) -> Result<(), String> {
    if reported.len() != expected.len() {
        return Err(format!(
            "{} values reported (expected {})",
            reported.len(),
            expected.len()
        ));
    }
    for (i, (r, e)) in reported.iter().zip(expected).enumerate() {
        let Some(want) = parse(e) else {
            return Err(format!("expected value {i} {e:?} does not parse"));
        };
        match parse(r) {
            Some(got) if same(got, want) => {}
            Some(_) => {
                let shown: String = r.chars().take(40).collect();
                return Err(format!("value {i} is {shown:?} (expected {e})"));
            }
            None => {
                let shown: String = r.chars().take(40).collect();
                return Err(format!("value {i} {shown:?} is not a number"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_and_signs() {
        assert!(same(
            parse("0.5").unwrap_or(0.0),
            parse("5e-1").unwrap_or(1.0)
        ));
        assert!(same(
            parse("NaN").unwrap_or(0.0),
            parse("-nan").unwrap_or(0.0)
        ));
        assert!(same(parse("-Infinity").unwrap_or(0.0), f64::NEG_INFINITY));
        assert!(!same(parse("-0").unwrap_or(1.0), parse("0").unwrap_or(1.0)));
        assert!(!same(parse("448").unwrap_or(0.0), f64::NAN));
        assert!(parse("one").is_none());
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(compare(&v(&["1", "nan"]), &v(&["1.0", "NaN"])).is_ok());
        let e = compare(&v(&["1", "448"]), &v(&["1", "nan"])).expect_err("differs");
        assert!(e.contains("value 1"), "{e}");
        assert!(compare(&v(&["1"]), &v(&["1", "2"])).is_err());
    }
}
