//! Writer adapter for the reference implementation, the `safetensors` 0.8.0 crate (see
//! `conformance/WRITER-PROTOCOL.md`).
//!
//! `writer-reference-crate [--api serialize_to_file|serialize] TASK.json OUT.safetensors`
//!
//! - `serialize_to_file` (default): `safetensors::serialize_to_file(tensors, metadata, path)`.
//! - `serialize`: `safetensors::serialize(tensors, metadata)`, the bytes written by the adapter.
//!
//! Each tensor is handed over as a `View` whose `data_len` is the length of the bytes the task
//! gives (which may not match the shape: tasks a writer must refuse). The metadata is a
//! `HashMap<String, String>`, so a task with another metadata value cannot be expressed
//! (exit 77). Nothing catches a panic of the crate: it ends the process (exit 101), which the
//! runner reports as a crash, as it would be for any program using the crate.
//!
//! Exit codes: 0 wrote, 1 refused (the crate's error on stderr), 2 usage or I/O error,
//! 77 the task cannot be expressed, 101 the crate panicked.

use std::borrow::Cow;
use std::collections::HashMap;
use std::process::ExitCode;

use safetensors::tensor::View;
use safetensors::Dtype;
use stcheck_conformance::writers::adapter::{adapter_main, Answer};

struct Raw<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    data: &'a [u8],
}

impl View for &Raw<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut to_file = true;
    if args.first().map(String::as_str) == Some("--api") {
        match args.get(1).map(String::as_str) {
            Some("serialize_to_file") => {}
            Some("serialize") => to_file = false,
            other => {
                eprintln!("writer-reference-crate: unknown --api {other:?}");
                return ExitCode::from(2);
            }
        }
        args.drain(..2);
    }
    adapter_main("writer-reference-crate", &args, |task, tensors, out| {
        let metadata: Option<HashMap<String, String>> = match &task.metadata {
            None => None,
            Some(m) => match m.strings() {
                Ok(v) => Some(
                    v.into_iter()
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .collect(),
                ),
                Err(k) => {
                    return Answer::Unsupported(format!(
                        "metadata {k:?} is not a string; the crate takes HashMap<String, String>"
                    ))
                }
            },
        };
        let mut raws = Vec::with_capacity(tensors.len());
        for t in tensors {
            let Ok(dtype) = serde_json::from_value::<Dtype>(serde_json::Value::from(t.dtype))
            else {
                return Answer::Unsupported(format!("the crate has no dtype {:?}", t.dtype));
            };
            let Some(shape) = t.shape_usize() else {
                return Answer::Unsupported("a dimension does not fit usize".to_owned());
            };
            raws.push((
                t.name.to_owned(),
                Raw {
                    dtype,
                    shape,
                    data: t.data,
                },
            ));
        }
        let views = raws.iter().map(|(n, r)| (n.as_str(), r));
        if to_file {
            match safetensors::serialize_to_file(views, metadata, out) {
                Ok(()) => Answer::Wrote,
                Err(e) => Answer::Refused(e.to_string()),
            }
        } else {
            match safetensors::serialize(views, metadata) {
                Ok(bytes) => match std::fs::write(out, bytes) {
                    Ok(()) => Answer::Wrote,
                    Err(e) => Answer::Error(format!("{}: {e}", out.display())),
                },
                Err(e) => Answer::Refused(e.to_string()),
            }
        }
    })
}
