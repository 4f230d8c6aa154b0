//! The deep scan: per-dtype special values, BOOL bytes, polyglots, SHA-256, and the equality of
//! the mmap, streaming and multi-threaded paths.

use half::{bf16, f16};
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use stcheck::internal::sniff;
use stcheck::{Checked, Checker, Config, Dtype, Error, Report, Warning};
use stcheck_testkit::corpus::Manifest;

// ---------------------------------------------------------------------------------------------
// The deep scan through the one checker, seen per tensor

/// How the scan is run: the hash, threads for a mapped file.
#[derive(Debug, Clone, Copy, Default)]
struct DeepOptions {
    sha256: bool,
    threads: usize,
    min_bytes_per_thread: u64,
}

impl DeepOptions {
    fn new() -> Self {
        Self::default()
    }
    fn sha256(mut self, yes: bool) -> Self {
        self.sha256 = yes;
        self
    }
    fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
    fn min_bytes_per_thread(mut self, b: u64) -> Self {
        self.min_bytes_per_thread = b;
        self
    }
    fn config(&self, base: &Config) -> Config {
        base.clone()
            .deep(true)
            .sha256(self.sha256)
            .threads(self.threads)
            .min_bytes_per_thread(self.min_bytes_per_thread)
    }
}

/// The counts of one tensor (every tensor, with zeros where it holds no NaN or infinity).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TensorStats {
    name: String,
    dtype: Dtype,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
}

impl TensorStats {
    fn non_finite(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct DeepReport {
    tensors: Vec<TensorStats>,
    sha256: Option<[u8; 32]>,
    bytes_scanned: u64,
}

fn seen(c: Checked<'_>) -> Result<(Report<'static>, DeepReport), Error> {
    let report = c.verdict?.into_owned();
    let d = c.deep.expect("a deep report for a valid file");
    let tensors = report
        .tensors()
        .enumerate()
        .map(|(i, t)| {
            let s = d.non_finite.iter().find(|s| s.index == i);
            TensorStats {
                name: t.name.to_owned(),
                dtype: t.dtype,
                nan: s.map_or(0, |s| s.nan),
                pos_inf: s.map_or(0, |s| s.pos_inf),
                neg_inf: s.map_or(0, |s| s.neg_inf),
            }
        })
        .collect();
    let out = DeepReport {
        tensors,
        sha256: c.sha256,
        bytes_scanned: d.bytes_scanned,
    };
    Ok((report, out))
}

fn validate_reader_deep<R: std::io::Read>(
    r: R,
    config: &Config,
    opts: &DeepOptions,
) -> Result<(Report<'static>, DeepReport), Error> {
    seen(stcheck::check_reader(r, &opts.config(config)).expect("no I/O error from memory"))
}

// ---------------------------------------------------------------------------------------------
// Building files

/// A file with these tensors laid out back to back in the given order (no alignment, unlike
/// the canonical writer, so tensors may begin at odd offsets), the header padded to `pad_to`
/// bytes with spaces (at least to a multiple of 8).
fn build_padded(tensors: &[(&str, Dtype, &[u8])], pad_to: usize) -> Vec<u8> {
    let mut json = String::from("{");
    let mut at = 0usize;
    for (i, (name, dtype, data)) in tensors.iter().enumerate() {
        let bits = dtype.bits() as usize;
        let elements = data.len() * 8 / bits;
        assert_eq!(elements * bits, data.len() * 8, "whole elements");
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#""{name}":{{"dtype":"{}","shape":[{elements}],"data_offsets":[{at},{}]}}"#,
            dtype.name(),
            at + data.len()
        ));
        at += data.len();
    }
    json.push('}');
    let mut n = json.len().max(pad_to);
    n = n.div_ceil(8) * 8;
    let mut out = (n as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.resize(8 + n, b' ');
    for (_, _, data) in tensors {
        out.extend_from_slice(data);
    }
    out
}

fn build(tensors: &[(&str, Dtype, &[u8])]) -> Vec<u8> {
    build_padded(tensors, 0)
}

fn deep(
    file: &[u8],
    config: &Config,
    opts: &DeepOptions,
) -> Result<(Report<'static>, DeepReport), Error> {
    seen(Checker::check_slice(&opts.config(config), file))
}

fn ok(file: &[u8]) -> (Report<'static>, DeepReport) {
    deep(file, &Config::default(), &DeepOptions::new()).expect("valid and clean")
}

fn warnings_of(report: &Report<'_>, rule: &str) -> Vec<Warning> {
    report
        .warnings()
        .iter()
        .filter(|w| w.rule().id() == rule)
        .cloned()
        .collect()
}

fn le16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn le32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn le64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// (nan, +inf, -inf) of the single tensor of `file`.
fn counts(file: &[u8]) -> (u64, u64, u64) {
    let (_, d) = ok(file);
    assert_eq!(d.tensors.len(), 1);
    let t = &d.tensors[0];
    (t.nan, t.pos_inf, t.neg_inf)
}

// ---------------------------------------------------------------------------------------------
// Special values per dtype

#[test]
fn f16_special_values() {
    let v = [
        0x0000, 0x8000, // +-0
        0x0001, 0x03FF, 0x8001, 0x83FF, // subnormals
        0x7BFF, 0xFBFF, // +-max finite
        0x3C00, // 1.0
        0x7C00, 0xFC00, // +-Inf
        0x7C01, 0x7E00, 0x7FFF, 0xFC01, 0xFE00, 0xFFFF, // NaNs: signalling, quiet, all ones
    ];
    let file = build(&[("x", Dtype::F16, &le16(&v))]);
    assert_eq!(counts(&file), (6, 1, 1));
}

#[test]
fn f16_and_bf16_every_bit_pattern() {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let data = le16(&all);
    // F16: exponent 31 with a non-zero 10-bit mantissa, both signs: 2 x 1023 NaN.
    assert_eq!(counts(&build(&[("h", Dtype::F16, &data)])), (2046, 1, 1));
    // BF16: exponent 255 with a non-zero 7-bit mantissa, both signs: 2 x 127 NaN.
    assert_eq!(counts(&build(&[("b", Dtype::BF16, &data)])), (254, 1, 1));
}

#[test]
fn bf16_special_values() {
    let v = [
        0x0000, 0x8000, 0x0001, 0x807F, 0x7F7F, 0xFF7F, 0x3F80, 0x7F80, 0xFF80, 0x7F81, 0x7FC0,
        0x7FFF, 0xFFC1,
    ];
    assert_eq!(counts(&build(&[("x", Dtype::BF16, &le16(&v))])), (4, 1, 1));
}

#[test]
fn f32_special_values() {
    let v = [
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
        0x807F_FFFF,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x7F80_0000,
        0xFF80_0000,
        0x7F80_0001,
        0x7FC0_0000,
        0x7FFF_FFFF,
        0xFF80_0001,
        0xFFC0_0000,
        0xFFFF_FFFF,
        0xFF80_0000,
    ];
    assert_eq!(counts(&build(&[("x", Dtype::F32, &le32(&v))])), (6, 1, 2));
}

#[test]
fn f64_special_values() {
    let v = [
        0,
        0x8000_0000_0000_0000,
        1,
        0x800F_FFFF_FFFF_FFFF,
        0x7FEF_FFFF_FFFF_FFFF,
        0xFFEF_FFFF_FFFF_FFFF,
        0x7FF0_0000_0000_0000,
        0x7FF0_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0x7FF0_0000_0000_0001,
        0x7FF8_0000_0000_0000,
        0x7FFF_FFFF_FFFF_FFFF,
        0xFFF0_0000_0000_0001,
        0xFFFF_FFFF_FFFF_FFFF,
        // An F32 NaN pattern in each half is an ordinary finite F64.
        0x7FC0_0000_7FC0_0000,
    ];
    assert_eq!(counts(&build(&[("x", Dtype::F64, &le64(&v))])), (5, 2, 1));
}

#[test]
fn c64_counts_each_part() {
    let v = [
        0x3F80_0000,
        0x0000_0000, // 1 + 0i
        0x7FC0_0000,
        0x7F80_0000, // NaN + Inf i
        0xFF80_0000,
        0x0000_0001, // -Inf + subnormal i
        0x7F80_0001,
        0xFFFF_FFFF, // NaN + NaN i
    ];
    let file = build(&[("z", Dtype::C64, &le32(&v))]);
    assert_eq!(counts(&file), (3, 1, 1));
    // The warning points at the element (8 bytes), not at the part.
    let (report, _) = ok(&file);
    let w = warnings_of(&report, "DATA-NONFINITE");
    assert_eq!(w.len(), 1);
    let t = report.tensor("z").expect("tensor");
    assert_eq!(w[0].offset(), t.file_begin + 8);
}

#[test]
fn f8_every_byte() {
    let all: Vec<u8> = (0..=255).collect();
    let c = |d| counts(&build(&[("q", d, &all)]));
    // E5M2: exponent 31 (0x7C..0x7F, 0xFC..0xFF): mantissa 0 is Inf, else NaN.
    assert_eq!(c(Dtype::F8_E5M2), (6, 1, 1));
    // E4M3 (FN): 0x7F and 0xFF only.
    assert_eq!(c(Dtype::F8_E4M3), (2, 0, 0));
    // FNUZ: only 0x80 ("negative zero") is NaN.
    assert_eq!(c(Dtype::F8_E4M3FNUZ), (1, 0, 0));
    assert_eq!(c(Dtype::F8_E5M2FNUZ), (1, 0, 0));
    // E8M0: 0xFF.
    assert_eq!(c(Dtype::F8_E8M0), (1, 0, 0));
    // No NaN/Inf in integers or the sub-byte floats, whatever their bits.
    for d in [Dtype::U8, Dtype::I8, Dtype::F4] {
        assert_eq!(c(d), (0, 0, 0), "{d}");
    }
    // 255 bytes = 340 six-bit elements.
    for d in [Dtype::F6_E2M3, Dtype::F6_E3M2] {
        assert_eq!(counts(&build(&[("q", d, &all[..255])])), (0, 0, 0), "{d}");
    }
}

#[test]
fn f8_special_values_by_name() {
    // E5M2: +-0, min subnormal, max finite 0x7B, +-Inf, three NaN mantissas per sign.
    let e5m2 = [
        0x00, 0x80, 0x01, 0x7B, 0xFB, 0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF,
    ];
    assert_eq!(counts(&build(&[("a", Dtype::F8_E5M2, &e5m2)])), (6, 1, 1));
    // E4M3: 0x7E is max finite (448), 0x78 would be Inf in IEEE but is 256 here.
    let e4m3 = [0x00, 0x80, 0x01, 0x78, 0x7E, 0xFE, 0x7F, 0xFF];
    assert_eq!(counts(&build(&[("b", Dtype::F8_E4M3, &e4m3)])), (2, 0, 0));
    let fnuz = [0x00, 0x7F, 0xFF, 0x80, 0x80, 0x01];
    assert_eq!(
        counts(&build(&[("c", Dtype::F8_E4M3FNUZ, &fnuz)])),
        (2, 0, 0)
    );
    let e8m0 = [0x00, 0x7F, 0xFE, 0xFF];
    assert_eq!(counts(&build(&[("d", Dtype::F8_E8M0, &e8m0)])), (1, 0, 0));
}

/// Each special or boundary value alone among zeros, in the second 4 KiB block of a tensor:
/// the kernels' block-wise fast path must notice it by itself (in the tests above, one special
/// value in a block would hide a fast path that misses another).
#[test]
fn each_value_alone_in_its_block() {
    const N: u8 = 1; // NaN
    const P: u8 = 2; // +Inf
    const M: u8 = 3; // -Inf
    let f16 = |v: u16| v.to_le_bytes().to_vec();
    let f32 = |v: u32| v.to_le_bytes().to_vec();
    let f64 = |v: u64| v.to_le_bytes().to_vec();
    let cases: Vec<(Dtype, Vec<u8>, u8)> = vec![
        (Dtype::F16, f16(0x7BFF), 0),
        (Dtype::F16, f16(0xFBFF), 0),
        (Dtype::F16, f16(0x03FF), 0),
        (Dtype::F16, f16(0x7C00), P),
        (Dtype::F16, f16(0xFC00), M),
        (Dtype::F16, f16(0x7C01), N),
        (Dtype::F16, f16(0xFC01), N),
        (Dtype::F16, f16(0x7E00), N),
        (Dtype::F16, f16(0xFFFF), N),
        (Dtype::BF16, f16(0x7F7F), 0),
        (Dtype::BF16, f16(0xFF7F), 0),
        (Dtype::BF16, f16(0x7F80), P),
        (Dtype::BF16, f16(0xFF80), M),
        (Dtype::BF16, f16(0x7F81), N),
        (Dtype::BF16, f16(0xFFC0), N),
        (Dtype::F32, f32(0x7F7F_FFFF), 0),
        (Dtype::F32, f32(0x7F80_0000), P),
        (Dtype::F32, f32(0xFF80_0000), M),
        (Dtype::F32, f32(0x7F80_0001), N),
        (Dtype::F32, f32(0xFFFF_FFFF), N),
        (Dtype::F64, f64(0x7FEF_FFFF_FFFF_FFFF), 0),
        (Dtype::F64, f64(0x7FF0_0000_0000_0000), P),
        (Dtype::F64, f64(0xFFF0_0000_0000_0000), M),
        (Dtype::F64, f64(0x7FF0_0000_0000_0001), N),
        (Dtype::F64, f64(0xFFF8_0000_0000_0000), N),
        (Dtype::C64, f64(0x7F80_0000), P),
        (Dtype::C64, f64(0xFF80_0000_0000_0000), M),
        (Dtype::C64, f64(0x7FC0_0000_0000_0000), N),
        (Dtype::C64, f64(0x7F7F_FFFF_7F7F_FFFF), 0),
        (Dtype::F8_E5M2, vec![0x7B], 0),
        (Dtype::F8_E5M2, vec![0xFB], 0),
        (Dtype::F8_E5M2, vec![0x7C], P),
        (Dtype::F8_E5M2, vec![0xFC], M),
        (Dtype::F8_E5M2, vec![0x7D], N),
        (Dtype::F8_E5M2, vec![0xFF], N),
        (Dtype::F8_E4M3, vec![0x7E], 0),
        (Dtype::F8_E4M3, vec![0x78], 0),
        (Dtype::F8_E4M3, vec![0x7F], N),
        (Dtype::F8_E4M3, vec![0xFF], N),
        (Dtype::F8_E4M3FNUZ, vec![0x80], N),
        (Dtype::F8_E4M3FNUZ, vec![0x7F], 0),
        (Dtype::F8_E4M3FNUZ, vec![0xFF], 0),
        (Dtype::F8_E4M3FNUZ, vec![0x81], 0),
        (Dtype::F8_E5M2FNUZ, vec![0x80], N),
        (Dtype::F8_E5M2FNUZ, vec![0x7C], 0),
        (Dtype::F8_E8M0, vec![0xFF], N),
        (Dtype::F8_E8M0, vec![0xFE], 0),
        (Dtype::F8_E8M0, vec![0x7F], 0),
    ];
    for (dtype, value, class) in cases.iter().cloned() {
        let at = 4096 + 8;
        let mut data = vec![0u8; 3 * 4096];
        data[at..at + value.len()].copy_from_slice(&value);
        let file = build(&[("lead", Dtype::BOOL, &[1, 0, 1]), ("t", dtype, &data)]);
        let (report, d) = ok(&file);
        let t = d.tensors.iter().find(|t| t.name == "t").expect("t");
        let want = match class {
            N => (1, 0, 0),
            P => (0, 1, 0),
            M => (0, 0, 1),
            _ => (0, 0, 0),
        };
        assert_eq!((t.nan, t.pos_inf, t.neg_inf), want, "{dtype} {value:02x?}");
        let w = warnings_of(&report, "DATA-NONFINITE");
        let begin = report.tensor("t").expect("t").file_begin;
        let want_at = (class != 0).then_some(begin + at as u64);
        assert_eq!(
            w.first().map(|w| w.offset()),
            want_at,
            "{dtype} {value:02x?}"
        );
    }
    // The same values as the last lane of a tensor whose length is not a multiple of 8 bytes
    // (the kernels look at the data 8 bytes at a time: the last, partial word is padded), in a
    // tensor of one word at most and in the last block of a longer one, with every path.
    for (dtype, value, class) in cases.iter().filter(|c| c.1.len() < 8) {
        for len in [value.len(), 6, 4096 + 8 - value.len()] {
            let len = len / value.len() * value.len();
            let mut data = vec![0u8; len];
            data[len - value.len()..].copy_from_slice(value);
            let file = build(&[("t", *dtype, &data)]);
            let want = match *class {
                N => (1, 0, 0),
                P => (0, 1, 0),
                M => (0, 0, 1),
                _ => (0, 0, 0),
            };
            assert_eq!(
                counts(&file),
                want,
                "{dtype} {value:02x?} last of {len} bytes"
            );
            all_paths_agree(&file, &Config::default(), false);
        }
    }
    // BOOL: one bad byte alone.
    for bad in [2u8, 0x80, 0xFF, 0xFE] {
        let mut data = vec![0u8; 3 * 4096];
        data[4096 + 8] = bad;
        let file = build(&[("m", Dtype::BOOL, &data)]);
        let e = deep(&file, &Config::default(), &DeepOptions::new()).expect_err("bad");
        assert_eq!(e.rule().id(), "DATA-BOOL");
    }
}

#[test]
fn integers_are_not_inspected() {
    let nan_bits = le32(&[0x7FC0_0000, 0xFFFF_FFFF]);
    for d in [Dtype::I32, Dtype::U32] {
        assert_eq!(counts(&build(&[("i", d, &nan_bits)])), (0, 0, 0));
    }
}

#[test]
fn nonfinite_warning_per_tensor_and_deny() {
    let clean = le32(&[0x3F80_0000; 4]);
    let a = le16(&[0x3C00, 0x3C00, 0x7E00, 0xFC00, 0x7E00, 0, 0, 0]);
    let b = le32(&[0, 0xFF80_0000, 0]);
    let file = build(&[
        ("clean", Dtype::F32, &clean),
        ("a", Dtype::F16, &a),
        ("b", Dtype::F32, &b),
    ]);
    let (report, d) = ok(&file);
    let w = warnings_of(&report, "DATA-NONFINITE");
    assert_eq!(w.len(), 2);
    let ta = report.tensor("a").expect("a");
    let tb = report.tensor("b").expect("b");
    assert_eq!(
        (w[0].tensor(), w[0].offset()),
        (Some("a"), ta.file_begin + 4)
    );
    assert_eq!(
        (w[1].tensor(), w[1].offset()),
        (Some("b"), tb.file_begin + 4)
    );
    assert!(
        w[0].message().contains("2 NaN, 0 +Inf, 1 -Inf"),
        "{}",
        w[0].message()
    );
    let names: Vec<_> = d.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["clean", "a", "b"]);
    assert_eq!(d.tensors[0].non_finite(), 0);

    let deny = Config::default().deny_nonfinite(true);
    let e = deep(&file, &deny, &DeepOptions::new()).expect_err("denied");
    assert_eq!(e.rule().id(), "DATA-NONFINITE");
    assert_eq!(e.offset(), ta.file_begin + 4);
    assert_eq!(e.tensor(), Some("a"));

    let e = deep(
        &file,
        &Config::default().deny_warnings(true),
        &DeepOptions::new(),
    )
    .expect_err("denied");
    assert_eq!(
        (e.rule().id(), e.offset()),
        ("DATA-NONFINITE", ta.file_begin + 4)
    );

    // A clean file has no deep warning, also under deny_nonfinite.
    let clean_file = build(&[("clean", Dtype::F32, &clean)]);
    let (r, _) = deep(&clean_file, &deny, &DeepOptions::new()).expect("clean");
    assert!(r.warnings().is_empty());
}

// ---------------------------------------------------------------------------------------------
// BOOL

#[test]
fn bool_zero_and_one_accepted() {
    let v: Vec<u8> = (0..10_000).map(|i| (i % 3 == 0) as u8).collect();
    let (report, d) = ok(&build(&[("m", Dtype::BOOL, &v)]));
    assert!(report.warnings().is_empty());
    assert_eq!(d.tensors[0].non_finite(), 0);
}

#[test]
fn bool_other_byte_rejected_at_its_offset() {
    for (at, byte) in [
        (0usize, 2u8),
        (4095, 0x02),
        (4096, 0xFF),
        (9_999, 0x80),
        (5000, 0x10),
    ] {
        let mut v = vec![1u8; 10_000];
        v[at] = byte;
        // A later bad byte must not win.
        if at + 10 < v.len() {
            v[at + 10] = 7;
        }
        let file = build(&[("pad", Dtype::F32, &[0; 12]), ("m", Dtype::BOOL, &v)]);
        let report = stcheck::validate(&file, &Config::default()).expect("header valid");
        let begin = report.tensor("m").expect("m").file_begin;
        let e = deep(&file, &Config::default(), &DeepOptions::new()).expect_err("bad bool");
        assert_eq!(e.rule().id(), "DATA-BOOL");
        assert_eq!(e.offset(), begin + at as u64);
        assert_eq!(e.tensor(), Some("m"));
        assert!(e.message().contains(&format!("{byte:#04x}")), "{e}");
    }
}

#[test]
fn first_fault_in_file_order_wins() {
    // A NaN (denied) before a bad BOOL byte: the NaN is reported; the other way round, the BOOL.
    let f = le32(&[0, 0x7FC0_0000]);
    let b = [0u8, 1, 5, 1];
    let deny = Config::default().deny_nonfinite(true);
    let file = build(&[("f", Dtype::F32, &f), ("b", Dtype::BOOL, &b)]);
    let e = deep(&file, &deny, &DeepOptions::new()).expect_err("fault");
    assert_eq!(e.rule().id(), "DATA-NONFINITE");
    let file = build(&[("b", Dtype::BOOL, &b), ("f", Dtype::F32, &f)]);
    let e = deep(&file, &deny, &DeepOptions::new()).expect_err("fault");
    assert_eq!(e.rule().id(), "DATA-BOOL");
    // Without deny_nonfinite the NaN is only a warning, and the BOOL error stands.
    let file = build(&[("f", Dtype::F32, &f), ("b", Dtype::BOOL, &b)]);
    let e = deep(&file, &Config::default(), &DeepOptions::new()).expect_err("fault");
    assert_eq!(e.rule().id(), "DATA-BOOL");
}

// ---------------------------------------------------------------------------------------------
// Polyglots

fn polyglots(file: &[u8]) -> Vec<(u64, String)> {
    // The stream sees the head and the tail of the file through its own buffers.
    all_paths_agree(file, &Config::default(), false);
    let (report, _) = ok(file);
    warnings_of(&report, "DATA-POLYGLOT")
        .into_iter()
        .map(|w| (w.offset(), w.message().to_string()))
        .collect()
}

#[test]
fn clean_file_is_no_polyglot() {
    let file = build(&[("w", Dtype::F32, &le32(&[1, 2, 3, 4]))]);
    assert!(polyglots(&file).is_empty());
}

#[test]
fn zip_eocd_at_the_end() {
    // An empty ZIP archive's EOCD record (22 bytes, comment length 0) as the last bytes.
    let mut data = vec![0u8; 40];
    data.extend_from_slice(b"PK\x05\x06");
    data.extend_from_slice(&[0; 18]);
    let file = build(&[("blob", Dtype::U8, &data)]);
    let p = polyglots(&file);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, file.len() as u64 - 22);
    assert!(
        p[0].1.contains("ZIP end-of-central-directory"),
        "{}",
        p[0].1
    );
    assert!(p[0].1.contains("exactly"), "{}", p[0].1);

    // Followed by more bytes than its comment length says: still reported, less sure.
    let mut data2 = data.clone();
    data2.extend_from_slice(&[0; 100]);
    let file = build(&[("blob", Dtype::U8, &data2)]);
    let p = polyglots(&file);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].0, file.len() as u64 - 122);
    assert!(!p[0].1.contains("exactly"));

    // Out of reach: more than 64 KiB + 22 bytes before the end.
    let mut data3 = data.clone();
    data3.extend_from_slice(&vec![0; 70_000]);
    assert!(polyglots(&build(&[("blob", Dtype::U8, &data3)])).is_empty());
}

#[test]
fn magic_at_data_start() {
    let cases: [(&[u8], &str); 4] = [
        (b"PK\x03\x04", "ZIP"),
        (b"\x80\x02", "pickle"),
        (b"\x80\x05", "protocol 5"),
        (b"GGUF", "GGUF"),
    ];
    for (magic, what) in cases {
        let mut data = magic.to_vec();
        data.resize(16, 0);
        let file = build(&[("blob", Dtype::U8, &data)]);
        let report = stcheck::validate(&file, &Config::default()).expect("valid");
        let p = polyglots(&file);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, report.data_start());
        assert!(p[0].1.contains(what), "{}", p[0].1);
    }
    // Pickle protocol 1 has no 0x80 header; 0x80 0x06 is not a protocol.
    for magic in [&b"\x80\x01"[..], b"\x80\x06"] {
        let mut data = magic.to_vec();
        data.resize(16, 0);
        assert!(polyglots(&build(&[("blob", Dtype::U8, &data)])).is_empty());
    }
}

#[test]
fn pdf_header_in_the_first_kilobyte() {
    // In a tensor name (the header), and at the data region's start: one warning each, at
    // the header's offset.
    let file = build(&[("x%PDF-1.7", Dtype::U8, &[0u8; 8])]);
    let at = file
        .windows(5)
        .position(|w| w == b"%PDF-")
        .expect("in header") as u64;
    let p = polyglots(&file);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, at);
    assert!(p[0].1.contains("PDF"));
    let file = build(&[("x", Dtype::U8, b"%PDF-1.4 .......")]);
    let report = stcheck::validate(&file, &Config::default()).expect("valid");
    assert_eq!(polyglots(&file), [(report.data_start(), p[0].1.clone())]);
    // Beyond the first 1024 bytes it is not looked for.
    let mut data = vec![0u8; 2000];
    data[1500..1505].copy_from_slice(b"%PDF-");
    assert!(polyglots(&build(&[("x", Dtype::U8, &data)])).is_empty());
}

#[test]
fn pickle_header_at_file_start() {
    // N = 0x0280 = 640: the length field reads 0x80 0x02, a pickle protocol 2 header.
    let file = build_padded(&[("w", Dtype::U8, &[0u8; 8])], 640);
    assert_eq!(&file[..2], b"\x80\x02");
    let p = polyglots(&file);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, 0);
    assert!(p[0].1.contains("pickle"));
    let e = deep(
        &file,
        &Config::default().deny_warnings(true),
        &DeepOptions::new(),
    )
    .expect_err("denied");
    assert_eq!((e.rule().id(), e.offset()), ("DATA-POLYGLOT", 0));
}

#[test]
fn sniff_recognises_well_known_formats() {
    let mut tar = vec![0u8; 512];
    tar[257..262].copy_from_slice(b"ustar");
    let cases: [(&[u8], &str); 9] = [
        (b"PK\x03\x04rest", "ZIP"),
        (b"\x80\x04\x95", "pickle"),
        (b"GGUF\x03\x00", "GGUF"),
        (b"\x1f\x8b\x08", "gzip"),
        (b"\x89PNG\r\n\x1a\n", "PNG"),
        (b"\x89HDF\r\n\x1a\n", "HDF5"),
        (b"\x93NUMPY\x01", "NumPy"),
        (b"\x28\xb5\x2f\xfd", "Zstandard"),
        (&tar, "tar"),
    ];
    for (bytes, what) in cases {
        let s = sniff(bytes).unwrap_or_default();
        assert!(s.contains(what), "{what}: {s:?}");
    }
    assert_eq!(sniff(b"{\"a\":1}"), None);
    assert_eq!(sniff(&[0u8; 600]), None);
    assert_eq!(sniff(b"PK"), None);
}

// ---------------------------------------------------------------------------------------------
// SHA-256, streaming and threads

fn sha(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// A reader that hands out at most `step` bytes per call.
struct Trickle<'a> {
    rest: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

/// A bigger file whose tensors start at odd offsets and cross the 256 KiB hashing chunks and
/// the 1 MiB stream buffers, with NaNs and infinities placed at the crossings.
fn big_file() -> Vec<u8> {
    let mut f32s = vec![0x3F80_0000u32; 400_000];
    for i in [0usize, 65_535, 65_536, 262_143, 262_144, 399_999] {
        f32s[i] = 0x7FC0_0001;
    }
    f32s[131_071] = 0xFF80_0000;
    let mut f16s = vec![0x3C00u16; 700_001];
    for i in (0..f16s.len()).step_by(99_991) {
        f16s[i] = 0x7C00;
    }
    let bools: Vec<u8> = (0..3).map(|i| i % 2).collect();
    let f64s = le64(&[0x7FF8_0000_0000_0000; 30_000]);
    build(&[
        ("b", Dtype::BOOL, &bools),
        ("f32", Dtype::F32, &le32(&f32s)),
        ("f16", Dtype::F16, &le16(&f16s)),
        ("e5", Dtype::F8_E5M2, &[0x7C; 5]),
        ("f64", Dtype::F64, &f64s),
    ])
}

fn all_paths_agree(file: &[u8], config: &Config, sha256: bool) {
    let one = deep(file, config, &DeepOptions::new().sha256(sha256));
    for threads in [2, 3, 5] {
        let opts = DeepOptions::new()
            .sha256(sha256)
            .threads(threads)
            .min_bytes_per_thread(1);
        compare(&one, &deep(file, config, &opts));
    }
    if sha256 {
        // Threads without the hash give the same scan.
        let opts = DeepOptions::new().threads(2).min_bytes_per_thread(1);
        let mut many = deep(file, config, &opts);
        if let Ok((_, d)) = &mut many {
            assert_eq!(d.sha256, None);
            d.sha256 = Some(sha(file));
        }
        compare(&one, &many);
    }
    // A file on disk, read in blocks (the default read mode), by 1 to 5 threads.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("deep-paths-{}-{n}.safetensors", std::process::id()));
    std::fs::write(&path, file).expect("write the file");
    for threads in [1, 2, 3, 5] {
        let opts = DeepOptions::new()
            .sha256(sha256)
            .threads(threads)
            .min_bytes_per_thread(1);
        let disk = std::fs::File::open(&path).expect("open");
        let read = stcheck::check_file(&disk, &opts.config(config), stcheck::ReadMode::Read, seen)
            .expect("read the file");
        compare(&one, &read);
    }
    std::fs::remove_file(&path).expect("remove the file");
    for step in [1 << 20, 4093] {
        let stream = validate_reader_deep(
            Trickle { rest: file, step },
            config,
            &DeepOptions::new().sha256(sha256),
        );
        compare(&one, &stream);
    }
    if let Ok((_, d)) = &one {
        assert_eq!(d.sha256, sha256.then(|| sha(file)));
    }
}

fn compare(
    a: &Result<(Report<'static>, DeepReport), Error>,
    b: &Result<(Report<'static>, DeepReport), Error>,
) {
    match (a, b) {
        (Ok((ra, da)), Ok((rb, db))) => {
            assert_eq!(da, db);
            assert_eq!(ra.warnings(), rb.warnings());
        }
        (Err(ea), Err(eb)) => assert_eq!(ea, eb),
        _ => panic!("verdicts differ: {a:?} vs {b:?}"),
    }
}

#[test]
fn big_file_paths_agree() {
    let file = big_file();
    let (report, d) = ok(&file);
    let by = |n: &str| {
        d.tensors
            .iter()
            .find(|t| t.name == n)
            .expect("tensor")
            .clone()
    };
    assert_eq!((by("f32").nan, by("f32").neg_inf), (6, 1));
    assert_eq!(by("f16").pos_inf, 8);
    assert_eq!(by("e5").pos_inf, 5);
    assert_eq!(by("f64").nan, 30_000);
    assert_eq!(d.bytes_scanned, report.data_len());
    assert_eq!(warnings_of(&report, "DATA-NONFINITE").len(), 4);
    assert!(report.tensor("f32").expect("f32").file_begin % 4 != 0);
    all_paths_agree(&file, &Config::default(), true);
    all_paths_agree(&file, &Config::default().deny_nonfinite(true), true);
}

#[test]
fn sha256_of_the_whole_file() {
    let file = build(&[("w", Dtype::F32, &le32(&[1, 2, 3]))]);
    let (_, d) = deep(&file, &Config::default(), &DeepOptions::new().sha256(true)).expect("ok");
    assert_eq!(d.sha256, Some(sha(&file)));
    let (_, d) = ok(&file);
    assert_eq!(d.sha256, None);
}

#[test]
fn stream_reports_framing_and_length_errors_like_validate() {
    let file = build(&[("w", Dtype::F32, &le32(&[1, 2, 3]))]);
    let cut = &file[..file.len() - 1];
    let mmap = stcheck::validate(cut, &Config::default()).expect_err("truncated");
    let stream = validate_reader_deep(cut, &Config::default(), &DeepOptions::new());
    match stream {
        Err(e) => assert_eq!(e, mmap),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Property tests against a per-element reference

/// The reference classification: 0 finite, 1 NaN, 2 +Inf, 3 -Inf, of one element's lanes,
/// written from the format definitions with `half` and `std`.
fn reference(dtype: Dtype, data: &[u8]) -> ((u64, u64, u64), Option<usize>) {
    let mut c = (0u64, 0u64, 0u64);
    let mut first = None;
    let mut note = |i: usize, k: u8, c: &mut (u64, u64, u64)| {
        match k {
            1 => c.0 += 1,
            2 => c.1 += 1,
            3 => c.2 += 1,
            _ => return,
        }
        first.get_or_insert(i);
    };
    fn float(nan: bool, inf: bool, neg: bool) -> u8 {
        match (nan, inf, neg) {
            (true, _, _) => 1,
            (_, true, false) => 2,
            (_, true, true) => 3,
            _ => 0,
        }
    }
    let size = (dtype.bits() / 8) as usize;
    for (i, e) in data.chunks_exact(size).enumerate() {
        let at = i * size;
        match dtype {
            Dtype::F16 => {
                let x = f16::from_le_bytes([e[0], e[1]]);
                note(
                    at,
                    float(x.is_nan(), x.is_infinite(), x.is_sign_negative()),
                    &mut c,
                );
            }
            Dtype::BF16 => {
                let x = bf16::from_le_bytes([e[0], e[1]]);
                note(
                    at,
                    float(x.is_nan(), x.is_infinite(), x.is_sign_negative()),
                    &mut c,
                );
            }
            Dtype::F32 | Dtype::C64 => {
                for p in e.chunks_exact(4) {
                    let x = f32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                    note(at, float(x.is_nan(), x.is_infinite(), x < 0.0), &mut c);
                }
            }
            Dtype::F64 => {
                let x = f64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
                note(at, float(x.is_nan(), x.is_infinite(), x < 0.0), &mut c);
            }
            Dtype::F8_E5M2 => {
                let (exp, mant) = ((e[0] >> 2) & 0x1F, e[0] & 0x3);
                note(
                    at,
                    float(
                        exp == 31 && mant != 0,
                        exp == 31 && mant == 0,
                        e[0] & 0x80 != 0,
                    ),
                    &mut c,
                );
            }
            Dtype::F8_E4M3 => {
                let (exp, mant) = ((e[0] >> 3) & 0xF, e[0] & 0x7);
                note(at, float(exp == 15 && mant == 7, false, false), &mut c);
            }
            Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ => {
                note(at, float(e[0] == 0x80, false, false), &mut c)
            }
            Dtype::F8_E8M0 => note(at, float(e[0] == 0xFF, false, false), &mut c),
            _ => {}
        }
    }
    (c, first)
}

const FLOATS: [Dtype; 11] = [
    Dtype::F16,
    Dtype::BF16,
    Dtype::F32,
    Dtype::F64,
    Dtype::C64,
    Dtype::F8_E5M2,
    Dtype::F8_E4M3,
    Dtype::F8_E4M3FNUZ,
    Dtype::F8_E5M2FNUZ,
    Dtype::F8_E8M0,
    Dtype::F16,
];

/// Random bytes: either biased towards the interesting exponents (all ones), so NaN and Inf are
/// common, or zeros with a few random bytes, so most 4 KiB blocks hold nothing special.
fn biased_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let dense = prop::collection::vec(
        prop_oneof![
            any::<u8>(),
            Just(0x7Fu8),
            Just(0xFF),
            Just(0x80),
            Just(0x7C),
            Just(0xFC),
            Just(0x00)
        ],
        0..max,
    );
    let sparse = (
        0..max,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
    )
        .prop_map(|(len, edits)| {
            let mut v = vec![0u8; len];
            for (i, b) in edits {
                if len > 0 {
                    v[i.index(len)] = b;
                }
            }
            v
        });
    prop_oneof![dense, sparse]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn counts_match_reference(which in 0usize..FLOATS.len(), raw in biased_bytes(20_000), lead in 0usize..3) {
        let dtype = FLOATS[which];
        let size = (dtype.bits() / 8) as usize;
        let data = &raw[..raw.len() / size * size];
        let lead_bytes = vec![1u8; lead];
        let file = build(&[("lead", Dtype::BOOL, &lead_bytes), ("t", dtype, data)]);
        let (report, d) = ok(&file);
        let t = d.tensors.iter().find(|t| t.name == "t").expect("t");
        let (want, first) = reference(dtype, data);
        prop_assert_eq!((t.nan, t.pos_inf, t.neg_inf), want);
        let begin = report.tensor("t").expect("t").file_begin;
        let w = warnings_of(&report, "DATA-NONFINITE");
        prop_assert_eq!(w.first().map(|w| w.offset()), first.map(|i| begin + i as u64));
        all_paths_agree(&file, &Config::default(), lead == 1);
        all_paths_agree(&file, &Config::default().deny_nonfinite(true), false);
    }

    #[test]
    fn bool_matches_reference(raw in prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 1..10_000)) {
        let file = build(&[("m", Dtype::BOOL, &raw)]);
        let begin = stcheck::validate(&file, &Config::default()).expect("valid").tensor("m").expect("m").file_begin;
        let r = deep(&file, &Config::default(), &DeepOptions::new());
        match raw.iter().position(|&b| b > 1) {
            Some(i) => {
                let e = r.expect_err("bad byte");
                prop_assert_eq!((e.rule().id(), e.offset()), ("DATA-BOOL", begin + i as u64));
            }
            None => prop_assert!(r.is_ok()),
        }
        all_paths_agree(&file, &Config::default(), false);
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus

/// Every corpus file that passes the header checks gets the verdict, rule and warnings the
/// manifest gives it under the deep scan, on the mmap and the streaming path; files not marked
/// `deep` gain no finding from the scan.
#[test]
fn corpus_deep_verdicts() {
    let manifest = Manifest::load();
    let mut deep_cases = 0;
    for case in &manifest.cases {
        let path = &case.path;
        if !case.is_decided() {
            continue;
        }
        let file = case.bytes();
        let config = Config::default();
        if stcheck::validate(&file, &config).is_err() {
            continue;
        }
        let is_deep = case.deep;
        let result = deep(&file, &config, &DeepOptions::new().sha256(true));
        all_paths_agree(&file, &config, true);
        match (case.verdict.as_str(), &result) {
            ("accept", Ok((report, d))) => {
                let got: Vec<String> = report
                    .warnings()
                    .iter()
                    .map(|w| w.rule().id().to_string())
                    .collect();
                let mut got_sorted = got.clone();
                got_sorted.sort();
                let mut want = case.warnings.clone();
                want.sort();
                assert_eq!(got_sorted, want, "{path}");
                assert_eq!(d.sha256, Some(sha(&file)));
            }
            ("reject", Err(e)) => {
                assert!(
                    is_deep,
                    "{path}: only a deep case may pass validate and fail"
                );
                assert_eq!(
                    case.rules.first().map(String::as_str),
                    Some(e.rule().id()),
                    "{path}"
                );
            }
            (v, r) => panic!(
                "{path}: manifest says {v:?}, the deep scan gives {:?}",
                r.as_ref().map(|(rep, _)| rep.warnings().to_vec())
            ),
        }
        deep_cases += usize::from(is_deep);
    }
    assert!(deep_cases >= 10, "only {deep_cases} deep corpus cases");
}

/// A file of many NaN scalars keeps the counts of the first tensors only (as warnings are
/// capped), with the exact number of such tensors and the exact totals, whichever way it is
/// scanned (issue 19: 1.42 M NaN scalars took 510 MB).
#[test]
fn the_non_finite_list_is_capped_with_exact_totals() {
    let nan = le32(&[0x7FC0_0001]);
    let inf = le32(&[0x7F80_0000]);
    let names: Vec<String> = (0..500).map(|i| format!("t{i:03}")).collect();
    let tensors: Vec<(&str, Dtype, &[u8])> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let v: &[u8] = if i % 5 == 4 { &inf } else { &nan };
            (n.as_str(), Dtype::F32, v)
        })
        .collect();
    let file = build(&tensors);
    for (threads, min) in [(1, 0), (2, 1), (3, 1), (5, 1)] {
        for cap in [100, 7] {
            let config = Config::default()
                .deep(true)
                .threads(threads)
                .min_bytes_per_thread(min)
                .max_warnings_per_rule(cap);
            let checked = Checker::check_slice(&config, &file);
            let report = checked.verdict.as_ref().expect("valid");
            let d = checked.deep.as_ref().expect("deep report");
            assert_eq!(d.non_finite.len(), cap, "{threads} threads, cap {cap}");
            assert_eq!(d.non_finite_tensors, 500, "{threads} threads, cap {cap}");
            assert_eq!((d.nan, d.pos_inf, d.neg_inf), (400, 100, 0));
            // The first tensors in file order are the ones kept.
            let kept: Vec<usize> = d.non_finite.iter().map(|t| t.index).collect();
            assert_eq!(kept, (0..cap).collect::<Vec<_>>(), "{threads} threads");
            let count = report
                .warning_counts()
                .find(|(r, _)| r.id() == "DATA-NONFINITE")
                .map(|(_, n)| n);
            assert_eq!(count, Some(500), "{threads} threads, cap {cap}");
            assert_eq!(warnings_of(report, "DATA-NONFINITE").len(), cap);
        }
    }
}
