//! Header validation: ours against the reference crate and against the JSON parse floor, on
//! the same bytes, in one run.
//!
//! For each case, `header/ours/<case>` is `stcheck::validate` on the whole file (framing,
//! UTF-8, JSON, schema, sizes, layout, data length: the data region is a few bytes per
//! tensor, see `stcheck_benches`), `header/reference/<case>` is
//! `safetensors::SafeTensors::read_metadata` on the same file, and `header/floor/<case>` is
//! `serde_json::from_slice::<IgnoredAny>` on its header bytes. Throughput is the header length.
//!
//! Run: `cargo bench -p stcheck-benches --bench header -- --warm-up-time 1` (about 1.5 minutes
//! on 2 cores). Under `cargo test --benches` each benchmark runs once, on a smaller near-limit
//! input.

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use stcheck_benches::{with_header_len, with_tensors, Input};

/// Criterion's rule: without `--bench` (as under `cargo test --benches`), or with `--test`,
/// each benchmark runs once as a test.
fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench")
}

/// The near-limit case: the largest multiple of 8 within the default header limit (a 1 MB
/// header in test mode).
fn near_limit() -> Input {
    let len = if test_mode() {
        1 << 20
    } else {
        let limit = usize::try_from(stcheck::limits::DEFAULT_MAX_HEADER_SIZE).unwrap_or(usize::MAX);
        limit / 8 * 8
    };
    with_header_len(len)
}

/// Every benchmarked function must accept the input; checked once, outside the timing.
fn check(case: &str, input: &Input) {
    let config = stcheck::Config::default();
    let report = stcheck::validate(&input.file, &config)
        .unwrap_or_else(|e| panic!("{case}: stcheck rejects the input: {e}"));
    assert_eq!(report.len(), input.tensors, "{case}");
    assert!(
        report.warnings().is_empty(),
        "{case}: {:?}",
        report.warnings()
    );
    let (_, metadata) = safetensors::SafeTensors::read_metadata(&input.file)
        .unwrap_or_else(|e| panic!("{case}: the reference rejects the input: {e:?}"));
    assert_eq!(metadata.tensors().len(), input.tensors, "{case}");
    serde_json::from_slice::<serde::de::IgnoredAny>(input.header())
        .unwrap_or_else(|e| panic!("{case}: not JSON: {e}"));
}

/// A builder of one case's input, run once outside the timing.
type Build = fn() -> Input;

fn header(c: &mut Criterion) {
    let config = stcheck::Config::default();
    let mut group = c.benchmark_group("header");
    let cases: [(&str, Build); 4] = [
        ("1", || with_tensors(1)),
        ("1k", || with_tensors(1_000)),
        ("100k", || with_tensors(100_000)),
        ("near-limit", near_limit),
    ];
    for (case, build) in cases {
        let input = build();
        check(case, &input);
        eprintln!(
            "header/{case}: {} tensors, header {} bytes, data {} bytes",
            input.tensors,
            input.header_len(),
            input.data_len()
        );
        group.throughput(Throughput::Bytes(input.header_len() as u64));
        match case {
            "1" | "1k" => {
                group
                    .sampling_mode(SamplingMode::Auto)
                    .sample_size(50)
                    .warm_up_time(Duration::from_millis(500))
                    .measurement_time(Duration::from_secs(2));
            }
            "100k" => {
                group
                    .sampling_mode(SamplingMode::Flat)
                    .sample_size(10)
                    .warm_up_time(Duration::from_secs(1))
                    .measurement_time(Duration::from_secs(5));
            }
            _ => {
                group
                    .sampling_mode(SamplingMode::Flat)
                    .sample_size(10)
                    .warm_up_time(Duration::from_secs(1))
                    .measurement_time(Duration::from_secs(10));
            }
        }
        let file = &input.file[..];
        let header = input.header();
        group.bench_with_input(BenchmarkId::new("ours", case), file, |b, file| {
            b.iter(|| stcheck::validate(black_box(file), &config))
        });
        group.bench_with_input(BenchmarkId::new("reference", case), file, |b, file| {
            b.iter(|| safetensors::SafeTensors::read_metadata(black_box(file)))
        });
        group.bench_with_input(BenchmarkId::new("floor", case), header, |b, header| {
            b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(header)))
        });
    }
    group.finish();
}

criterion_group!(benches, header);
criterion_main!(benches);
