//! `read_head` (the length field and header of an open file, read with as few system calls as
//! it takes) and `FileStamp` / `check_opened` (a check that starts from the stamp taken when
//! the file was opened, so a change made after the open is caught).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use stcheck::write::{serialize, TensorSpec};
use stcheck::{Checker, Config, Dtype, FileStamp, ReadErrorKind, ReadMode};

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
