//! The library's progress hook (`stcheck::Progress`): the counts add up to the bytes read, come
//! in several steps for a file of several steps, and the result is the same as without a hook,
//! for every source (mapped, read, streamed, a reader) and every split of the deep scan.

use std::sync::Mutex;

use stcheck::internal::PROGRESS_STEP;
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Checked, Checker, Config, Dtype, ReadMode};

/// A file of a little more than one progress step: F32 with a NaN near the end, then a BOOL
/// tensor whose last byte is `last_bool` (2 makes the file invalid under the deep scan).
fn file(last_bool: u8) -> Vec<u8> {
    let n = (PROGRESS_STEP + PROGRESS_STEP / 8) / 4;
    let mut f32s = vec![0u8; n * 4];
    f32s[n * 4 - 8..n * 4 - 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let mut bools = vec![1u8; 4096];
    bools[4095] = last_bool;
    serialize(
        &[
            TensorSpec::new("w", Dtype::F32, &[n as u64], &f32s),
            TensorSpec::new("b", Dtype::BOOL, &[4096], &bools),
        ],
        &[],
    )
    .expect("serialize")
}

/// What must not change with a hook.
fn outcome(c: &Checked<'_>) -> String {
    format!(
        "{:?} {:?} {:?} {}",
        c.verdict, c.deep, c.sha256, c.bytes_read
    )
}

/// A hook that records every call.
struct Calls(Mutex<Vec<u64>>);

impl Calls {
    fn new() -> Self {
        Calls(Mutex::new(Vec::new()))
    }
    fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl stcheck::Progress for Calls {
    fn advance(&self, bytes: u64) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(bytes);
    }
}

/// Header only; the deep scan on one, two and three threads, with and without the hash.
fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for sha in [false, true] {
        for threads in [1, 2, 3] {
            out.push(
                Config::default()
                    .deep(true)
                    .sha256(sha)
                    .threads(threads)
                    .min_bytes_per_thread(1 << 20),
            );
        }
    }
    out.push(Config::default());
    out
}

#[test]
fn mapped_slices_report_every_byte_once_and_change_nothing() {
    for bytes in [file(1), file(2)] {
        for config in configs() {
            let calls = Calls::new();
            let with = Checker::check_slice_with(&config, &bytes, &calls);
            let without = Checker::check_slice(&config, &bytes);
            assert_eq!(outcome(&with), outcome(&without), "{config:?}");
            let told = calls.take();
            assert_eq!(told.iter().sum::<u64>(), with.bytes_read, "{config:?}");
            assert_eq!(with.bytes_read, bytes.len() as u64);
            if config.deep {
                // The header, then the data in steps.
                assert!(told.len() >= 3, "{config:?}: {told:?}");
            }
        }
    }
}

#[test]
fn files_and_readers_in_every_mode() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("progress-hook");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (i, bytes) in [file(1), file(2)].into_iter().enumerate() {
        let path = dir.join(format!("f{i}.safetensors"));
        std::fs::write(&path, &bytes).expect("write");
        // A file read or streamed is scanned on one thread: the first two configurations and
        // the header-only one cover them.
        let configs = configs();
        for config in [&configs[0], &configs[3], &configs[6]] {
            for mode in [ReadMode::Mmap, ReadMode::Read, ReadMode::Stream] {
                let open = || std::fs::File::open(&path).expect("open");
                let calls = Calls::new();
                let with = stcheck::check_file_with(&open(), config, mode, &calls, |c| {
                    (outcome(&c), c.bytes_read)
                })
                .expect("readable");
                let without =
                    stcheck::check_file(&open(), config, mode, |c| outcome(&c)).expect("read");
                assert_eq!(with.0, without, "{mode:?} {config:?}");
                assert_eq!(
                    calls.take().iter().sum::<u64>(),
                    with.1,
                    "{mode:?} {config:?}"
                );
            }
            let calls = Calls::new();
            let with = stcheck::check_reader_with(&bytes[..], config, &calls).expect("read");
            let without = stcheck::check_reader(&bytes[..], config).expect("read");
            assert_eq!(outcome(&with), outcome(&without));
            let told = calls.take();
            assert_eq!(told.iter().sum::<u64>(), with.bytes_read);
            if config.deep {
                assert!(
                    told.len() >= 3,
                    "a stream is reported buffer by buffer: {told:?}"
                );
            }
        }
    }
}
