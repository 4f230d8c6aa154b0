//! One or more tests per rule of `SPEC.md`: a file that breaks exactly that rule (the rule ID,
//! kind and, where the rule's offset is well defined, the exact offset), and the nearest file
//! that is accepted. Warnings are checked on both sides too: accepted with exactly that warning,
//! rejected with it under `deny_warnings`.
//!
//! Every rejection is also run through the streaming validator, which must agree on the rule and
//! the offset. The deep-scan rules (`DATA-BOOL`, `DATA-NONFINITE`, `DATA-POLYGLOT`) and the
//! sharded-checkpoint rules (`INDEX-*`) have their own tests. Last, the names of profiles,
//! read modes and read-error kinds parse back (`FromStr`), and an unknown one lists the known.

use std::collections::BTreeSet;
use std::sync::Mutex;

use stcheck::write::{serialize, TensorSpec};
use stcheck::{validate, Config, Dtype, Error, Kind, Report, Rule, Severity};

// ---------------------------------------------------------------------------------------------
// Building files

/// Length field + header bytes + data, exactly as given.
fn raw(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    f
}

/// The header padded with spaces to a multiple of 8, so no `FRAME-ALIGN` warning.
fn pad(header: &str) -> String {
    let mut s = header.to_owned();
    while !s.len().is_multiple_of(8) {
        s.push(' ');
    }
    s
}

/// A file from a header (padded) and data.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    raw(pad(header).as_bytes(), data)
}

/// A tensor entry, `"name":{...}`, with `name` written as raw JSON string content.
fn ent(name: &str, dtype: &str, shape: &str, begin: u64, end: u64) -> String {
    format!(r#""{name}":{{"dtype":"{dtype}","shape":[{shape}],"data_offsets":[{begin},{end}]}}"#)
}

/// An object of entries.
fn obj(entries: &[String]) -> String {
    format!("{{{}}}", entries.join(","))
}

/// File offset of the first occurrence of `needle` in the header.
fn at(header: &str, needle: &str) -> u64 {
    8 + header
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {header:?}")) as u64
}

/// File offset of the last occurrence of `needle` in the header.
fn at_last(header: &str, needle: &str) -> u64 {
    8 + header
        .rfind(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {header:?}")) as u64
}

/// The rules this file exercises, recorded so `every_header_rule_is_exercised` can check that
/// no rule was forgotten.
static SEEN: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn seen(rule: Rule) {
    SEEN.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(rule.id());
}

// ---------------------------------------------------------------------------------------------
// Assertions

fn stream(f: &[u8], config: &Config) -> Result<Report<'static>, Error> {
    match stcheck::check_reader(f, config) {
        Ok(c) => c.verdict,
        Err(e) => panic!("I/O error reading a slice: {e}"),
    }
}

/// The file is rejected with `rule` (an error rule), of the rule's kind, with an offset inside
/// the file; the streaming validator agrees on rule and offset.
#[track_caller]
fn rejects(f: &[u8], rule: &str) -> Error {
    let expected = Rule::from_id(rule).unwrap_or_else(|| panic!("no rule {rule}"));
    let e = match validate(f, &Config::default()) {
        Ok(r) => panic!(
            "expected {rule}, but the file was accepted with warnings {:?}",
            r.warnings()
        ),
        Err(e) => e,
    };
    assert_eq!(e.rule().id(), rule, "wrong rule: {e}");
    assert_eq!(e.kind(), expected.kind(), "{e}");
    assert!(!e.is_promoted_warning(), "{e}");
    assert!(e.offset() <= f.len() as u64, "offset past the file: {e}");
    assert!(e.to_string().starts_with(rule), "{e}");
    let s = stream(f, &Config::default()).expect_err("streaming accepted what validate rejects");
    assert_eq!(
        (s.rule(), s.offset()),
        (e.rule(), e.offset()),
        "stream: {s}, buffer: {e}"
    );
    seen(expected);
    e
}

/// As [`rejects`], with the exact offset.
#[track_caller]
fn rejects_at(f: &[u8], rule: &str, offset: u64) -> Error {
    let e = rejects(f, rule);
    assert_eq!(e.offset(), offset, "wrong offset: {e}");
    e
}

/// Under `config`: rejected with `rule` at `offset`, and the stream gives the same error.
#[track_caller]
fn rejects_under(f: &[u8], config: &Config, rule: &str, offset: u64) -> Error {
    let e = validate(f, config).expect_err("accepted");
    assert_eq!((e.rule().id(), e.offset()), (rule, offset), "{e}");
    let s = stream(f, config).expect_err("stream accepted");
    assert_eq!(s, e);
    e
}

/// The file is accepted with no warning, also under `deny_warnings` and by the stream.
#[track_caller]
fn clean(f: &[u8]) -> Report<'static> {
    let r = validate(f, &Config::default()).unwrap_or_else(|e| panic!("rejected: {e}"));
    assert!(
        r.warnings().is_empty(),
        "unexpected warnings {:?}",
        r.warnings()
    );
    validate(f, &Config::default().deny_warnings(true))
        .unwrap_or_else(|e| panic!("rejected under deny_warnings: {e}"));
    let s = stream(f, &Config::default()).unwrap_or_else(|e| panic!("stream rejected: {e}"));
    assert_eq!(s.len(), r.len());
    r.into_owned()
}

/// The file is accepted with exactly one warning, `rule` at `offset`; under `deny_warnings` it
/// is rejected with that warning.
#[track_caller]
fn warns(f: &[u8], rule: &str, offset: u64) {
    let expected = Rule::from_id(rule).unwrap_or_else(|| panic!("no rule {rule}"));
    assert_eq!(expected.severity(), Severity::Warning);
    let r = validate(f, &Config::default()).unwrap_or_else(|e| panic!("rejected: {e}"));
    let ids: Vec<&str> = r.warnings().iter().map(|w| w.rule().id()).collect();
    assert_eq!(ids, [rule], "{:?}", r.warnings());
    assert_eq!(r.warnings()[0].offset(), offset, "{:?}", r.warnings());
    assert_eq!(r.warnings()[0].kind(), expected.kind());
    let e =
        validate(f, &Config::default().deny_warnings(true)).expect_err("deny_warnings accepted");
    assert_eq!((e.rule(), e.offset()), (expected, offset), "{e}");
    assert!(e.is_promoted_warning());
    let s = stream(f, &Config::default()).unwrap_or_else(|e| panic!("stream rejected: {e}"));
    assert_eq!(s.warnings(), r.warnings());
    let s = stream(f, &Config::default().deny_warnings(true)).expect_err("stream deny accepted");
    assert_eq!((s.rule(), s.offset()), (expected, offset));
    seen(expected);
}

const U8X2: &str = r#""t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}"#;

// ---------------------------------------------------------------------------------------------
// FRAME-*

#[test]
fn frame_short() {
    for len in 0..8 {
        rejects_at(&vec![8u8; len], "FRAME-SHORT", 0);
    }
    // The nearest accepted file: 8 bytes of length, an 8-byte header, no data.
    clean(&file("{}", &[]));
}

#[test]
fn frame_empty_header() {
    rejects_at(&[0u8; 8], "FRAME-EMPTY-HEADER", 0);
    rejects_at(&raw(b"", b"{}      "), "FRAME-EMPTY-HEADER", 0);
    clean(&raw(b"{}      ", b""));
}

#[test]
fn frame_header_limit() {
    let mut f = 100_000_001u64.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    rejects_at(&f, "FRAME-HEADER-LIMIT", 0);
    rejects_at(&[0xff; 8], "FRAME-HEADER-LIMIT", 0);
    rejects_at(&[0xff; 64], "FRAME-HEADER-LIMIT", 0);
    // N exactly at the limit is not a limit fault (here it runs past the end instead).
    let mut f = 100_000_000u64.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    rejects_at(&f, "FRAME-HEADER-BOUNDS", 0);
    // A lowered limit: N = 16 is refused under a limit of 8, accepted under 16.
    let f = file("{}", &[]);
    let f16 = file("{}              ", &[]);
    assert_eq!(f16.len(), 24);
    let e = validate(&f16, &Config::default().max_header_size(8)).expect_err("limit 8");
    assert_eq!((e.rule().id(), e.offset()), ("FRAME-HEADER-LIMIT", 0));
    let e = stream(&f16, &Config::default().max_header_size(8)).expect_err("stream limit 8");
    assert_eq!(e.rule().id(), "FRAME-HEADER-LIMIT");
    validate(&f16, &Config::default().max_header_size(16)).expect("limit 16");
    validate(&f, &Config::default().max_header_size(8)).expect("N = 8 under limit 8");
}

#[test]
fn frame_header_bounds() {
    let mut f = 100u64.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    rejects_at(&f, "FRAME-HEADER-BOUNDS", 0);
    // One byte short of the header.
    let mut f = file("{}", &[]);
    f.pop();
    rejects_at(&f, "FRAME-HEADER-BOUNDS", 0);
    // The limit cannot be lifted past the ceiling (2^31 - 1): N = 2^64-1, where 8 + N
    // overflows u64, is a limit fault however the limit is set.
    for n in [u64::MAX, u64::MAX - 7, u64::MAX - 8] {
        let mut f = n.to_le_bytes().to_vec();
        f.extend_from_slice(b"{}");
        let config = Config::default().max_header_size(u64::MAX);
        let e = rejects_under(&f, &config, "FRAME-HEADER-LIMIT", 0);
        assert!(e.message().contains("2147483647"), "{e}");
    }
    // At the ceiling, a length the file does not hold is a bounds fault.
    let mut f = stcheck::limits::MAX_HEADER_SIZE_CEILING
        .to_le_bytes()
        .to_vec();
    f.extend_from_slice(b"{}");
    let config = Config::default().max_header_size(u64::MAX);
    let e = validate(&f, &config).expect_err("N at the ceiling");
    assert_eq!(
        (e.rule().id(), e.offset()),
        ("FRAME-HEADER-BOUNDS", 0),
        "{e}"
    );
    clean(&file("{}", &[]));
}

/// Files of other formats, each as its own writer starts it: (what the message must name,
/// the bytes).
fn other_formats() -> Vec<(&'static str, Vec<u8>)> {
    let mut tar = b"model/weights.bin".to_vec();
    tar.resize(257, 0);
    tar.extend_from_slice(b"ustar\x0000");
    tar.resize(1024, 0);
    vec![
        // torch.save's legacy format: pickle protocol 2, then the magic number as a LONG1.
        ("pickle", b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.".to_vec()),
        // Protocol 4 with a FRAME of 5 bytes: the length field is 93,652,096, below the limit,
        // so it runs past the end of the file instead.
        ("pickle", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.".to_vec()),
        ("pickle", b"\x80\x05\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x04name\x94.".to_vec()),
        ("pickle", b"\x80\x03}q\x00(X\x01\x00\x00\x00aq\x01K\x01u.".to_vec()),
        // PyTorch's ZIP format (version 0, flags 0x0808), and an empty archive.
        ("ZIP", b"PK\x03\x04\x00\x00\x08\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00archive/data.pkl".to_vec()),
        ("ZIP", [&b"PK\x05\x06"[..], &[0; 18]].concat()),
        ("Git LFS", b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n".to_vec()),
        // GGUF v3 with 32 tensors: the ninth byte is a space, the tenth 0x00.
        ("GGUF", b"GGUF\x03\x00\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00".to_vec()),
        // GGUF with 123 tensors: the ninth byte is '{', but no '"' follows.
        ("GGUF", b"GGUF\x03\x00\x00\x00{\x00\x00\x00\x00\x00\x00\x00".to_vec()),
        ("NumPy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n".to_vec()),
        ("HDF5", b"\x89HDF\r\n\x1a\n\x00\x00\x00\x00\x00\x08\x08\x00".to_vec()),
        // gzip with no name and mtime 0 (gzip -n): the length field is 559,903, below the limit.
        ("gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec()),
        ("bzip2", b"BZh91AY&SY".to_vec()),
        ("xz", b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F".to_vec()),
        ("Zstandard", b"\x28\xb5\x2f\xfd\x24\x00\x01\x00\x00".to_vec()),
        ("7-Zip", b"7z\xbc\xaf\x27\x1c\x00\x04\x8d\x9b\xd5\x0f\x00\x00\x00\x00".to_vec()),
        ("PNG", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec()),
        ("ELF", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00".to_vec()),
        ("tar", tar),
        ("PDF", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec()),
        ("HTML", b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head></html>\n".to_vec()),
        ("HTML", b"\n\n  <html lang=\"en\">\n".to_vec()),
        ("XML", b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code></Error>".to_vec()),
        ("JSON", b"{\n  \"metadata\": {\"total_size\": 4},\n  \"weight_map\": {}\n}\n".to_vec()),
        ("JSON", b"{\"a\": 1, \"b\": [1, 2]}".to_vec()),
        ("JSON", b"\xef\xbb\xbf[1, 2, 3]".to_vec()),
        ("text", b"Entry not found".to_vec()),
        ("text", b"Access denied\r\n".to_vec()),
    ]
}

/// The message names the format and does not send the user to the header-size limit.
#[track_caller]
fn names_format(e: &Error, what: &str) {
    let m = e.message();
    assert!(m.contains(what), "{what}: {m}");
    assert!(!m.contains("limit") && !m.contains("header length"), "{m}");
}

#[test]
fn frame_not_safetensors() {
    for (what, f) in other_formats() {
        let e = rejects_at(&f, "FRAME-NOT-SAFETENSORS", 0);
        names_format(&e, what);
        // Whatever the limit: the file is not safetensors, above the limit or past the end.
        for limit in [0, 8, 100_000, u64::MAX] {
            let config = Config::default().max_header_size(limit);
            rejects_under(&f, &config, "FRAME-NOT-SAFETENSORS", 0);
        }
    }
    let formats = other_formats();
    let (_, lfs) = formats
        .iter()
        .find(|(what, _)| *what == "Git LFS")
        .expect("an LFS pointer");
    let e = validate(lfs, &Config::default()).expect_err("LFS pointer");
    assert_eq!(
        e.message(),
        "this is a Git LFS pointer file; the weights were not downloaded (`git lfs pull` fetches them)"
    );
    // Quoted text is escaped and cut.
    let e = rejects_at(
        "No such file: \u{202e}gnp.safetensors and then some more words to make it long\n"
            .as_bytes(),
        "FRAME-NOT-SAFETENSORS",
        0,
    );
    assert!(e.message().contains(r"\u{202e}gnp"), "{e}");
    assert!(e.message().ends_with("...\""), "{e}");
}

/// Near misses: files whose first bytes spell another format's signature but are (or are
/// broken) safetensors files keep their own verdict.
#[test]
fn frame_not_safetensors_near_misses() {
    // N = 0x480 = 1152 starts the file with 80 04, the PROTO opcode of pickle protocol 4, but
    // the next byte is 0x00, no pickle opcode: a valid file.
    let h = format!("{{{U8X2}}}");
    let mut h = h.into_bytes();
    h.resize(0x480, b' ');
    let f = raw(&h, &[1, 2]);
    assert_eq!(&f[..3], b"\x80\x04\x00");
    clean(&f);
    // The same file cut short: a truncated download, not a pickle.
    for cut in [8, 9, 10, 100, f.len() - 3] {
        rejects_at(&f[..cut], "FRAME-HEADER-BOUNDS", 0);
    }
    // Length fields that spell GGUF, "PK\x05\x06" (101,010,256), or text, before a real
    // header: a safetensors file whose header is above the limit.
    for field in [
        &b"GGUF\x00\x00\x00\x00"[..],
        b"PK\x05\x06\x00\x00\x00\x00",
        b"version ",
    ] {
        for header in [
            &b"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}"[..],
            b"{}",
            b" {\n}",
            b"{",
            b"",
        ] {
            let f = [field, header].concat();
            let e = rejects_at(&f, "FRAME-HEADER-LIMIT", 0);
            assert!(e.message().contains("above the limit"), "{e}");
        }
    }
    // A signature cut off by the end of the file is no signature (this one is still text),
    // and a file of 8 bytes is too short to tell.
    let e = rejects_at(b"version https://git-lf", "FRAME-NOT-SAFETENSORS", 0);
    assert!(e.message().contains("text file"), "{e}");
    rejects_at(b"PK\x03\x04\x00\x00\x00\x00", "FRAME-HEADER-BOUNDS", 0);
    rejects_at(b"GGUF\x03\x00\x00\x00", "FRAME-HEADER-LIMIT", 0);
    rejects_at(b"Entry no", "FRAME-HEADER-LIMIT", 0);
    // Pickle's PROTO without an opcode after it, and bytes that are neither text nor a format.
    rejects_at(
        b"\x80\x04\x00\x00\x00\x00\x00\x01\x00\x00",
        "FRAME-HEADER-LIMIT",
        0,
    );
    rejects_at(&[0xff; 64], "FRAME-HEADER-LIMIT", 0);
    rejects_at(
        b"\x01\x02\x03\x04\x05\x06\x07\x08text",
        "FRAME-HEADER-LIMIT",
        0,
    );
    // Other framing faults are not refined: short, zero length.
    rejects_at(b"GGUF", "FRAME-SHORT", 0);
    rejects_at(b"{}", "FRAME-SHORT", 0);
    rejects_at(&[0u8; 16], "FRAME-EMPTY-HEADER", 0);
}

/// The checker decides from the same first bytes whether they arrive at once or one at a
/// time, with or without the file's length and the deep scan, for every length of every file
/// (the decision looks at most at HEAD_LEN bytes).
#[test]
fn frame_not_safetensors_stream_agrees_at_every_length() {
    let mut files: Vec<Vec<u8>> = other_formats().into_iter().map(|(_, f)| f).collect();
    let mut long = b"version https://git-lfs.github.com/spec/v1\n".to_vec();
    long.resize(stcheck::limits::HEAD_LEN + 100, b'x');
    files.push(long);
    for f in files {
        for cut in 8..=f.len() {
            let f = &f[..cut];
            for config in [Config::default(), Config::default().deep(true)] {
                let whole = stcheck::Checker::check_slice(&config, f)
                    .verdict
                    .map(|r| r.len());
                for len in [None, Some(cut as u64)] {
                    let mut c = stcheck::Checker::new(&config);
                    if let Some(len) = len {
                        c = c.with_len(len);
                    }
                    for b in f {
                        if c.feed(std::slice::from_ref(b)) == stcheck::Need::Done {
                            break;
                        }
                    }
                    let fed = c.finish();
                    assert!(fed.bytes_read <= cut as u64);
                    assert_eq!(whole, fed.verdict.map(|r| r.len()), "cut at {cut}, {len:?}");
                }
            }
        }
    }
}

#[test]
fn frame_align() {
    // "{}" alone: N = 2.
    warns(&raw(b"{}", b""), "FRAME-ALIGN", 0);
    let h = obj(&[U8X2.to_owned()]);
    assert_ne!(h.len() % 8, 0);
    warns(&raw(h.as_bytes(), &[1, 2]), "FRAME-ALIGN", 0);
    clean(&file(&h, &[1, 2]));
}

// ---------------------------------------------------------------------------------------------
// UTF8-INVALID

#[test]
fn utf8_invalid() {
    // (bytes inside a key, index of the first bad byte within them)
    let cases: &[(&[u8], usize)] = &[
        (b"\xc0\xaf", 0),           // overlong '/'
        (b"a\xe0\x80\xaf", 1),      // overlong three-byte '/'
        (b"\xed\xa0\x80", 0),       // encoded surrogate U+D800
        (b"\xed\xbf\xbf", 0),       // encoded surrogate U+DFFF
        (b"ab\xf4\x90\x80\x80", 2), // above U+10FFFF
        (b"\xf5\x80\x80\x80", 0),   // lead byte beyond F4
        (b"\x80", 0),               // stray continuation byte
        (b"\xff", 0),               // never valid
        (b"\xe2\x82", 0),           // cut off before the closing quote
    ];
    for &(bad, i) in cases {
        let mut h = b"{\"".to_vec();
        h.extend_from_slice(bad);
        h.extend_from_slice(b"\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}");
        while !h.len().is_multiple_of(8) {
            h.push(b' ');
        }
        rejects_at(&raw(&h, b""), "UTF8-INVALID", 8 + 2 + i as u64);
    }
    // In the padding after the object.
    let mut h = b"{}  \xff".to_vec();
    h.resize(16, b' ');
    rejects_at(&raw(&h, b""), "UTF8-INVALID", 8 + 4);
    // A sequence cut off by the end of the header.
    let mut h = b"{}     ".to_vec();
    h.push(0xe2);
    rejects_at(&raw(&h, b""), "UTF8-INVALID", 8 + 7);
    // Nearest accepted: valid multi-byte names, up to U+10FFFF, raw.
    clean(&file(
        &obj(&[ent("é\u{10ffff}\u{ffff}", "U8", "0", 0, 0)]),
        &[],
    ));
}

// ---------------------------------------------------------------------------------------------
// JSON-*

#[test]
fn json_bom() {
    let h = format!("\u{feff}{}", obj(&[U8X2.to_owned()]));
    rejects_at(&file(&h, &[1, 2]), "JSON-BOM", 8);
    // U+FEFF elsewhere is not a BOM (inside a name it is NAME-INVISIBLE, a warning).
    let h = obj(&[ent("a\u{feff}", "U8", "2", 0, 2)]);
    warns(&file(&h, &[1, 2]), "NAME-INVISIBLE", at(&h, "\"a"));
    clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
}

/// A syntax fault at header index `i`: the reported offset is within a few bytes of it (it is
/// where serde_json stopped).
#[track_caller]
fn syntax_near(h: &str, data: &[u8], fault: &str) {
    let e = rejects(&file(h, data), "JSON-SYNTAX");
    let i = at(h, fault);
    assert!(
        e.offset() >= i.saturating_sub(1) && e.offset() <= i + fault.len() as u64 + 1,
        "offset {} not near {i} in {h:?}: {e}",
        e.offset()
    );
}

#[test]
fn json_syntax() {
    let good = obj(&[U8X2.to_owned()]);
    clean(&file(&good, &[1, 2]));
    syntax_near(
        r#"{/*c*/"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "/*c*/",
    );
    syntax_near(&format!("{{{U8X2},}}"), &[1, 2], ",}");
    syntax_near(
        r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],}}"#,
        &[1, 2],
        ",}",
    );
    syntax_near(
        r#"{"t":{"dtype":"U8","shape":[NaN],"data_offsets":[0,0]}}"#,
        &[],
        "NaN",
    );
    syntax_near(
        r#"{"t":{"dtype":"U8","shape":[Infinity],"data_offsets":[0,0]}}"#,
        &[],
        "Infinity",
    );
    syntax_near(
        r#"{"t":{"dtype":"U8","shape":[-Infinity],"data_offsets":[0,0]}}"#,
        &[],
        "-Infinity",
    );
    syntax_near(
        r#"{'t':{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "'t'",
    );
    syntax_near(
        r#"{"t":{"dtype":'U8',"shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "'U8'",
    );
    syntax_near(
        r#"{"t\x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "\\x",
    );
    syntax_near(
        r#"{"t\u12":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "\\u12\"",
    );
    // Escaped lone surrogates: high alone, low alone, high followed by a non-surrogate.
    syntax_near(
        r#"{"t\ud800":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "\\ud800",
    );
    syntax_near(
        r#"{"t\udc00":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "\\udc00",
    );
    syntax_near(
        r#"{"t\ud800\u0041":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
        "\\ud800\\u0041",
    );
    // Raw control characters inside a string.
    for c in ['\u{0}', '\t', '\n', '\u{1f}'] {
        let h = format!(r#"{{"t{c}":{{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}}}"#);
        syntax_near(&h, &[1, 2], &c.to_string());
    }
    // A NUL between tokens.
    syntax_near(
        "{\"t\":\u{0}{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
        &[1, 2],
        "\u{0}",
    );
    // Unterminated object.
    let e = rejects(
        &file(
            r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}"#,
            &[1, 2],
        ),
        "JSON-SYNTAX",
    );
    assert!(e.offset() >= 8);
    // Nearest accepted: a properly escaped surrogate pair in a name (U+1F600).
    clean(&file(
        &obj(&[ent("\\ud83d\\ude00", "U8", "2", 0, 2)]),
        &[1, 2],
    ));
}

#[test]
fn json_depth_100000_brackets() {
    // Run on a small stack: a recursive descent into 100,000 brackets would overflow it.
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let inner = format!(r#"{{"t":{}"#, "[".repeat(100_000));
            let e = validate(&file(&inner, &[]), &Config::default()).expect_err("deep");
            let root = "[".repeat(100_000);
            let r = validate(&file(&root, &[]), &Config::default()).expect_err("deep root");
            let objs = r#"{"a":"#.repeat(100_000);
            let o = validate(&file(&objs, &[]), &Config::default()).expect_err("deep objects");
            (e, r, o)
        })
        .expect("spawn");
    let (e, r, o) = handle.join().expect("no stack overflow, no panic");
    for e in [&e, &r, &o] {
        assert_eq!(e.rule().id(), "JSON-DEPTH", "{e}");
        assert_eq!(e.kind(), Kind::Malformed);
    }
    seen(Rule::JsonDepth);
    // Offsets: the bracket that exceeds the limit (the 128th level: at header index 127 for
    // the root array; inside `{"t":` the object is the first level).
    assert_eq!(r.offset(), 8 + 127, "{r}");
    assert_eq!(e.offset(), 8 + 5 + 126, "{e}");
    rejects(&file(&"[".repeat(100_000), &[]), "JSON-DEPTH");
    // The boundary: 127 nested levels are followed (and judged by the schema), 128 are not.
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    rejects_at(&file(&nested(127), &[]), "SCHEMA-ROOT", 8);
    rejects_at(&file(&nested(128), &[]), "JSON-DEPTH", 8 + 127);
    // Nearest accepted side: nesting within the limit is parsed and judged by the schema.
    let h = r#"{"t":{"dtype":"U8","shape":[[[2]]],"data_offsets":[0,2]}}"#;
    rejects(&file(h, &[1, 2]), "SCHEMA-SHAPE");
}

#[test]
fn json_trailing() {
    let o = obj(&[U8X2.to_owned()]);
    for tail in [
        "{}",
        "\u{0}",
        "\u{0}\u{0}\u{0}",
        "x",
        "//c",
        "/*c*/",
        ",",
        "}",
        "[]",
        "0",
    ] {
        let h = format!("{o}{tail}");
        rejects_at(&file(&h, &[1, 2]), "JSON-TRAILING", 8 + o.len() as u64);
        // After legal whitespace, the offset is still the first offending byte.
        let h = format!("{o}  {tail}");
        rejects_at(&file(&h, &[1, 2]), "JSON-TRAILING", 8 + o.len() as u64 + 2);
    }
    // NUL padding to a multiple of 8 (a common writer bug).
    let mut h = o.clone().into_bytes();
    let n = o.len() as u64;
    h.resize(o.len().next_multiple_of(8) + 8, 0);
    rejects_at(&raw(&h, &[1, 2]), "JSON-TRAILING", 8 + n);
    // Nearest accepted: space padding.
    clean(&file(&o, &[1, 2]));
}

#[test]
fn json_duplicate_key() {
    let a1 = ent("a", "U8", "1", 0, 1);
    let a2 = ent("a", "U8", "1", 1, 2);
    // Tensor names.
    let h = obj(&[a1.clone(), a2.clone()]);
    let e = rejects_at(
        &file(&h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at_last(&h, "\"a\""),
    );
    assert_eq!(e.tensor(), Some("a"));
    // Compared after unescaping: "a" and "\u0061".
    let h = obj(&[a1.clone(), ent("\\u0061", "U8", "1", 1, 2)]);
    rejects_at(
        &file(&h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at(&h, "\"\\u0061"),
    );
    let h = obj(&[ent("\\u0061", "U8", "1", 0, 1), a2.clone()]);
    rejects_at(
        &file(&h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at_last(&h, "\"a\""),
    );
    // Fields inside an entry.
    for (field, value) in [
        ("dtype", "\"U8\""),
        ("shape", "[2]"),
        ("data_offsets", "[0,2]"),
    ] {
        let h = format!(
            r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":[0,2],"{field}":{value}}}}}"#
        );
        rejects_at(
            &file(&h, &[1, 2]),
            "JSON-DUPLICATE-KEY",
            at_last(&h, &format!("\"{field}\"")),
        );
    }
    // Keys inside __metadata__.
    let h = format!(r#"{{"__metadata__":{{"k":"1","\u006b":"2"}},{U8X2}}}"#);
    rejects_at(
        &file(&h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at(&h, "\"\\u006b"),
    );
    // __metadata__ twice (also when the first is null, and escaped).
    for first in ["{}", "null", r#"{"k":"v"}"#] {
        let h = format!(r#"{{"__metadata__":{first},{U8X2},"__metadata__":{{}}}}"#);
        rejects_at(
            &file(&h, &[1, 2]),
            "JSON-DUPLICATE-KEY",
            at_last(&h, "\"__metadata__\""),
        );
    }
    let h = format!(r#"{{"__metadata__":{{}},"\u005f_metadata__":{{}},{U8X2}}}"#);
    rejects_at(
        &file(&h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at(&h, "\"\\u005f"),
    );
    // At any level: inside a value the schema rejects anyway, the duplicate (malformed) wins.
    let h = r#"{"t":{"dtype":{"U8":null,"U8":null},"shape":[2],"data_offsets":[0,2]}}"#;
    rejects_at(
        &file(h, &[1, 2]),
        "JSON-DUPLICATE-KEY",
        at_last(h, "\"U8\""),
    );
    let h = r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":{"y":1,"y":2}}}"#;
    rejects_at(&file(h, &[1, 2]), "JSON-DUPLICATE-KEY", at_last(h, "\"y\""));
    // Nearest accepted: names that differ only in case, or by a character.
    clean(&file(&obj(&[a1, ent("A", "U8", "1", 1, 2)]), &[1, 2]));
    let h = format!(r#"{{"__metadata__":{{"k":"1","K":"1"}},{U8X2}}}"#);
    clean(&file(&h, &[1, 2]));
}

#[test]
fn json_leading_whitespace() {
    let o = obj(&[U8X2.to_owned()]);
    for lead in [" ", "\n", "\t", "\r\n "] {
        let h = format!("{lead}{o}");
        warns(&file(&h, &[1, 2]), "JSON-LEADING-WHITESPACE", 8);
    }
    clean(&file(&o, &[1, 2]));
}

#[test]
fn json_padding_whitespace() {
    let o = obj(&[U8X2.to_owned()]);
    for (pad_bytes, first) in [("\t", 0), ("  \n", 2), ("\r", 0), (" \t ", 1)] {
        let mut h = format!("{o}{pad_bytes}");
        while !h.len().is_multiple_of(8) {
            h.push(' ');
        }
        warns(
            &raw(h.as_bytes(), &[1, 2]),
            "JSON-PADDING-WHITESPACE",
            8 + (o.len() + first) as u64,
        );
    }
    clean(&file(&o, &[1, 2]));
}

// ---------------------------------------------------------------------------------------------
// SCHEMA-*

#[test]
fn schema_root() {
    rejects_at(&file("[]", &[]), "SCHEMA-ROOT", 8);
    for h in ["\"x\"", "1", "null", "true", "-1", "1.5"] {
        let e = rejects(&file(h, &[]), "SCHEMA-ROOT");
        assert!(e.offset() >= 8 && e.offset() <= 8 + h.len() as u64, "{e}");
    }
    clean(&file("{}", &[]));
}

#[test]
fn schema_metadata() {
    for (meta, fault) in [
        (r#"{"k":1}"#, "1"),
        (r#"{"k":null}"#, "null"),
        (r#"{"k":["v"]}"#, "[\"v\"]"),
        (r#"{"k":{"a":"b"}}"#, "{\"a\""),
        (r#"{"k":true}"#, "true"),
        (r#"["k"]"#, "[\"k\"]"),
        (r#""k""#, "\"k\""),
        ("1", "1,"),
    ] {
        let h = format!(r#"{{"__metadata__":{meta},{U8X2}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "SCHEMA-METADATA");
        let i = at(&h, fault);
        assert!(
            e.offset() >= i && e.offset() <= i + fault.len() as u64,
            "offset {} not at {i} in {h}: {e}",
            e.offset()
        );
    }
    clean(&file(
        &format!(r#"{{"__metadata__":{{}},{U8X2}}}"#),
        &[1, 2],
    ));
    let r = clean(&file(
        &format!(r#"{{"__metadata__":{{"k":"v","\u006a":"\u0041"}},{U8X2}}}"#),
        &[1, 2],
    ));
    let meta: Vec<(String, String)> = r
        .metadata()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    assert_eq!(meta, [("k".into(), "v".into()), ("j".into(), "A".into())]);
    assert_eq!(r.metadata_len(), 2);
}

#[test]
fn schema_metadata_null() {
    let h = format!(r#"{{"__metadata__":null,{U8X2}}}"#);
    warns(&file(&h, &[1, 2]), "SCHEMA-METADATA-NULL", 8);
    let f = file(&h, &[1, 2]);
    let r = validate(&f, &Config::default()).expect("accepted");
    assert_eq!(r.metadata_form(), stcheck::MetadataForm::Null);
    assert_eq!(r.metadata().count(), 0);
    let r = clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
    assert_eq!(r.metadata_form(), stcheck::MetadataForm::Absent);
}

#[test]
fn schema_entry() {
    for value in [r#"["U8",[2],[0,2]]"#, "null", "1", "\"U8\"", "true", "[]"] {
        let h = format!(r#"{{"t":{value}}}"#);
        let e = rejects_at(&file(&h, &[1, 2]), "SCHEMA-ENTRY", 8 + 1);
        assert_eq!(e.tensor(), Some("t"));
    }
    clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
}

#[test]
fn schema_missing_field() {
    for body in [
        r#"{"shape":[2],"data_offsets":[0,2]}"#,
        r#"{"dtype":"U8","data_offsets":[0,2]}"#,
        r#"{"dtype":"U8","shape":[2]}"#,
        "{}",
    ] {
        let h = format!(
            r#"{{"x":{U8X2_BODY},"t":{body}}}"#,
            U8X2_BODY = "{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}"
        );
        let e = rejects_at(&file(&h, &[1, 2]), "SCHEMA-MISSING-FIELD", at(&h, "\"t\""));
        assert_eq!(e.tensor(), Some("t"));
    }
    clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
}

#[test]
fn schema_unknown_field() {
    for field in ["x", "DTYPE", "Shape", "data_offset", "__metadata__", ""] {
        let h = format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":[0,2],"{field}":1}}}}"#);
        rejects_at(
            &file(&h, &[1, 2]),
            "SCHEMA-UNKNOWN-FIELD",
            at(&h, &format!("\"{field}\":1")),
        );
        // First in the entry, too.
        let h = format!(r#"{{"t":{{"{field}":1,"dtype":"U8","shape":[2],"data_offsets":[0,2]}}}}"#);
        rejects_at(
            &file(&h, &[1, 2]),
            "SCHEMA-UNKNOWN-FIELD",
            at(&h, &format!("\"{field}\":1")),
        );
    }
    // Fields in another order are fine.
    clean(&file(
        r#"{"t":{"data_offsets":[0,2],"shape":[2],"dtype":"U8"}}"#,
        &[1, 2],
    ));
}

#[test]
fn schema_shape() {
    for shape in [
        r#""2""#, r#"["2"]"#, "[[2]]", "null", "{}", "2", "[null]", "[true]", "[{}]",
    ] {
        let h = format!(r#"{{"t":{{"dtype":"U8","shape":{shape},"data_offsets":[0,2]}}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "SCHEMA-SHAPE");
        assert_eq!(e.tensor(), Some("t"));
        assert!(
            e.offset() >= at(&h, "\"t\"") && e.offset() <= at(&h, "\"data_offsets\""),
            "{e}"
        );
    }
    // Nearest accepted: a scalar (empty shape) and a multi-dimensional shape.
    clean(&file(
        r#"{"t":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}"#,
        &[7],
    ));
    clean(&file(
        r#"{"t":{"dtype":"U8","shape":[1,2,1],"data_offsets":[0,2]}}"#,
        &[1, 2],
    ));
}

#[test]
fn schema_offsets() {
    for offsets in [
        "[2]",
        "[0,2,2]",
        "[]",
        "[0,1,2,3]",
        r#""0,2""#,
        "null",
        r#"{"a":1}"#,
        "[[0,2]]",
        "[0,null]",
    ] {
        let h = format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":{offsets}}}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "SCHEMA-OFFSETS");
        assert_eq!(e.tensor(), Some("t"));
        assert!(
            e.offset() >= at(&h, "\"t\"") && e.offset() <= 8 + h.len() as u64,
            "{e}"
        );
    }
    clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
}

#[test]
fn schema_integer() {
    let bad = [
        "1.0",
        "1e2",
        "1E2",
        "2e0",
        "-0",
        "-1",
        "0.5",
        "18446744073709551616",
        "99999999999999999999999",
        "-0.0",
    ];
    for n in bad {
        let h = format!(r#"{{"t":{{"dtype":"U8","shape":[{n}],"data_offsets":[0,2]}}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "SCHEMA-INTEGER");
        let i = at(&h, n);
        assert!(
            e.offset() >= i && e.offset() <= i + n.len() as u64,
            "{h}: {e}"
        );
        let h = format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":[0,{n}]}}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "SCHEMA-INTEGER");
        let i = at_last(&h, n);
        assert!(
            e.offset() >= i && e.offset() <= i + n.len() as u64,
            "{h}: {e}"
        );
    }
    // 2^64-1 is a well-formed number: files using it fail later rules, not SCHEMA-INTEGER.
    let max = u64::MAX;
    rejects(
        &file(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[{max},0],"data_offsets":[0,0]}}}}"#),
            &[],
        ),
        "SIZE-OVERFLOW",
    );
    rejects(
        &file(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[0],"data_offsets":[{max},{max}]}}}}"#),
            &[],
        ),
        "LAYOUT-GAP",
    );
    rejects(
        &file(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":[0,{max}]}}}}"#),
            &[1, 2],
        ),
        "SIZE-MISMATCH",
    );
    // Nearest accepted: a large dimension next to a zero one, and leading-zero-free zeros.
    let big = (1u64 << 61) - 1;
    let r = clean(&file(
        &format!(r#"{{"t":{{"dtype":"U8","shape":[{big},0],"data_offsets":[0,0]}}}}"#),
        &[],
    ));
    assert_eq!(r.tensor("t").map(|t| t.elements), Some(0));
    // A leading zero is a JSON syntax error, not a number form.
    rejects(
        &file(
            r#"{"t":{"dtype":"U8","shape":[02],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "JSON-SYNTAX",
    );
}

// ---------------------------------------------------------------------------------------------
// DTYPE-*

#[test]
fn dtype_type() {
    for dtype in [
        r#"{"U8":null}"#,
        "3",
        "null",
        r#"["U8"]"#,
        "true",
        r#"{"U8":[]}"#,
    ] {
        let h = format!(r#"{{"t":{{"dtype":{dtype},"shape":[2],"data_offsets":[0,2]}}}}"#);
        let e = rejects(&file(&h, &[1, 2]), "DTYPE-TYPE");
        assert_eq!(e.tensor(), Some("t"));
        assert!(
            e.offset() >= at(&h, "\"t\"") && e.offset() <= at(&h, "\"shape\""),
            "{e}"
        );
    }
    clean(&file(&obj(&[U8X2.to_owned()]), &[1, 2]));
}

#[test]
fn dtype_unknown() {
    for name in [
        "f32",
        "u8",
        "F128",
        "",
        "U8 ",
        " U8",
        "float32",
        "Bool",
        "F8_E4M3FN",
        "\\u0075\\u0038",
    ] {
        let h = format!(r#"{{"t":{{"dtype":"{name}","shape":[2],"data_offsets":[0,2]}}}}"#);
        let e = rejects_at(
            &file(&h, &[1, 2]),
            "DTYPE-UNKNOWN",
            at(&h, &format!("\"{name}\",\"shape")),
        );
        assert_eq!(e.tensor(), Some("t"));
    }
    // Nearest accepted: every one of the 22 names, and an escaped exact spelling.
    for &d in Dtype::ALL {
        let bytes = (8 * d.bits() / 8) as usize;
        let h = obj(&[ent("t", d.name(), "8", 0, bytes as u64)]);
        let r = clean(&file(&h, &vec![0; bytes]));
        assert_eq!(r.tensor("t").map(|t| t.dtype), Some(d));
    }
    assert_eq!(Dtype::ALL.len(), 22);
    clean(&file(
        r#"{"t":{"dtype":"\u0055\u0038","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
    ));
}

// ---------------------------------------------------------------------------------------------
// SIZE-*

#[test]
fn size_overflow() {
    let p63 = 1u64 << 63;
    let cases = [
        ("U8", format!("{p63},{p63},0"), 0u64),
        ("U8", format!("0,{p63},{p63}"), 0),
        ("U8", format!("{p63},0,{p63}"), 0),
        // Wraps to exactly 8 elements (2^64 + 8): an unchecked reader sees [0, 8] as right.
        ("U8", format!("{},8", (1u64 << 61) + 1), 8),
        // Elements fit, bits do not: 2^58 x 64 bits = 2^64.
        ("F64", format!("{}", 1u64 << 58), 0),
        ("U8", format!("{},0", u64::MAX), 0),
        ("F4", format!("{}", u64::MAX), 0),
    ];
    for (dtype, shape, end) in &cases {
        let h = obj(&[ent("t", dtype, shape, 0, *end)]);
        let e = rejects_at(&file(&h, &vec![0; *end as usize]), "SIZE-OVERFLOW", 8 + 1);
        assert_eq!(e.tensor(), Some("t"));
    }
    // Nearest accepted: the largest products that fit.
    let h = obj(&[ent("t", "U8", &format!("{},0", (1u64 << 61) - 1), 0, 0)]);
    clean(&file(&h, &[]));
    let h = obj(&[ent("t", "F64", &format!("0,{}", (1u64 << 58) - 1), 0, 0)]);
    clean(&file(&h, &[]));
}

#[test]
fn size_bits() {
    for (dtype, shape, end) in [
        ("F4", "3", 2u64),
        ("F4", "3", 1),
        ("F4", "1", 1),
        ("F6_E2M3", "3", 3),
        ("F6_E3M2", "1,1", 1),
    ] {
        let h = obj(&[ent("t", dtype, shape, 0, end)]);
        let e = rejects_at(&file(&h, &vec![0; end as usize]), "SIZE-BITS", 9);
        assert_eq!(e.tensor(), Some("t"));
    }
    clean(&file(&obj(&[ent("t", "F4", "4", 0, 2)]), &[0, 0]));
    clean(&file(&obj(&[ent("t", "F4", "2,3", 0, 3)]), &[0; 3]));
    clean(&file(&obj(&[ent("t", "F6_E2M3", "4", 0, 3)]), &[0; 3]));
    clean(&file(&obj(&[ent("t", "F4", "0,3", 0, 0)]), &[]));
}

#[test]
fn size_mismatch() {
    for (dtype, shape, end) in [
        ("U8", "3", 2u64),
        ("F32", "2", 4),
        ("U8", "", 0),
        ("U8", "0", 1),
        ("C64", "1", 4),
    ] {
        let h = obj(&[ent("t", dtype, shape, 0, end)]);
        let e = rejects_at(&file(&h, &vec![0; end as usize]), "SIZE-MISMATCH", 9);
        assert_eq!(e.tensor(), Some("t"));
    }
    clean(&file(&obj(&[ent("t", "C64", "1", 0, 8)]), &[0; 8]));
}

#[test]
fn size_total_parameters() {
    for value in ["3", "abc", "", "02", "2.0", "-2", "18446744073709551616"] {
        let h = format!(r#"{{"__metadata__":{{"total_parameters":"{value}"}},{U8X2}}}"#);
        warns(
            &file(&h, &[1, 2]),
            "SIZE-TOTAL-PARAMETERS",
            at(&h, &format!("\"{value}\"")),
        );
    }
    let h = format!(r#"{{"__metadata__":{{"total_parameters":"2"}},{U8X2}}}"#);
    clean(&file(&h, &[1, 2]));
    // The writer agrees on the count.
    let f = serialize(
        &[
            TensorSpec::new("a", Dtype::F32, &[2, 3], &[0; 24]),
            TensorSpec::new("b", Dtype::F4, &[4], &[0; 2]),
        ],
        &[("total_parameters", "10")],
    )
    .expect("writer");
    clean(&f);
}

// ---------------------------------------------------------------------------------------------
// LAYOUT-*

#[test]
fn layout_order() {
    let h = obj(&[ent("t", "U8", "0", 2, 0)]);
    rejects_at(&file(&h, &[1, 2]), "LAYOUT-ORDER", 9);
    let h = obj(&[U8X2.to_owned(), ent("z", "U8", "0", 2, 1)]);
    rejects_at(&file(&h, &[1, 2]), "LAYOUT-ORDER", at(&h, "\"z\""));
    let h = obj(&[ent("t", "U8", "0", u64::MAX, 0)]);
    rejects_at(&file(&h, &[]), "LAYOUT-ORDER", 9);
    clean(&file(&obj(&[ent("t", "U8", "0", 0, 0)]), &[]));
}

#[test]
fn layout_gap() {
    // Between two tensors.
    let h = obj(&[ent("a", "U8", "1", 0, 1), ent("b", "U8", "1", 2, 3)]);
    rejects_at(&file(&h, &[0; 3]), "LAYOUT-GAP", at(&h, "\"b\""));
    // At the start.
    let h = obj(&[ent("b", "U8", "1", 1, 2)]);
    rejects_at(&file(&h, &[0; 2]), "LAYOUT-GAP", 9);
    // A zero-size tensor past the end.
    let h = obj(&[ent("z", "U8", "0", 3, 3), U8X2.to_owned()]);
    rejects_at(&file(&h, &[1, 2]), "LAYOUT-GAP", 9);
    let h = obj(&[ent("z", "U8", "0", 1, 1)]);
    rejects_at(&file(&h, &[]), "LAYOUT-GAP", 9);
    // Header order does not matter: the gap is found in offset order.
    let h = obj(&[ent("b", "U8", "1", 2, 3), ent("a", "U8", "1", 0, 1)]);
    rejects_at(&file(&h, &[0; 3]), "LAYOUT-GAP", 9);
    // Nearest accepted: zero-size tensors at every boundary, in any header order.
    let h = obj(&[
        ent("z_end", "U8", "0", 3, 3),
        ent("b", "U8", "2", 1, 3),
        ent("z_mid", "I8", "0", 1, 1),
        ent("a", "U8", "1", 0, 1),
        ent("z_start", "U8", "0", 0, 0),
        ent("z_start2", "U8", "0,5", 0, 0),
    ]);
    let r = clean(&file(&h, &[0; 3]));
    let order: Vec<&str> = r.tensors().map(|t| t.name).collect();
    assert_eq!(order, ["z_start", "z_start2", "a", "z_mid", "b", "z_end"]);
    clean(&file(&obj(&[ent("z", "U8", "0", 0, 0)]), &[]));
}

#[test]
fn layout_overlap() {
    let h = obj(&[ent("a", "U8", "2", 0, 2), ent("b", "U8", "2", 1, 3)]);
    rejects_at(&file(&h, &[0; 3]), "LAYOUT-OVERLAP", at(&h, "\"b\""));
    // Two tensors on the same bytes.
    let h = obj(&[ent("a", "U8", "2", 0, 2), ent("b", "I8", "2", 0, 2)]);
    rejects_at(&file(&h, &[0; 2]), "LAYOUT-OVERLAP", at(&h, "\"b\""));
    // A zero-size tensor strictly inside another.
    let h = obj(&[ent("z", "U8", "0", 1, 1), ent("a", "U8", "2", 0, 2)]);
    rejects_at(&file(&h, &[0; 2]), "LAYOUT-OVERLAP", 9);
    // One inside another.
    let h = obj(&[ent("a", "U8", "4", 0, 4), ent("b", "U8", "2", 1, 3)]);
    rejects_at(&file(&h, &[0; 4]), "LAYOUT-OVERLAP", at(&h, "\"b\""));
    // Nearest accepted: adjacent tensors, and two zero-size tensors at the same boundary.
    let h = obj(&[
        ent("a", "U8", "2", 0, 2),
        ent("b", "U8", "1", 2, 3),
        ent("y", "U8", "0", 2, 2),
        ent("z", "U8", "0", 2, 2),
    ]);
    clean(&file(&h, &[0; 3]));
}

#[test]
fn layout_align() {
    let h = obj(&[ent("a", "U8", "1", 0, 1), ent("b", "F32", "1", 1, 5)]);
    warns(&file(&h, &[0; 5]), "LAYOUT-ALIGN", at(&h, "\"b\""));
    let h = obj(&[ent("a", "U8", "2", 0, 2), ent("b", "F64", "1", 2, 10)]);
    warns(&file(&h, &[0; 10]), "LAYOUT-ALIGN", at(&h, "\"b\""));
    // Nearest accepted: aligned begins; sub-byte and byte types have alignment 1.
    let h = obj(&[ent("a", "U8", "4", 0, 4), ent("b", "F32", "1", 4, 8)]);
    clean(&file(&h, &[0; 8]));
    let h = obj(&[ent("a", "U8", "1", 0, 1), ent("b", "F4", "2", 1, 2)]);
    clean(&file(&h, &[0; 2]));
    // A zero-size tensor at an odd offset (as MLX writes them) has nothing to misalign.
    let h = obj(&[ent("a", "U8", "1", 0, 1), ent("e", "F32", "0", 1, 1)]);
    clean(&file(&h, &[0; 1]));
}

// ---------------------------------------------------------------------------------------------
// NAME-*

#[test]
fn name_control() {
    for name in [
        "a\\u0000b",
        "a\\nb",
        "\\r",
        "x\\u001f",
        "\\u007f",
        "a\u{7f}",
        "a\u{85}b",
        "\\u0085",
        "\u{9f}",
        "\\t",
        // The line and paragraph separators, raw and escaped.
        "a\u{2028}b",
        "a\u{2029}b",
        "a\\u2028b",
        "\\u2029",
    ] {
        let h = obj(&[ent(name, "U8", "2", 0, 2)]);
        let e = rejects_at(&file(&h, &[1, 2]), "NAME-CONTROL", 9);
        assert!(e.tensor().is_some());
        // The Display form escapes the name: one line, no raw control character.
        let shown = e.to_string();
        assert!(
            !shown.chars().any(stcheck::internal::is_control),
            "{shown:?}"
        );
        assert_eq!(shown.lines().count(), 1, "{shown:?}");
    }
    let h = obj(&[ent("ab\u{2028}", "U8", "2", 0, 2)]);
    let e = rejects(&file(&h, &[1, 2]), "NAME-CONTROL");
    assert!(
        e.message().contains("line separator U+2028 at character 2"),
        "{e}"
    );
    // Nearest accepted: U+00A0 (after the C1 range), U+001F-like printable text, and the
    // neighbours of U+2028-U+2029: U+2027 HYPHENATION POINT and U+202F NARROW NO-BREAK SPACE
    // (U+202A-U+202E between them are NAME-INVISIBLE warnings).
    for name in ["a\u{a0}b", "a~b", "a\u{2027}b", "a\u{202f}b", "\\u2027"] {
        clean(&file(&obj(&[ent(name, "U8", "2", 0, 2)]), &[1, 2]));
    }
}

#[test]
fn name_empty() {
    let h = obj(&[ent("", "U8", "2", 0, 2)]);
    warns(&file(&h, &[1, 2]), "NAME-EMPTY", 9);
    clean(&file(&obj(&[ent(" ", "U8", "2", 0, 2)]), &[1, 2]));
}

/// Every Default_Ignorable_Code_Point range of Unicode 17 (DerivedCoreProperties.txt), at its
/// first and last code point, and the code points just outside it.
const DEFAULT_IGNORABLE_17: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

#[test]
fn name_invisible() {
    let mut invisible: Vec<char> = vec![
        '\u{202e}',
        '\u{200b}',
        '\u{200d}',
        '\u{2066}',
        '\u{feff}',
        '\u{61c}',
        '\u{2060}',
        // The soft hyphen, a tag letter, CANCEL TAG, VARIATION SELECTOR-16, HANGUL FILLER.
        '\u{ad}',
        '\u{e0041}',
        '\u{e007f}',
        '\u{fe0f}',
        '\u{3164}',
    ];
    let mut visible = vec!['\u{2070}', '\u{a0}', '\u{2027}'];
    for &(first, last) in DEFAULT_IGNORABLE_17 {
        let c = |u: u32| char::from_u32(u).expect("a scalar value");
        invisible.extend([c(first), c(last)]);
        for outside in [first - 1, last + 1] {
            // U+202F and U+2029 border the bidi block; U+2029 is a NAME-CONTROL error.
            if outside != 0x2029 {
                visible.push(c(outside));
            }
        }
    }
    for c in invisible {
        let name = format!("a{c}b");
        let h = obj(&[ent(&name, "U8", "2", 0, 2)]);
        warns(&file(&h, &[1, 2]), "NAME-INVISIBLE", 9);
        // Escaped, too (a surrogate pair above U+FFFF).
        let mut units = [0u16; 2];
        let escaped: String = c
            .encode_utf16(&mut units)
            .iter()
            .map(|u| format!("\\u{u:04x}"))
            .collect();
        let h = obj(&[ent(&format!("a{escaped}b"), "U8", "2", 0, 2)]);
        warns(&file(&h, &[1, 2]), "NAME-INVISIBLE", 9);
        // The warning's Display form shows it escaped.
        let f = file(&obj(&[ent(&name, "U8", "2", 0, 2)]), &[1, 2]);
        let r = validate(&f, &Config::default()).expect("accepted");
        let shown = r.warnings()[0].to_string();
        assert!(
            !shown.contains(c) && shown.contains(&format!("\\u{{{:x}}}", c as u32)),
            "{shown:?}"
        );
    }
    for c in visible {
        clean(&file(
            &obj(&[ent(&format!("a{c}b"), "U8", "2", 0, 2)]),
            &[1, 2],
        ));
    }
}

/// `stcheck::escape`, which every human-readable line uses for untrusted text: what
/// `escape_debug` escapes, and every default-ignorable character as `\u{..}`.
#[test]
fn names_escape() {
    use stcheck::escape;
    assert!(matches!(
        escape("model.layers.0.weight"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(escape("café ✓ 模型"), "café ✓ 模型");
    for (raw, shown) in [
        ("a\nb", r"a\nb"),
        ("it's", "it's"),
        ("a\u{85}b", r"a\u{85}b"),
        ("a\u{2028}b\u{2029}", r"a\u{2028}b\u{2029}"),
        ("\u{202e}x\u{2066}", r"\u{202e}x\u{2066}"),
        ("soft\u{ad}hyphen", r"soft\u{ad}hyphen"),
        ("tag\u{e0041}", r"tag\u{e0041}"),
        ("\u{1b}[31m", r"\u{1b}[31m"),
        (r#"a"b\c"#, r#"a\"b\\c"#),
        (r"\u{202e}", r"\\u{202e}"),
    ] {
        assert_eq!(escape(raw), shown, "{raw:?}");
    }
    // Nothing that breaks a line or hides survives, for every code point.
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        let s = c.to_string();
        let e = escape(&s);
        if stcheck::internal::is_control(c) || stcheck::internal::is_invisible(c) {
            assert!(
                e.starts_with('\\') && !e.contains(c),
                "U+{:04X}: {e}",
                c as u32
            );
        }
        assert!(!e.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}', '\u{202e}']));
    }
}

/// Shard names of a sharded checkpoint follow the same character rules: line separators are
/// control characters, default-ignorable code points are refused.
#[test]
fn shard_names_refuse_line_separators_and_invisible_characters() {
    use stcheck::index::check_shard_name;
    for name in [
        "model-00001-of-00002.safetensors",
        "a\u{a0}b.safetensors",
        "a\u{2027}.safetensors",
    ] {
        assert_eq!(check_shard_name(name), Ok(()), "{name:?}");
    }
    for name in [
        "a\u{2028}.safetensors",
        "a\u{2029}.safetensors",
        "a\u{85}.safetensors",
    ] {
        assert_eq!(
            check_shard_name(name),
            Err("shard file name holds a control character"),
            "{name:?}"
        );
    }
    for name in [
        "model\u{202e}srotnesfas.bin",
        "a\u{ad}.safetensors",
        "a\u{e0041}.safetensors",
        "a\u{200b}.safetensors",
    ] {
        let why = check_shard_name(name).expect_err(name);
        assert!(why.contains("invisible"), "{name:?}: {why}");
    }
}

#[test]
fn name_path() {
    for name in [
        "../x",
        "/abs",
        "a/../b",
        "\\\\x",
        "..",
        "a\\\\..\\\\b",
        "x/..",
    ] {
        let h = obj(&[ent(name, "U8", "2", 0, 2)]);
        warns(&file(&h, &[1, 2]), "NAME-PATH", 9);
    }
    for name in ["a..b", "a/b", "...", "model.layers.0.weight", "./x", ".x"] {
        clean(&file(&obj(&[ent(name, "U8", "2", 0, 2)]), &[1, 2]));
    }
}

// ---------------------------------------------------------------------------------------------
// DATA-TRAILING / DATA-TRUNCATED

#[test]
fn data_trailing() {
    let h = pad(&obj(&[U8X2.to_owned()]));
    let n = h.len() as u64;
    for extra in [1usize, 7, 100] {
        let mut data = vec![1u8, 2];
        data.extend(std::iter::repeat_n(0x50, extra));
        rejects_at(&raw(h.as_bytes(), &data), "DATA-TRAILING", 8 + n + 2);
    }
    // No tensors at all: every data byte is trailing.
    rejects_at(&file("{}", b"PK\x05\x06"), "DATA-TRAILING", 16);
    clean(&raw(h.as_bytes(), &[1, 2]));
}

#[test]
fn data_truncated() {
    let h = pad(&obj(&[
        ent("a", "U8", "2", 0, 2),
        ent("b", "U8", "3", 2, 5),
    ]));
    let n = h.len() as u64;
    for len in [0u64, 1, 2, 4] {
        let e = rejects_at(
            &raw(h.as_bytes(), &vec![0; len as usize]),
            "DATA-TRUNCATED",
            8 + n + len,
        );
        // The tensor named is the first one the cut reaches.
        assert_eq!(e.tensor(), Some(if len < 2 { "a" } else { "b" }), "{e}");
    }
    clean(&raw(h.as_bytes(), &[0; 5]));
}

#[test]
fn data_truncated_last_end_near_2_pow_64() {
    // Eight U8 tensors of 2^61-1 bytes each: the last ends at 2^64-8; 8 + N + end overflows.
    let big = (1u64 << 61) - 1;
    let entries: Vec<String> = (0..8u64)
        .map(|i| {
            ent(
                &format!("t{i}"),
                "U8",
                &big.to_string(),
                i * big,
                (i + 1) * big,
            )
        })
        .collect();
    let h = obj(&entries);
    let f = raw(h.as_bytes(), &[]);
    assert_eq!(f.len(), 854);
    rejects_at(&f, "DATA-TRUNCATED", 854);
}

// ---------------------------------------------------------------------------------------------
// Ordering of findings

#[test]
fn malformed_fault_wins_over_an_earlier_invalid_one() {
    // An unknown dtype (stage 2) and then a syntax error (stage 1).
    let h = r#"{"t":{"dtype":"XX","shape":[2],"data_offsets":[0,2]},"u":[,]}"#;
    let e = rejects(&file(h, &[1, 2]), "JSON-SYNTAX");
    assert_eq!(e.kind(), Kind::Malformed);
    assert!(e.offset() >= at(h, "[,]"), "{e}");
    // ... then a duplicate key deeper in the header.
    let h = r#"{"t":{"dtype":"XX","shape":[2],"data_offsets":[0,2]},"u":{"a":1,"a":2}}"#;
    rejects_at(&file(h, &[1, 2]), "JSON-DUPLICATE-KEY", at_last(h, "\"a\""));
    // ... then trailing bytes.
    let h = r#"{"t":{"dtype":"XX","shape":[2],"data_offsets":[0,2]}}{}"#;
    rejects_at(&file(h, &[1, 2]), "JSON-TRAILING", at_last(h, "{}"));
    // ... then nesting beyond the limit.
    let h = format!(
        r#"{{"t":{{"dtype":"XX","shape":[2],"data_offsets":[0,2]}},"u":{}"#,
        "[".repeat(200)
    );
    rejects(&file(&h, &[1, 2]), "JSON-DEPTH");
    // Without the later malformed fault, the invalid one is reported.
    let h = r#"{"t":{"dtype":"XX","shape":[2],"data_offsets":[0,2]},"u":[]}"#;
    rejects(&file(h, &[1, 2]), "DTYPE-UNKNOWN");
}

#[test]
fn first_fault_in_file_order() {
    let h = obj(&[ent("a", "XX", "2", 0, 2), ent("b", "U8", "3", 2, 4)]);
    rejects_at(&file(&h, &[0; 4]), "DTYPE-UNKNOWN", at(&h, "\"XX\""));
    let h = obj(&[ent("b", "U8", "3", 2, 4), ent("a", "XX", "2", 0, 2)]);
    rejects_at(&file(&h, &[0; 4]), "SIZE-MISMATCH", 9);
    // Layout faults come after every entry is parsed, data length last.
    let h = obj(&[ent("a", "U8", "1", 1, 2), ent("b", "U8", "3", 2, 4)]);
    rejects(&file(&h, &[0; 4]), "SIZE-MISMATCH");
    let h = obj(&[ent("a", "U8", "1", 1, 2)]);
    rejects(&file(&h, &[0; 9]), "LAYOUT-GAP");
}

#[test]
fn errors_before_warnings() {
    // Leading whitespace (warning at 8) and an empty name (warning), then an unknown dtype.
    let h = format!(" {}", obj(&[ent("", "XX", "2", 0, 2)]));
    rejects(&raw(h.as_bytes(), &[1, 2]), "DTYPE-UNKNOWN");
    let e = validate(
        &raw(h.as_bytes(), &[1, 2]),
        &Config::default().deny_warnings(true),
    )
    .expect_err("rejected");
    assert_eq!(e.rule().id(), "DTYPE-UNKNOWN");
    // Warnings plus trailing data: the data error wins.
    let h = obj(&[ent("", "U8", "2", 0, 2)]);
    rejects(&raw(h.as_bytes(), &[1, 2, 3]), "DATA-TRAILING");
}

#[test]
fn deny_warnings_promotes_the_first_warning_in_file_order() {
    // FRAME-ALIGN (offset 0), JSON-LEADING-WHITESPACE (8), NAME-EMPTY, NAME-PATH later.
    let h = format!(
        " {}",
        obj(&[ent("", "U8", "1", 0, 1), ent("../x", "U8", "1", 1, 2)])
    );
    assert_ne!(h.len() % 8, 0);
    let f = raw(h.as_bytes(), &[1, 2]);
    let r = validate(&f, &Config::default()).expect("accepted");
    let ids: Vec<&str> = r.warnings().iter().map(|w| w.rule().id()).collect();
    assert_eq!(
        ids,
        [
            "FRAME-ALIGN",
            "JSON-LEADING-WHITESPACE",
            "NAME-EMPTY",
            "NAME-PATH"
        ]
    );
    let offsets: Vec<u64> = r.warnings().iter().map(|w| w.offset()).collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
    let e = validate(&f, &Config::default().deny_warnings(true)).expect_err("denied");
    assert_eq!((e.rule().id(), e.offset()), ("FRAME-ALIGN", 0));
    assert!(e.is_promoted_warning());
    // Without the alignment warning, the leading whitespace is first.
    let f = file(&h, &[1, 2]);
    let e = validate(&f, &Config::default().deny_warnings(true)).expect_err("denied");
    assert_eq!((e.rule().id(), e.offset()), ("JSON-LEADING-WHITESPACE", 8));
}

#[test]
fn writer_output_is_clean() {
    let f = serialize(
        &[
            TensorSpec::new("w", Dtype::F32, &[2], &[0; 8]),
            TensorSpec::new("b", Dtype::BOOL, &[3], &[0, 1, 0]),
            TensorSpec::new("q", Dtype::F4, &[2, 2], &[0; 2]),
            TensorSpec::new("e", Dtype::U8, &[0], &[]),
        ],
        &[("format", "pt"), ("k\"ey", "va\\lue\n")],
    )
    .expect("writer");
    let r = clean(&f);
    assert_eq!(r.len(), 4);
    assert_eq!(r.header_len() % 8, 0);
}

// ---------------------------------------------------------------------------------------------

/// Every header rule has at least one rejecting (or warning) case above. Runs the other tests'
/// bodies itself so the check does not depend on test order.
/// INTEGRITY-SHA256 needs a server that publishes a digest (tested against a mock hub in
/// `cli/tests/it/hub.rs`); here, the finding the gate builds for a mismatch.
#[test]
fn integrity_sha256() {
    let computed = [0xabu8; 32];
    let e = Error::sha256_published(&computed, &[("listing", &"cd".repeat(32))])
        .expect("an integrity error");
    assert_eq!(e.rule(), Rule::IntegritySha256);
    assert_eq!(e.kind(), stcheck::Kind::Integrity);
    assert_eq!(e.kind().as_str(), "integrity");
    assert_eq!(e.offset(), 0);
    assert!(e.message().contains(&"ab".repeat(32)), "{e}");
    assert!(e.message().contains(&"cd".repeat(32)), "{e}");
    // Whatever the server sent, the message holds hex digits only from it.
    let e = Error::sha256_published(&computed, &[("listing", "\u{1b}[31mevil\nline")])
        .expect("an integrity error");
    assert!(!e.message().contains('\n') && !e.message().contains('\u{1b}'));
    seen(Rule::IntegritySha256);
}

/// Every id published for a file against its SHA-256: one decision, each source named.
#[test]
fn integrity_sha256_from_every_published_id() {
    let computed = [0xabu8; 32];
    let (good, other) = ("ab".repeat(32), "cd".repeat(32));
    let ok = Error::sha256_published(
        &computed,
        &[("listing", &good), ("etag", &good.to_uppercase())],
    );
    assert!(ok.is_none(), "{ok:?}");
    assert!(Error::sha256_published(&computed, &[]).is_none());
    for (ids, why) in [
        (vec![("listing", other.as_str())], "not the bytes"),
        (
            vec![("listing", good.as_str()), ("etag", other.as_str())],
            "disagree",
        ),
        (vec![("listing", &good[1..])], "not a SHA-256"),
        (vec![("listing", "\u{1b}[31mevil\nline")], "not a SHA-256"),
    ] {
        let e = Error::sha256_published(&computed, &ids).expect("an integrity error");
        assert_eq!(e.rule(), Rule::IntegritySha256);
        assert!(e.message().contains(why), "{e}");
        for (source, _) in &ids {
            assert!(e.message().contains(&format!("{source} publishes")), "{e}");
        }
        assert!(!e.message().contains('\n') && !e.message().contains('\u{1b}'));
    }
}

#[test]
fn every_header_rule_is_exercised() {
    let tests: &[fn()] = &[
        frame_short,
        frame_empty_header,
        frame_header_limit,
        frame_header_bounds,
        frame_not_safetensors,
        frame_align,
        utf8_invalid,
        json_bom,
        json_syntax,
        json_depth_100000_brackets,
        json_trailing,
        json_duplicate_key,
        json_leading_whitespace,
        json_padding_whitespace,
        schema_root,
        schema_metadata,
        schema_metadata_null,
        schema_entry,
        schema_missing_field,
        schema_unknown_field,
        schema_shape,
        schema_offsets,
        schema_integer,
        dtype_type,
        dtype_unknown,
        size_overflow,
        size_bits,
        size_mismatch,
        size_total_parameters,
        layout_order,
        layout_gap,
        layout_overlap,
        layout_align,
        name_control,
        name_empty,
        name_invisible,
        name_path,
        data_trailing,
        data_truncated,
        integrity_sha256,
    ];
    for t in tests {
        t();
    }
    let seen = SEEN.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let deep = ["DATA-BOOL", "DATA-NONFINITE", "DATA-POLYGLOT"];
    let missing: Vec<&str> = Rule::ALL
        .iter()
        .map(|r| r.id())
        // The portable profile's rules and NAME-SPECIAL (derived from its reader table) are
        // tested in tests/it/portable.rs.
        .filter(|id| {
            !deep.contains(id)
                && !id.starts_with("INDEX-")
                && !id.starts_with("PORTABLE-")
                && *id != "NAME-SPECIAL"
                && !seen.contains(id)
        })
        .collect();
    assert!(missing.is_empty(), "rules without a test: {missing:?}");
}

// ---------------------------------------------------------------------------------------------
// Regressions found while writing these tests (each fixed in the core).

/// Findings about a tensor whose name is written with JSON escapes used to point at offset 8
/// (warnings, size and layout errors) or past the key (errors raised at the key), because the
/// unescaped name does not borrow from the header. They now point at the key's opening quote.
#[test]
fn regression_escaped_name_offsets() {
    // A size error on an escaped name, after a metadata object holding the same escaped key
    // and an entry holding escaped strings, so the key is found by structure, not by text.
    let h = r#"{"__metadata__":{"a\u002fb":"x\"}"},"p":{"dtype":"\u0055\u0038","shape":[1],"data_offsets":[0,1]},"a\u002fb":{"dtype":"U8","shape":[3],"data_offsets":[1,2]}}"#;
    let e = rejects_at(
        &file(h, &[0; 2]),
        "SIZE-MISMATCH",
        at_last(h, "\"a\\u002fb\""),
    );
    assert_eq!(e.tensor(), Some("a/b"));
    // A layout error on the second of two escaped names.
    let h = obj(&[
        ent("\\u0061", "U8", "1", 0, 1),
        ent("\\u0062", "U8", "1", 2, 3),
    ]);
    rejects_at(&file(&h, &[0; 3]), "LAYOUT-GAP", at(&h, "\"\\u0062"));
    // Warnings and the report's header_offset.
    let h = obj(&[
        ent("\\u0061", "U8", "1", 0, 1),
        ent("\\/x", "U8", "1", 1, 2),
    ]);
    warns(&file(&h, &[0; 2]), "NAME-PATH", at(&h, "\"\\/x"));
    let f = file(&h, &[0; 2]);
    let r = validate(&f, &Config::default()).expect("accepted");
    let offsets: Vec<(&str, u64)> = r.tensors().map(|t| (t.name, t.header_offset)).collect();
    assert_eq!(offsets, [("a", 9), ("/x", at(&h, "\"\\/x"))]);
    // Errors raised at an escaped key inside an entry or __metadata__.
    let h = r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"\u0078\"":1}}"#;
    rejects_at(
        &file(h, &[1, 2]),
        "SCHEMA-UNKNOWN-FIELD",
        at(h, "\"\\u0078"),
    );
}

/// serde_json reports 1-based columns; findings from its positions were one byte past the
/// fault (e.g. `JSON-TRAILING` on the byte after the first trailing one).
#[test]
fn regression_serde_positions_point_at_the_fault() {
    let h = r#"{}x"#;
    rejects_at(&file(h, &[]), "JSON-TRAILING", 8 + 2);
    let h = r#"{"t\x":1}"#;
    rejects_at(&file(h, &[]), "JSON-SYNTAX", at(h, "x"));
    let h = "{\n\"t\":\n[NaN]}";
    rejects_at(&file(h, &[]), "JSON-SYNTAX", at(h, "N"));
}

/// `total_parameters` written with a leading zero ("02") matched silently, though the writer
/// refuses anything but the canonical decimal.
#[test]
fn regression_total_parameters_must_be_canonical() {
    let h = format!(r#"{{"__metadata__":{{"total_parameters":"02"}},{U8X2}}}"#);
    warns(
        &file(&h, &[1, 2]),
        "SIZE-TOTAL-PARAMETERS",
        at(&h, "\"02\""),
    );
    let h = format!(
        r#"{{"__metadata__":{{"total_parameters":"0"}},{}}}"#,
        ent("t", "U8", "0", 0, 0)
    );
    clean(&file(&h, &[]));
}

#[test]
fn names_parse_back_and_unknown_names_list_the_known() {
    use stcheck::{Profile, ReadErrorKind, ReadMode};
    for p in [Profile::Strict, Profile::Reference, Profile::Portable] {
        assert_eq!(p.as_str().parse::<Profile>(), Ok(p));
    }
    for m in [ReadMode::Mmap, ReadMode::Read, ReadMode::Stream] {
        assert_eq!(m.as_str().parse::<ReadMode>(), Ok(m));
    }
    let e = "nope".parse::<ReadErrorKind>().expect_err("no such kind");
    assert_eq!(e.known().len(), 9);
    for name in e.known() {
        assert_eq!(
            name.parse::<ReadErrorKind>().map(ReadErrorKind::as_str),
            Ok(*name)
        );
    }
    let e = "lax".parse::<Profile>().expect_err("no such profile");
    assert_eq!(
        e.to_string(),
        "\"lax\" is not strict, reference or portable"
    );
    assert_eq!(
        "Read"
            .parse::<ReadMode>()
            .expect_err("case matters")
            .to_string(),
        "\"Read\" is not mmap, read or stream"
    );
}
