//! Turning a recipe into the bytes of its file. Deterministic: no clock, no randomness, no
//! hash-map iteration order.

use std::borrow::Cow;
use std::collections::HashMap;

use super::recipe::{DataPiece, HeaderPiece, Pad, Recipe, RecipeError, ShardFile, Writer};

fn fail<T>(r: &Recipe, msg: impl std::fmt::Display) -> Result<T, RecipeError> {
    Err(RecipeError(format!("{} [{}]: {msg}", r.origin, r.id)))
}

fn push_data(out: &mut Vec<u8>, pieces: &[DataPiece]) {
    for p in pieces {
        match p {
            DataPiece::Bytes(b) => out.extend_from_slice(b),
            DataPiece::Repeat(pattern, count) => {
                for _ in 0..*count {
                    out.extend_from_slice(pattern);
                }
            }
        }
    }
}

fn data_bytes(pieces: &[DataPiece]) -> Vec<u8> {
    let mut out = Vec::new();
    push_data(&mut out, pieces);
    out
}

/// The header bytes of a text recipe: pieces, splices, padding.
pub fn header_bytes(r: &Recipe) -> Result<Vec<u8>, RecipeError> {
    let mut text = String::new();
    for piece in &r.header {
        match piece {
            HeaderPiece::Text(t) => text.push_str(t),
            HeaderPiece::Repeat(n, t) => {
                for _ in 0..*n {
                    text.push_str(t);
                }
            }
            HeaderPiece::Tensors { count, reverse } => {
                use std::fmt::Write as _;
                for k in 0..*count {
                    let i = if *reverse { count - 1 - k } else { k };
                    if k > 0 {
                        text.push(',');
                    }
                    let _ = write!(
                        text,
                        "\"t{i}\":{{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[{i},{}]}}",
                        i + 1
                    );
                }
            }
        }
    }
    if let Some(enc) = r.encoding {
        // Padding in the same encoding: spaces of `enc.unit()` bytes each.
        let mut bytes = enc.encode(&text, r.bom);
        let Pad::Multiple(m) = r.pad else {
            return fail(r, "encoding: takes pad: N only");
        };
        while !(bytes.len() as u64).is_multiple_of(m) {
            let before = bytes.len();
            bytes.extend(enc.encode(" ", false));
            if bytes.len() - before != enc.unit() {
                return fail(r, "padding unit");
            }
        }
        return Ok(bytes);
    }
    let mut bytes = text.into_bytes();
    for (marker, replacement) in &r.splices {
        let m = marker.as_bytes();
        if m.is_empty() {
            return fail(r, "empty splice marker");
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        let mut found = false;
        while i < bytes.len() {
            if bytes[i..].starts_with(m) {
                out.extend_from_slice(replacement);
                i += m.len();
                found = true;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        if !found {
            return fail(r, format!("splice marker {marker:?} not in the header"));
        }
        bytes = out;
    }
    let target = match r.pad {
        Pad::Multiple(m) => (bytes.len() as u64).next_multiple_of(m),
        Pad::To(n) => n,
    };
    let Ok(target) = usize::try_from(target) else {
        return fail(r, "padding target too large");
    };
    if target < bytes.len() {
        return fail(
            r,
            format!(
                "header is {} bytes, longer than pad-to {target}",
                bytes.len()
            ),
        );
    }
    bytes.resize(target, r.pad_byte);
    Ok(bytes)
}

/// The whole file of a recipe (for an index case, the index).
pub fn file_bytes(r: &Recipe) -> Result<Vec<u8>, RecipeError> {
    if let Some(index) = &r.index {
        return Ok(index.as_bytes().to_vec());
    }
    if let Some(raw) = &r.raw {
        return Ok(raw.clone());
    }
    if let Some(writer) = r.writer {
        let mut out = match writer {
            Writer::Stcheck => stcheck_writer(r)?,
            Writer::Reference => reference_writer(r)?,
        };
        push_data(&mut out, &r.data);
        return Ok(out);
    }
    let header = header_bytes(r)?;
    let length = r.length.unwrap_or(header.len() as u64);
    let mut out = Vec::with_capacity(8 + header.len());
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&header);
    push_data(&mut out, &r.data);
    Ok(out)
}

/// One file of an index case's directory, besides the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseFile {
    /// A regular file with these bytes.
    Bytes(Vec<u8>),
    /// A symbolic link to this target.
    Link(String),
}

/// The files of an index case's directory besides the index, by file name, in recipe order.
pub fn shard_files(r: &Recipe) -> Result<Vec<(String, CaseFile)>, RecipeError> {
    let mut out = Vec::with_capacity(r.shards.len());
    for (name, f) in &r.shards {
        let file = match f {
            ShardFile::Tensors(t) => CaseFile::Bytes(write_tensors(r, t, &[])?),
            ShardFile::Raw(b) => CaseFile::Bytes(b.clone()),
            ShardFile::Link(target) => CaseFile::Link(target.clone()),
        };
        out.push((name.clone(), file));
    }
    Ok(out)
}

fn stcheck_writer(r: &Recipe) -> Result<Vec<u8>, RecipeError> {
    write_tensors(r, &r.tensors, &r.meta)
}

fn write_tensors(
    r: &Recipe,
    tensors: &[super::recipe::WriterTensor],
    meta: &[(String, String)],
) -> Result<Vec<u8>, RecipeError> {
    let datas: Vec<Vec<u8>> = tensors.iter().map(|t| data_bytes(&t.data)).collect();
    let mut specs = Vec::with_capacity(tensors.len());
    for (t, data) in tensors.iter().zip(&datas) {
        let Some(dtype) = stcheck::Dtype::from_name(&t.dtype) else {
            return fail(r, format!("unknown dtype {:?}", t.dtype));
        };
        specs.push(stcheck::write::TensorSpec::new(
            &t.name, dtype, &t.shape, data,
        ));
    }
    let meta: Vec<(&str, &str)> = meta.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    match stcheck::write::serialize(&specs, &meta) {
        Ok(bytes) => Ok(bytes),
        Err(e) => fail(r, format!("stcheck writer refused: {e}")),
    }
}

struct RefView {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl safetensors::View for &RefView {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn reference_dtype(name: &str) -> Option<safetensors::Dtype> {
    use safetensors::Dtype as D;
    Some(match name {
        "BOOL" => D::BOOL,
        "U8" => D::U8,
        "I8" => D::I8,
        "I16" => D::I16,
        "U16" => D::U16,
        "F16" => D::F16,
        "BF16" => D::BF16,
        "I32" => D::I32,
        "U32" => D::U32,
        "F32" => D::F32,
        "F64" => D::F64,
        "I64" => D::I64,
        "U64" => D::U64,
        _ => return None,
    })
}

fn reference_writer(r: &Recipe) -> Result<Vec<u8>, RecipeError> {
    if r.meta.len() > 1 {
        // The reference takes a HashMap: with two keys its output order is not deterministic.
        return fail(r, "the reference writer takes at most one metadata entry");
    }
    let mut views = Vec::with_capacity(r.tensors.len());
    for t in &r.tensors {
        let Some(dtype) = reference_dtype(&t.dtype) else {
            return fail(
                r,
                format!("dtype {:?} not supported by the reference builder", t.dtype),
            );
        };
        let mut shape = Vec::with_capacity(t.shape.len());
        for &d in &t.shape {
            let Ok(d) = usize::try_from(d) else {
                return fail(r, "dimension does not fit usize");
            };
            shape.push(d);
        }
        views.push((
            t.name.clone(),
            RefView {
                dtype,
                shape,
                data: data_bytes(&t.data),
            },
        ));
    }
    let meta: Option<HashMap<String, String>> =
        (!r.meta.is_empty()).then(|| r.meta.iter().cloned().collect());
    match safetensors::serialize(views.iter().map(|(n, v)| (n.as_str(), v)), meta) {
        Ok(bytes) => Ok(bytes),
        Err(e) => fail(r, format!("reference writer refused: {e}")),
    }
}
