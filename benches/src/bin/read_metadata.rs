//! The baseline of `benches/startup.py`: the smallest whole program that reads a safetensors
//! header with the reference crate, as a lenient tool would. It reads the length field and
//! the header of each file named (not the data), parses them with
//! `safetensors::SafeTensors::read_metadata`, and prints one line per file: the tensor count,
//! or the reference's error. Exit status 1 if any file was rejected.

use std::fs::File;
use std::io::{Read, Write};
use std::process::ExitCode;

/// The reference's own header limit.
const MAX_HEADER: u64 = 100_000_000;

fn header(path: &str) -> Result<usize, String> {
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(|e| e.to_string())?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER {
        return Err(format!("header of {n} bytes is too large"));
    }
    let mut buf = len.to_vec();
    file.take(n)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    let (_, metadata) =
        safetensors::SafeTensors::read_metadata(&buf).map_err(|e| format!("{e:?}"))?;
    Ok(metadata.tensors().len())
}

/// What `read_metadata --help` prints.
const USAGE: &str = "usage: read_metadata [--] FILE...
Reads each FILE's header with the reference crate and prints its tensor count or its error.
";

fn main() -> ExitCode {
    let paths = stcheck_benches::positional_args(std::env::args().skip(1), USAGE, usize::MAX);
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for path in paths {
        let line = match header(&path) {
            Ok(n) => format!("{path}: {n} tensors"),
            Err(e) => {
                failed = true;
                format!("{path}: {e}")
            }
        };
        if writeln!(out, "{line}").is_err() {
            return ExitCode::from(2);
        }
    }
    ExitCode::from(u8::from(failed))
}
