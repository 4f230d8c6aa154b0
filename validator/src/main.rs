//! `stcheck FILE...`: validate safetensors files under the strict profile.
//!
//! Exit codes: 0 every file is valid, 1 at least one is invalid, 2 a usage or I/O error.

use std::fs::File;
use std::io::{self, Write};
use std::process::ExitCode;

use stcheck::{Config, Report};

const USAGE: &str = "usage: stcheck FILE...

Validate safetensors files under the strict profile (SPEC.md).

Exit codes:
  0  every file is valid
  1  at least one file is invalid
  2  usage or I/O error (missing file, permission denied, not a regular file)";

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() || paths.iter().any(|p| p == "-h" || p == "--help") {
        let wanted = !paths.is_empty();
        if wanted {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let config = Config::default();
    let mut invalid = false;
    let mut io_error = false;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for path in &paths {
        let line = match check(path, &config) {
            Ok(Ok(summary)) => format!("{path}: ok ({summary})"),
            Ok(Err(e)) => {
                invalid = true;
                format!("{path}: {e}")
            }
            Err(e) => {
                io_error = true;
                eprintln!("stcheck: {path}: {e}");
                continue;
            }
        };
        if writeln!(out, "{line}").is_err() {
            // A closed pipe ends the run quietly.
            break;
        }
    }
    if io_error {
        ExitCode::from(2)
    } else if invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn check(path: &str, config: &Config) -> io::Result<Result<String, stcheck::Error>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    // SAFETY: the map is read-only and lives only for this call. If another process truncates
    // or rewrites the file while it is mapped, reads may see the new bytes or fault (SIGBUS);
    // the validator only reads, so no data is lost. The full CLI offers --no-mmap for files
    // others can still write.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(stcheck::validate(&map, config).map(|r| summary(&r)))
}

fn summary(r: &Report<'_>) -> String {
    let by: Vec<String> = r
        .totals_by_dtype()
        .iter()
        .map(|t| format!("{} {}", t.dtype, t.parameters))
        .collect();
    let mut s = format!("{} tensors, {} parameters", r.len(), r.parameters());
    if !by.is_empty() {
        s.push_str("; ");
        s.push_str(&by.join(", "));
    }
    for w in r.warnings() {
        s.push_str(&format!("\n  warning {w}"));
    }
    s
}
