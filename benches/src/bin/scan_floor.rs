//! The default deep scan (read mode, 2 threads) against its floor, the copy out of the page
//! cache (`pread` alone on 2 threads, [`stcheck_benches::pread_threads`]), on one file already
//! in the page cache; with `--mmap`'s deep scan beside them. The same pair as the criterion
//! group's `scan/read-deep-2threads` and `scan/pread-only-2threads`, but alternated run by run
//! within each round, so that a shared machine's load weighs on both alike, and timed in wall
//! and CPU time (user + system of the process, from `/proc/self/stat`; Linux only): with more
//! runnable threads than cores, the CPU time is the steadier figure.
//!
//! Prints, per subject, the median time of one run over the rounds (and the fastest and slowest), its ratio to
//! the floor (floor / subject: 1.00 means as fast as the copy alone), and the load average
//! before and after.

use std::fs::File;
use std::hint::black_box;
use std::time::Instant;

use stcheck::{Config, ReadMode};

/// What `scan_floor --help` prints.
const USAGE: &str = "usage: scan_floor [--] FILE [ROUNDS]
Alternates, ROUNDS times (default 9, each sample 4 runs): pread of FILE on 2 threads (the
copy floor), the deep scan in the default read mode on 2 threads, and the deep scan of the
mapped file; prints the median wall and CPU milliseconds of one run of each and its ratio to
the floor. FILE must be a valid safetensors file; it is read once first, to be in the page
cache (benches/scan_process.py makes a 1 GiB F32 one in target/scan-process/).
";

/// Seconds of CPU time (user + system) this process has used, all its threads counted; `None`
/// where `/proc/self/stat` is not there.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // The kernel reports them in USER_HZ, 100 on every Linux architecture.
    Some(ticks as f64 / 100.0)
}

/// Runs of a subject per sample: the CPU time is counted in ticks of 10 ms, a few runs make
/// a tick a small part of a sample.
const PASSES: usize = 4;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args = stcheck_benches::positional_args(std::env::args().skip(1), USAGE, 2);
    let Some(path) = args.first() else {
        eprint!("{USAGE}");
        std::process::exit(2);
    };
    let rounds: usize = match args.get(1).map(|r| r.parse()) {
        None => 9,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprint!("ROUNDS must be a positive number\n{USAGE}");
            std::process::exit(2);
        }
    };
    let file = File::open(path).unwrap_or_else(|e| {
        eprintln!("scan_floor: {path}: {e}");
        std::process::exit(2);
    });
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let deep = Config::default().deep(true).threads(2);
    let check = |mode: ReadMode| {
        stcheck::check_file(&file, &deep, mode, |checked| {
            let report = checked.deep.expect("the file scans clean");
            report.bytes_scanned
        })
        .expect("read the file")
    };
    let subjects: [(&str, &dyn Fn() -> u64); 3] = [
        ("pread only, 2 threads (the floor)", &|| {
            stcheck_benches::pread_threads(&file, len, 2)
        }),
        ("deep scan, read mode, 2 threads", &|| check(ReadMode::Read)),
        ("deep scan, --mmap, 2 threads", &|| check(ReadMode::Mmap)),
    ];
    // Warm the page cache (and check the file) before the first round.
    black_box(check(ReadMode::Read));
    let before = load();
    let mut wall = vec![Vec::new(); subjects.len()];
    let mut cpu = vec![Vec::new(); subjects.len()];
    for _ in 0..rounds {
        for (k, (_, run)) in subjects.iter().enumerate() {
            let c = cpu_seconds();
            let t = Instant::now();
            for _ in 0..PASSES {
                black_box(run());
            }
            wall[k].push(t.elapsed().as_secs_f64() * 1e3 / PASSES as f64);
            if let (Some(a), Some(b)) = (c, cpu_seconds()) {
                cpu[k].push((b - a) * 1e3 / PASSES as f64);
            }
        }
    }
    println!(
        "{} MiB, {rounds} rounds alternated; load average before {before}, after {}",
        len >> 20,
        load()
    );
    println!(
        "| subject | wall ms (fastest-slowest) | floor / subject | CPU ms | floor / subject |"
    );
    println!("|---|---|---|---|---|");
    let (floor_wall, floor_cpu) = (median(&wall[0]), cpu[0].first().map(|_| median(&cpu[0])));
    for (k, (name, _)) in subjects.iter().enumerate() {
        let w = median(&wall[k]);
        let lo = wall[k].iter().copied().fold(f64::INFINITY, f64::min);
        let hi = wall[k].iter().copied().fold(0.0, f64::max);
        let (c, cr) = match floor_cpu {
            Some(f) => {
                let c = median(&cpu[k]);
                (format!("{c:.0}"), format!("{:.2}", f / c))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {name} | {w:.1} ({lo:.1}-{hi:.1}) | {:.2} | {c} | {cr} |",
            floor_wall / w
        );
    }
}
