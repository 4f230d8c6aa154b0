//! The frame of a writer adapter written in Rust: argument handling, reading the prepared
//! task, and the protocol's exit codes. An adapter supplies one function that hands the task
//! to its writer.

use std::path::Path;
use std::process::ExitCode;

use super::prepared::{PreparedTask, Tensor};

/// What the writer did with the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// It wrote the output file: exit 0.
    Wrote,
    /// It refused, for this reason: exit 1.
    Refused(String),
    /// Its API cannot express the task, for this reason: exit 77.
    Unsupported(String),
    /// The adapter failed (it could not write the bytes it was given, say): exit 2, which the
    /// runner counts as a crash.
    Error(String),
}

/// Run an adapter whose arguments (after its own options) are `TASK.json OUT.safetensors`.
/// `write` gets the task, its tensors and the output path. Usage and I/O errors before the
/// writer runs exit 2.
pub fn adapter_main(
    name: &str,
    args: &[String],
    write: impl FnOnce(&PreparedTask, &[Tensor<'_>], &Path) -> Answer,
) -> ExitCode {
    let [task_path, out] = args else {
        eprintln!("usage: {name} TASK.json OUT.safetensors");
        return ExitCode::from(2);
    };
    let loaded = PreparedTask::load(Path::new(task_path))
        .and_then(|task| task.read_data().map(|data| (task, data)));
    let (task, data) = match loaded {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    let tensors = match task.tensors(&data) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    match write(&task, &tensors, Path::new(out)) {
        Answer::Wrote => ExitCode::SUCCESS,
        Answer::Refused(why) => {
            eprintln!("{why}");
            ExitCode::from(1)
        }
        Answer::Unsupported(why) => {
            eprintln!("unsupported: {why}");
            ExitCode::from(77)
        }
        Answer::Error(why) => {
            eprintln!("{name}: {why}");
            ExitCode::from(2)
        }
    }
}
