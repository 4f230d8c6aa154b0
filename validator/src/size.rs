//! `SIZE-*` and `LAYOUT-ORDER`: a tensor's byte length from its shape and dtype.

use crate::dtype::Dtype;
use crate::rules::Rule;

/// The element count of a shape, or `None` if it overflows u64.
///
/// The count is the mathematical product: a shape with a zero dimension has no elements. The
/// overflow test is order-independent: it multiplies the non-zero dimensions only, so
/// `[2^63, 2^63, 0]` and `[0, 2^63, 2^63]` are both rejected (`SIZE-OVERFLOW`).
pub fn element_count(shape: &[u64]) -> Option<u64> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    if shape.contains(&0) {
        Some(0)
    } else {
        Some(nonzero)
    }
}

/// The byte length of a tensor of this dtype and shape, with the rule broken if there is none.
pub fn byte_length(dtype: Dtype, shape: &[u64]) -> Result<u64, (Rule, String)> {
    let overflow = || {
        (
            Rule::SizeOverflow,
            format!(
                "shape {} of {dtype} overflows 64 bits (element count x {} bits)",
                fmt_shape(shape),
                dtype.bits()
            ),
        )
    };
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(overflow)?;
    nonzero.checked_mul(dtype.bits()).ok_or_else(overflow)?;
    let elements = if shape.contains(&0) { 0 } else { nonzero };
    let bits = elements * dtype.bits();
    if !bits.is_multiple_of(8) {
        return Err((
            Rule::SizeBits,
            format!("{elements} elements of {dtype} take {bits} bits, not a whole number of bytes"),
        ));
    }
    Ok(bits / 8)
}

/// The byte length of a shape that breaks no `SIZE-*` rule, in one pass over its dimensions;
/// `None` where [`byte_length`] gives an error (the same conditions).
#[inline]
fn one_pass_bytes(dtype: Dtype, shape: &[u64]) -> Option<u64> {
    let mut nonzero = 1u64;
    let mut zero = false;
    for &d in shape {
        if d == 0 {
            zero = true;
        } else {
            nonzero = nonzero.checked_mul(d)?;
        }
    }
    let bits = nonzero.checked_mul(dtype.bits())?;
    match zero {
        true => Some(0),
        false => bits.is_multiple_of(8).then_some(bits / 8),
    }
}

/// Check one entry's offsets against its shape and dtype.
///
/// A valid entry takes one pass over its dimensions (this runs once per tensor of a header of
/// up to a million); the rule and message of an invalid one come from [`byte_length`].
#[inline]
pub(crate) fn check(
    dtype: Dtype,
    shape: &[u64],
    begin: u64,
    end: u64,
) -> Result<(), (Rule, String)> {
    if begin <= end && one_pass_bytes(dtype, shape) == Some(end - begin) {
        return Ok(());
    }
    if begin > end {
        return Err((
            Rule::LayoutOrder,
            format!("data_offsets [{begin}, {end}] begin after end"),
        ));
    }
    let bytes = byte_length(dtype, shape)?;
    if bytes != end - begin {
        return Err((
            Rule::SizeMismatch,
            format!(
                "shape {} of {dtype} takes {bytes} bytes, but data_offsets [{begin}, {end}] span {}",
                fmt_shape(shape),
                end - begin
            ),
        ));
    }
    Ok(())
}

/// A shape for messages, cut after 8 dimensions so a hostile shape cannot flood a report.
pub fn fmt_shape(shape: &[u64]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("[");
    for (i, d) in shape.iter().take(8).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{d}");
    }
    if shape.len() > 8 {
        let _ = write!(out, ", ... ({} dimensions)", shape.len());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one pass of [`check`] accepts exactly what [`byte_length`] accepts, with the same
    /// length: overflow with and without a zero dimension, part bytes.
    #[test]
    fn the_one_pass_agrees_with_byte_length() {
        let big = 1u64 << 63;
        let shapes: &[&[u64]] = &[
            &[],
            &[0],
            &[1],
            &[3],
            &[1, 8],
            &[0, 11008],
            &[3, 5],
            &[big, 2],
            &[big, big, 0],
            &[0, big, big],
            &[big, 1],
            &[1 << 61],
            &[1 << 61, 0],
            &[u64::MAX],
            &[u64::MAX, 0],
        ];
        for &dtype in Dtype::ALL {
            for shape in shapes {
                let slow = byte_length(dtype, shape).ok();
                assert_eq!(one_pass_bytes(dtype, shape), slow, "{dtype} {shape:?}");
                if let Some(bytes) = slow {
                    assert_eq!(check(dtype, shape, 5, 5 + bytes), Ok(()));
                    let wrong = check(dtype, shape, 5, 6 + bytes).map_err(|e| e.0);
                    assert_eq!(wrong, Err(Rule::SizeMismatch), "{dtype} {shape:?}");
                }
            }
        }
    }
}
