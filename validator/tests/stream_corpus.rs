//! The one checker gives the same verdict, rule, offset, tensor and message, the same deep
//! counts and the same hash, on every file of the golden corpus, whichever source feeds it: a
//! whole buffer, a stream chunked in several ways, or a file read without mapping or streamed
//! (each under several configurations).

use std::io::{self, Read};
use std::path::Path;

use stcheck::{Checked, Checker, Config, ReadMode};

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

fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let text = std::fs::read_to_string(root.join("manifest.json")).expect("corpus/manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let path = case["path"].as_str().expect("path").to_owned();
            let bytes = std::fs::read(root.join(&path)).expect("corpus file");
            (path, bytes)
        })
        .collect()
}

/// Everything a check says, in comparable form.
fn summary(c: &Checked<'_>) -> String {
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
                let (file, _) = stcheck::fs::open_regular(&on_disk)
                    .expect("open")
                    .into_parts();
                let got = stcheck::check_file(&file, &config, mode, |c| summary(&c))
                    .unwrap_or_else(|e| panic!("{path}: {e}"));
                assert_eq!(whole, got, "{path} ({mode:?}, {config:?})");
            }
        }
    }
}

/// A stream that never ends after a valid header: the checker stops at the first byte past
/// the data region (`DATA-TRAILING`), having read only that far.
#[test]
fn an_endless_stream_ends_at_the_first_trailing_byte() {
    let file = stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[4],
            &[1, 2, 3, 4],
        )],
        &[],
    )
    .expect("serialize");
    for config in [Config::default(), Config::default().deep(true).sha256(true)] {
        let endless = io::Cursor::new(file.clone()).chain(io::repeat(0));
        let c = stcheck::check_reader(endless, &config).expect("no I/O error");
        let e = c.verdict.expect_err("trailing bytes");
        assert_eq!(e.rule().id(), "DATA-TRAILING");
        assert_eq!(e.offset(), file.len() as u64);
        assert_eq!(c.bytes_read, file.len() as u64 + 1);
    }
}
