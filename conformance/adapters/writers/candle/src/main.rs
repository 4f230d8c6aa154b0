//! Writer adapter for candle, `candle_core::safetensors::save` (see
//! `conformance/WRITER-PROTOCOL.md`).
//!
//! `writer-candle TASK.json OUT.safetensors`. Each tensor is made with
//! `Tensor::from_raw_buffer` on the CPU and the map is saved with
//! `candle_core::safetensors::save(&HashMap<String, Tensor>, OUT)`. candle's `save` takes no
//! metadata, its `DType` has 14 of the 22 dtypes, and a `HashMap` holds one tensor per name:
//! such tasks cannot be expressed (exit 77). An error from `from_raw_buffer` (bytes that do not
//! match the shape) is candle refusing the task. A panic ends the process (exit 101): a crash.
//!
//! Exit codes: 0 wrote, 1 refused, 2 usage or I/O error, 77 unsupported, 101 a panic.

use std::collections::HashMap;
use std::process::ExitCode;

use candle_core::{DType, Device, Tensor};
use stcheck_conformance::writers::adapter::{adapter_main, Answer};

fn dtype(name: &str) -> Option<DType> {
    Some(match name {
        "U8" => DType::U8,
        "U32" => DType::U32,
        "I16" => DType::I16,
        "I32" => DType::I32,
        "I64" => DType::I64,
        "BF16" => DType::BF16,
        "F16" => DType::F16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "F8_E4M3" => DType::F8E4M3,
        "F6_E2M3" => DType::F6E2M3,
        "F6_E3M2" => DType::F6E3M2,
        "F4" => DType::F4,
        "F8_E8M0" => DType::F8E8M0,
        _ => return None,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    adapter_main("writer-candle", &args, |task, tensors, out| {
        if task.metadata.is_some() {
            return Answer::Unsupported(
                "candle_core::safetensors::save takes no metadata".to_owned(),
            );
        }
        let mut map: HashMap<String, Tensor> = HashMap::new();
        for t in tensors {
            let Some(d) = dtype(t.dtype) else {
                return Answer::Unsupported(format!("candle has no dtype {}", t.dtype));
            };
            let Some(shape) = t.shape_usize() else {
                return Answer::Unsupported("a dimension does not fit usize".to_owned());
            };
            if map.contains_key(t.name) {
                return Answer::Unsupported(format!(
                    "a HashMap cannot hold two tensors named {:?}",
                    t.name
                ));
            }
            match Tensor::from_raw_buffer(t.data, d, &shape, &Device::Cpu) {
                Ok(x) => {
                    map.insert(t.name.to_owned(), x);
                }
                Err(e) => {
                    return Answer::Refused(format!("Tensor::from_raw_buffer: {}", first_line(&e)))
                }
            }
        }
        match candle_core::safetensors::save(&map, out) {
            Ok(()) => Answer::Wrote,
            Err(e) => Answer::Refused(first_line(&e)),
        }
    })
}

/// The error's first line: candle appends a backtrace when `RUST_BACKTRACE` is set.
fn first_line(e: &candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}
