//! The one checker gives the same verdict, rule, offset, tensor and message, the same deep
//! counts and the same hash, on every file of the golden corpus, whichever source feeds it: a
//! whole buffer, a stream chunked in several ways, or a file read without mapping or streamed
//! (each under several configurations).

use std::io::{self, Read};
use std::path::Path;

use stcheck::{Checked, Checker, Config, ReadMode};
use stcheck_testkit::corpus::Manifest;

/// A reader that hands out at most `step` bytes per call.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Every committed case (sets' index files too): (path, bytes).
fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let manifest = Manifest::load();
    manifest
        .cases
        .iter()
        .map(|c| (c.path.clone(), c.bytes()))
        .collect()
}

/// Everything a check says, in comparable form.
fn summary(c: &Checked<'_>) -> String {
    format!("{} reference {}", strict_summary(c), reference_verdict(c))
}

fn strict_summary(c: &Checked<'_>) -> String {
    match &c.verdict {
        Ok(r) => {
            let names: Vec<&str> = r.tensors().map(|t| t.name).collect();
            let counts: Vec<_> = r.warning_counts().collect();
            format!(
                "ok {names:?} {:?} {counts:?} deep {:?} sha {:?}",
                r.warnings(),
                c.deep,
                c.sha256
            )
        }
        Err(e) => format!(
            "error {} {} {:?} {} deep {:?} sha {:?}",
            e.rule(),
            e.offset(),
            e.tensor(),
            e.message(),
            c.deep,
            c.sha256
        ),
    }
}

fn configs() -> Vec<Config> {
    vec![
        Config::default(),
        Config::default().deny_warnings(true),
        Config::default().deep(true),
        Config::default()
            .deep(true)
            .sha256(true)
            .deny_nonfinite(true),
        Config::default().sha256(true).deny_warnings(true),
        Config::default().reference(true),
        Config::default().reference(true).deep(true).sha256(true),
    ]
}

#[test]
fn stream_equals_whole_buffer_on_every_corpus_file() {
    let files = corpus_files();
    assert!(files.len() >= 150, "the corpus has {} files", files.len());
    for config in configs() {
        for (path, bytes) in &files {
            let whole = summary(&Checker::check_slice(&config, bytes));
            for step in [1usize, 7, 4096, usize::MAX] {
                let streamed = stcheck::check_reader(Trickle { data: bytes, step }, &config)
                    .unwrap_or_else(|e| panic!("{path}: I/O error from memory: {e}"));
                assert_eq!(
                    whole,
                    summary(&streamed),
                    "{path} (step {step}, {config:?})"
                );
            }
            // Fed by hand in pieces of 3 bytes, with the length declared.
            let mut c = Checker::new(&config).with_len(bytes.len() as u64);
            for piece in bytes.chunks(3) {
                if c.feed(piece) == stcheck::Need::Done {
                    break;
                }
            }
            assert_eq!(
                whole,
                summary(&c.finish()),
                "{path} (fed with length, {config:?})"
            );
        }
    }
}

#[test]
fn every_read_mode_equals_the_whole_buffer_on_every_corpus_file() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("read-modes");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = corpus_files();
    for (i, (path, bytes)) in files.iter().enumerate() {
        let on_disk = dir.join(format!("{i}.safetensors"));
        std::fs::write(&on_disk, bytes).expect("write corpus copy");
        for config in configs() {
            let whole = summary(&Checker::check_slice(&config, bytes));
            for mode in [ReadMode::Mmap, ReadMode::Read, ReadMode::Stream] {
                let file = std::fs::File::open(&on_disk).expect("open");
                let got = stcheck::check_file(&file, &config, mode, |c| summary(&c))
                    .unwrap_or_else(|e| panic!("{path}: {e}"));
                assert_eq!(whole, got, "{path} ({mode:?}, {config:?})");
            }
        }
    }
}

/// A valid file of one U8 tensor of 4 bytes.
fn four_byte_file() -> Vec<u8> {
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[4],
            &[1, 2, 3, 4],
        )],
        &[],
    )
    .expect("serialize")
}

/// A stream that never ends after a valid header: the checker stops at the first byte past
/// the data region (`DATA-TRAILING`), having read only that far.
#[test]
fn an_endless_stream_ends_at_the_first_trailing_byte() {
    let file = four_byte_file();
    for config in [Config::default(), Config::default().deep(true).sha256(true)] {
        let endless = io::Cursor::new(file.clone()).chain(io::repeat(0));
        let c = stcheck::check_reader(endless, &config).expect("no I/O error");
        let e = c.verdict.expect_err("trailing bytes");
        assert_eq!(e.rule().id(), "DATA-TRAILING");
        assert_eq!(e.offset(), file.len() as u64);
        assert_eq!(c.bytes_read, file.len() as u64 + 1);
    }
}

/// With the reference verdict (which needs the file as one buffer), an endless stream is
/// copied only as far as the verdicts are decided: the check ends, both verdicts are those of
/// the file with one trailing byte, and the copy stays small.
#[test]
fn an_endless_stream_ends_with_the_reference_verdict_too() {
    let file = four_byte_file();
    let config = Config::default().reference(true);
    let endless = io::Cursor::new(file.clone()).chain(io::repeat(0));
    let c = stcheck::check_reader(endless, &config).expect("no I/O error");
    let mut one_more = file.clone();
    one_more.push(0);
    let whole = Checker::check_slice(&config, &one_more);
    assert_eq!(summary(&c), summary(&whole));
    assert_eq!(c.reference, whole.reference);
    assert!(!c.reference.as_ref().expect("reference verdict").accepts());
    assert_eq!(c.file_len, None, "the stream's length is not known");
    assert!(c.bytes_read < 1024, "copied {} bytes", c.bytes_read);
}

/// On every corpus file followed by a long run of zeros, the reference-profile check of the
/// stream gives the verdicts (strict and reference) of the whole buffer of the same bytes,
/// keeping only the header: where the run is longer than the bytes that decide the verdicts,
/// it stops there; where a header declares more data than the run holds, the stream ends
/// first and it is that file. Nothing is copied to disk (there is no spill any more).
#[test]
fn long_streams_get_the_verdicts_of_the_whole_buffer_on_every_corpus_file() {
    const RUN: u64 = 1 << 20;
    let config = Config::default().reference(true);
    let mut decided = 0;
    for (path, bytes) in corpus_files() {
        let stream = io::Cursor::new(bytes.clone()).chain(io::repeat(0).take(RUN));
        let streamed = stcheck::check_reader(stream, &config)
            .unwrap_or_else(|e| panic!("{path}: not checked: {e}"));
        let mut long = bytes.clone();
        long.resize(bytes.len() + RUN as usize, 0);
        let whole = Checker::check_slice(&config, &long);
        assert_eq!(summary(&streamed), summary(&whole), "{path}");
        assert_eq!(
            reference_verdict(&streamed),
            reference_verdict(&whole),
            "{path}"
        );
        decided += 1;
    }
    assert!(decided > 300, "only {decided} corpus files decided");
}

/// A header whose data region is enormous, on an endless stream, with the reference verdict:
/// nothing past the header is stored (issue 19: the spill of such a stream could write 64 GiB
/// to a temporary file); the check reads on to the data region's end like the strict check.
#[test]
fn an_endless_stream_with_a_huge_declared_region_stores_only_the_header() {
    let header = br#"{"w":{"dtype":"U8","shape":[33554432],"data_offsets":[0,33554432]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header);
    let config = Config::default().reference(true);
    let endless = io::Cursor::new(file.clone()).chain(io::repeat(0));
    let c = stcheck::check_reader(endless, &config).expect("checked");
    let e = c.verdict.as_ref().expect_err("a trailing byte");
    assert_eq!(e.rule().id(), "DATA-TRAILING");
    assert!(!c.reference.as_ref().expect("reference verdict").accepts());
    assert_eq!(c.file_len, None);
}

/// The reference verdict without the tensor names its messages quote: for tensors that share
/// an offset, which one the crate names depends on its hash map's random order.
fn reference_verdict(c: &Checked<'_>) -> String {
    format!("{:?}", c.reference)
        .split('`')
        .step_by(2)
        .collect::<Vec<_>>()
        .join("`_`")
}
