//! `read_head` (the length field and header of an open file, read with as few system calls as
//! it takes) and `FileStamp` / `check_opened` (a check that starts from the stamp taken when
//! the file was opened, so a change made after the open is caught), for files alone and for
//! the shards of a sharded set.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use stcheck::index::{check_index, ShardSource};
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Checked, Checker, Config, Dtype, FileStamp, ReadError, ReadErrorKind, ReadMode};

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("read-head");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

/// A valid file of `tensors` F32 scalars.
fn file_of(tensors: usize) -> Vec<u8> {
    let names: Vec<String> = (0..tensors).map(|i| format!("layer.{i}.weight")).collect();
    let data = [0u8; 4];
    let specs: Vec<TensorSpec<'_>> = names
        .iter()
        .map(|n| TensorSpec::new(n, Dtype::F32, &[], &data))
        .collect();
    serialize(&specs, &[]).expect("serialize")
}

fn header_end(bytes: &[u8]) -> usize {
    8 + usize::try_from(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
        .expect("header length fits")
}

#[test]
fn read_head_returns_exactly_the_length_field_and_header() {
    // One tensor (the header well inside the first read) and 2,000 (past it: more reads).
    for tensors in [1, 2_000] {
        let bytes = file_of(tensors);
        let path = scratch(&format!("valid-{tensors}.safetensors"), &bytes);
        let file = File::open(&path).expect("open scratch file");
        let config = Config::default();
        let mut checker = Checker::new(&config).with_len(bytes.len() as u64);
        let head = stcheck::read_head(&file, &mut checker, bytes.len() as u64).expect("ok");
        assert_eq!(head, &bytes[..header_end(&bytes)], "{tensors} tensors");
        let checked = checker.finish();
        assert!(
            checked.is_valid(),
            "{tensors} tensors: {:?}",
            checked.verdict
        );
        assert_eq!(checked.verdict.expect("ok").len(), tensors);
    }
}

#[test]
fn read_head_of_a_file_that_is_not_safetensors_gives_the_sniffed_verdict() {
    let mut bytes = b"PK\x03\x04".to_vec();
    bytes.resize(4096, b'z');
    let path = scratch("zip.safetensors", &bytes);
    let file = File::open(&path).expect("open scratch file");
    let config = Config::default();
    let mut checker = Checker::new(&config).with_len(bytes.len() as u64);
    let head = stcheck::read_head(&file, &mut checker, bytes.len() as u64).expect("ok");
    assert!(bytes.starts_with(&head));
    let e = checker.finish().verdict.expect_err("an error");
    assert_eq!(e.rule().id(), "FRAME-NOT-SAFETENSORS");
    // The same verdict as the whole file in memory.
    let whole = stcheck::validate(&bytes, &config).expect_err("an error");
    assert_eq!(e.rule(), whole.rule());
    assert_eq!(e.offset(), whole.offset());
}

#[test]
fn read_head_of_a_file_shorter_than_its_stamp_is_a_change() {
    let bytes = file_of(3);
    let path = scratch("shrunk.safetensors", &bytes);
    let file = File::open(&path).expect("open scratch file");
    let len = bytes.len() as u64;
    // Truncated inside the header after its length was taken.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("ok")
        .set_len(20)
        .expect("ok");
    let config = Config::default();
    let mut checker = Checker::new(&config).with_len(len);
    let e = stcheck::read_head(&file, &mut checker, len).expect_err("an error");
    assert_eq!(e.kind(), ReadErrorKind::Changed, "{e}");
}

#[test]
fn a_check_from_the_stamp_taken_at_open_catches_a_rewrite_made_after_the_open() {
    let bytes = file_of(2);
    let path = scratch("rewritten.safetensors", &bytes);
    let file = File::open(&path).expect("open scratch file");
    let opened = FileStamp::of(&file).expect("ok");
    assert_eq!(opened.len(), bytes.len() as u64);
    let modes = [ReadMode::Read, ReadMode::Stream, ReadMode::Mmap];
    let check = |mode| {
        let config = Config::default();
        stcheck::check_opened(&file, &opened, &config, mode, &|_: u64| {}, |c| {
            c.is_valid()
        })
    };
    // Unchanged: the check passes from that stamp, in every mode.
    for mode in modes {
        assert!(check(mode).expect("unchanged file checks"), "{mode:?}");
    }
    // The same bytes written again in place, with a later modification time: same length,
    // same content, but not the file that was stamped.
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("ok");
    w.write_all(&bytes).expect("ok");
    w.set_modified(SystemTime::now() + Duration::from_secs(60))
        .expect("ok");
    drop(w);
    assert!(opened.unchanged(&file).is_err());
    for mode in modes {
        let e = check(mode).expect_err("a rewritten file is not checked");
        assert_eq!(e.kind(), ReadErrorKind::Changed, "{mode:?}: {e}");
    }
    // A stamp taken now is the file's: the check passes again.
    let now = FileStamp::of(&file).expect("ok");
    assert!(now.unchanged(&file).is_ok());
    let meta = file.metadata().expect("ok");
    assert_eq!(FileStamp::from_metadata(&meta), now);
}

/// Shards in a directory, read as the gate reads them (opened, stamped, checked from the
/// stamp), with a fault injected into one of them: after its stamp is taken and before it is
/// read, the shard is set to `len` bytes (when given), as another process truncating or
/// extending it during the check would.
struct ChangingShards {
    dir: PathBuf,
    changed: &'static str,
    len: Option<u64>,
    mode: ReadMode,
}

impl ShardSource for ChangingShards {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        Ok(vec!["a.safetensors".to_owned(), "b.safetensors".to_owned()])
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        let path = self.dir.join(name);
        let file = File::open(&path)?;
        let opened = FileStamp::of(&file)?;
        if let Some(len) = self.len.filter(|_| name == self.changed) {
            let w = std::fs::OpenOptions::new().write(true).open(&path)?;
            w.set_len(len)?;
        }
        stcheck::check_opened(&file, &opened, config, self.mode, &|_: u64| {}, f)
    }
}

#[test]
fn a_shard_that_changes_during_a_deep_check_leaves_the_set_not_checked() {
    let data = [0u8; 4];
    let shard_of = |name: &str| {
        serialize(&[TensorSpec::new(name, Dtype::F32, &[], &data)], &[]).expect("serialize")
    };
    let (a, shard) = (shard_of("layer.0.weight"), shard_of("layer.1.weight"));
    let index =
        br#"{"weight_map":{"layer.0.weight":"a.safetensors","layer.1.weight":"b.safetensors"}}"#;
    let config = Config::default().deep(true);
    let truncated = Some(shard.len() as u64 - 3);
    let extended = Some(shard.len() as u64 + 4096);
    for mode in [ReadMode::Read, ReadMode::Stream] {
        for (what, len) in [
            ("unchanged", None),
            ("truncated", truncated),
            ("extended", extended),
        ] {
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("changing-shard-{what}-{}", mode.as_str()));
            std::fs::create_dir_all(&dir).expect("scratch dir");
            std::fs::write(dir.join("a.safetensors"), &a).expect("write shard");
            std::fs::write(dir.join("b.safetensors"), &shard).expect("write shard");
            let source = ChangingShards {
                dir,
                changed: "b.safetensors",
                len,
                mode,
            };
            let result = check_index(index, &source, &config);
            if what == "unchanged" {
                // The same source without the fault: the set has its verdict.
                let report = result.expect("a set whose shards did not change is checked");
                assert!(report.is_valid(), "{mode:?}: {:?}", report.errors());
                continue;
            }
            // No verdict, as for the same file alone: never INDEX-SHARD-MISSING.
            let e = result.expect_err("a set with a changed shard has no verdict");
            assert_eq!(e.kind(), ReadErrorKind::Changed, "{what} {mode:?}: {e}");
            assert!(
                e.to_string().contains("b.safetensors"),
                "{what} {mode:?}: {e}"
            );
            // And the same shard alone, changed the same way, is not checked either.
            std::fs::write(source.dir.join("b.safetensors"), &shard).expect("rewrite shard");
            let alone = source.check("b.safetensors", &config, &mut |_| {});
            let e = alone.expect_err("the changed file alone is not checked");
            assert_eq!(
                e.kind(),
                ReadErrorKind::Changed,
                "{what} {mode:?} alone: {e}"
            );
        }
    }
}

#[test]
fn a_header_past_the_first_read_is_read_whole_and_a_cut_inside_it_is_a_change() {
    // 2,000 tensors: a header of about 90 KB, read past the first 16 KiB straight into the
    // checker's buffer.
    let bytes = file_of(2_000);
    assert!(header_end(&bytes) > 64 * 1024);
    let path = scratch("large-header.safetensors", &bytes);
    let file = File::open(&path).expect("open scratch file");
    let config = Config::default();
    let whole = stcheck::validate(&bytes, &config).expect("valid");
    // Read, then a stream read of the same open file: the header read leaves the file's
    // position where it was, so the stream starts at the file's start.
    for mode in [ReadMode::Read, ReadMode::Stream, ReadMode::Read] {
        let n = stcheck::check_file(&file, &config, mode, |c| c.verdict.map(|r| r.len()))
            .expect("checked")
            .expect("valid");
        assert_eq!(n, whole.len(), "{mode:?}");
    }
    // Cut inside the header after the stamp was taken: not checked.
    let opened = FileStamp::of(&file).expect("ok");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("ok")
        .set_len(40_000)
        .expect("ok");
    let e = stcheck::check_opened(&file, &opened, &config, ReadMode::Read, &|_: u64| {}, |c| {
        c.is_valid()
    })
    .expect_err("a cut header is not checked");
    assert_eq!(e.kind(), ReadErrorKind::Changed, "{e}");
}

#[test]
fn a_streamed_header_is_read_once_into_the_memory_the_report_keeps() {
    // 10,000 tensors: a header of about 750 KB, under the first reservation of a stream of
    // unknown length, so the report's text is the very buffer the reads filled.
    let bytes = file_of(10_000);
    let end = header_end(&bytes);
    assert!(end > 256 * 1024);
    let mut reader = stcheck_testkit::Noting::new(&bytes, 0);
    let checked = stcheck::check_reader(&mut reader, &Config::default()).expect("read");
    let report = checked.verdict.expect("valid");
    // Every byte read once, in order.
    let mut at = 0;
    for &(pos, _, k) in &reader.reads {
        assert_eq!(pos, at, "reads: {:?}", reader.reads);
        at += k;
    }
    assert_eq!(at, bytes.len());
    // Each header byte was written where the report holds it: not into a buffer of the
    // source's and then copied.
    reader.assert_read_into(8..end, report.header_text().as_ptr() as usize);
}
