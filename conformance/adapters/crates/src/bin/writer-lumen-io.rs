//! Writer adapter for `lumen-io` 0.6.1, `lumen_io::safetensors::save_file` (see
//! `conformance/WRITER-PROTOCOL.md`).
//!
//! `writer-lumen-io TASK.json OUT.safetensors`. Each tensor is made with `Tensor::from_vec` of
//! its elements (decoded little-endian) and the shape, and the map is saved with its metadata.
//! What cannot be expressed (exit 77): a dtype lumen lacks (it has BOOL, U8, I32, U32, BF16,
//! F32, F64), a BOOL byte other than 0 or 1 (lumen holds booleans), bytes that are not a whole
//! number of elements, two tensors of one name (a HashMap), a metadata value that is not a
//! string. An error from `from_vec` or `save_file` is lumen refusing the task (exit 1); a panic
//! ends the process (exit 101): a crash.

use std::collections::HashMap;
use std::process::ExitCode;

use lumen_core::{bf16, DynTensor, Tensor};
use stcheck_conformance::writers::adapter::{adapter_main, Answer};

fn elements<const N: usize, T>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Option<Vec<T>> {
    data.len().is_multiple_of(N).then(|| {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().expect("N bytes")))
            .collect()
    })
}

fn tensor(dtype: &str, data: &[u8], shape: Vec<usize>) -> Result<Option<DynTensor>, String> {
    let e = |x: lumen_core::Error| format!("Tensor::from_vec: {x}");
    Ok(Some(match dtype {
        "BOOL" if data.iter().all(|b| *b <= 1) => DynTensor::Bool(
            Tensor::from_vec(data.iter().map(|b| *b == 1).collect::<Vec<_>>(), shape).map_err(e)?,
        ),
        "U8" => DynTensor::U8(Tensor::from_vec(data.to_vec(), shape).map_err(e)?),
        "I32" => match elements(data, i32::from_le_bytes) {
            Some(v) => DynTensor::I32(Tensor::from_vec(v, shape).map_err(e)?),
            None => return Ok(None),
        },
        "U32" => match elements(data, u32::from_le_bytes) {
            Some(v) => DynTensor::U32(Tensor::from_vec(v, shape).map_err(e)?),
            None => return Ok(None),
        },
        "BF16" => match elements(data, bf16::from_le_bytes) {
            Some(v) => DynTensor::Bf16(Tensor::from_vec(v, shape).map_err(e)?),
            None => return Ok(None),
        },
        "F32" => match elements(data, f32::from_le_bytes) {
            Some(v) => DynTensor::F32(Tensor::from_vec(v, shape).map_err(e)?),
            None => return Ok(None),
        },
        "F64" => match elements(data, f64::from_le_bytes) {
            Some(v) => DynTensor::F64(Tensor::from_vec(v, shape).map_err(e)?),
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    adapter_main("writer-lumen-io", &args, |task, tensors, out| {
        let metadata = match &task.metadata {
            None => None,
            Some(m) => match m.strings() {
                Ok(kv) => Some(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .collect::<HashMap<_, _>>(),
                ),
                Err(k) => {
                    return Answer::Unsupported(format!("metadata value of {k:?} is not a string"))
                }
            },
        };
        let mut map = HashMap::new();
        for t in tensors {
            let Some(shape) = t.shape_usize() else {
                return Answer::Unsupported("a dimension does not fit usize".to_owned());
            };
            if map.contains_key(t.name) {
                return Answer::Unsupported(format!(
                    "a HashMap cannot hold two tensors named {:?}",
                    t.name
                ));
            }
            if !["BOOL", "U8", "I32", "U32", "BF16", "F32", "F64"].contains(&t.dtype) {
                return Answer::Unsupported(format!("lumen has no dtype {}", t.dtype));
            }
            match tensor(t.dtype, t.data, shape) {
                Ok(Some(x)) => {
                    map.insert(t.name.to_owned(), x);
                }
                Ok(None) => {
                    return Answer::Unsupported(format!(
                        "lumen cannot hold {} bytes of {} as its elements",
                        t.data.len(),
                        t.dtype
                    ))
                }
                Err(why) => return Answer::Refused(why),
            }
        }
        match lumen_io::safetensors::save_file(&map, metadata.as_ref(), out) {
            Ok(()) => Answer::Wrote,
            Err(e) => Answer::Refused(e.to_string()),
        }
    })
}
