//! The streaming validator gives the same verdict, rule, offset, tensor and message as the
//! whole-buffer validator on every file of the golden corpus, however the stream is chunked.

use std::io::{self, Read};
use std::path::Path;

use stcheck::stream::{validate_reader, StreamError};
use stcheck::{validate, Config};

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

#[test]
fn stream_equals_whole_buffer_on_every_corpus_file() {
    let files = corpus_files();
    assert!(files.len() >= 150, "the corpus has {} files", files.len());
    for config in [Config::default(), Config::default().deny_warnings(true)] {
        for (path, bytes) in &files {
            let whole = validate(bytes, &config).map(|r| {
                let names: Vec<String> = r.tensors().map(|t| t.name.to_owned()).collect();
                (names, r.warnings().to_vec())
            });
            for step in [1usize, 7, 4096, usize::MAX] {
                let streamed = match validate_reader(Trickle { data: bytes, step }, &config) {
                    Ok(r) => Ok((
                        r.tensors().map(|t| t.name.to_owned()).collect::<Vec<_>>(),
                        r.warnings().to_vec(),
                    )),
                    Err(StreamError::Invalid(e)) => Err(e),
                    Err(StreamError::Io(e)) => panic!("{path}: I/O error from memory: {e}"),
                };
                match (&whole, &streamed) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{path} (step {step})"),
                    (Err(a), Err(b)) => {
                        assert_eq!(
                            (a.rule(), a.offset(), a.tensor(), a.message()),
                            (b.rule(), b.offset(), b.tensor(), b.message()),
                            "{path} (step {step})"
                        );
                    }
                    _ => panic!("{path} (step {step}): whole {whole:?}, streamed {streamed:?}"),
                }
            }
        }
    }
}
