//! Writer adapter for stcheck's canonical writer, `stcheck::write::serialize` (see
//! `conformance/WRITER-PROTOCOL.md`).
//!
//! `writer-stcheck TASK.json OUT.safetensors`. The writer takes metadata as strings, so a task
//! with another metadata value cannot be given to it (exit 77).
//!
//! Exit codes: 0 wrote, 1 refused (the writer's error on stderr), 2 usage or I/O error,
//! 77 the task cannot be expressed.

use std::process::ExitCode;

use stcheck_conformance::writers::adapter::{adapter_main, Answer};
use stcheck_conformance::writers::stcheck_api::{write_canonical, WriteRefusal, WriteTensor};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    adapter_main("writer-stcheck", &args, |task, tensors, out| {
        let metadata = match &task.metadata {
            None => Vec::new(),
            Some(m) => match m.strings() {
                Ok(v) => v,
                Err(k) => {
                    return Answer::Unsupported(format!(
                        "metadata {k:?} is not a string; the writer takes (&str, &str) pairs"
                    ))
                }
            },
        };
        let specs: Vec<WriteTensor<'_>> = tensors
            .iter()
            .map(|t| WriteTensor {
                name: t.name,
                dtype: t.dtype,
                shape: &t.shape,
                data: t.data,
            })
            .collect();
        match write_canonical(&specs, &metadata) {
            Ok(bytes) => match std::fs::write(out, bytes) {
                Ok(()) => Answer::Wrote,
                Err(e) => Answer::Error(format!("{}: {e}", out.display())),
            },
            Err(WriteRefusal::Refused(why)) => Answer::Refused(why),
            Err(WriteRefusal::Unsupported(why)) => Answer::Unsupported(why),
        }
    })
}
