//! The generator of valid models.

use crate::*;

/// Swarm-style upper bounds, drawn first: each case explores a corner of the space.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Most tensors.
    pub max_tensors: u64,
    /// Highest rank.
    pub max_rank: u64,
    /// Largest dimension.
    pub max_dim: u64,
    /// Longest name, in characters.
    pub max_name_len: u64,
    /// Which name alphabets are on (bit 0 ASCII letters, 1 digits and `._-/`, 2 JSON
    /// characters that need escapes, 3 common non-ASCII, 4 any Unicode scalar).
    pub name_classes: u8,
    /// Which dtypes may appear (bit i = `Dtype::ALL[i]`).
    pub dtypes: u32,
    /// Most metadata entries.
    pub max_metadata: u64,
    /// Most data bytes in all.
    pub data_budget: u64,
}

impl Bounds {
    /// Draw bounds.
    pub fn generate(src: &mut impl Source) -> Self {
        let mut dtypes = src.u32() & ((1 << Dtype::ALL.len()) - 1);
        if dtypes == 0 {
            dtypes = (1 << Dtype::ALL.len()) - 1;
        }
        let mut name_classes = src.byte() & 0x1F;
        if name_classes == 0 {
            name_classes = 1;
        }
        Bounds {
            max_tensors: src.pick(&[0, 1, 2, 3, 4, 6, 8, 12, 16, 32]),
            max_rank: src.upto(6),
            max_dim: src.pick(&[0, 1, 2, 3, 4, 5, 8, 16, 64, 255, 1000]),
            max_name_len: src.pick(&[0, 1, 2, 4, 8, 16, 40]),
            name_classes,
            dtypes,
            max_metadata: src.upto(5),
            data_budget: src.pick(&[0, 8, 64, 512, 4096, 65536]),
        }
    }
}

/// One generated tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenTensor {
    /// Name.
    pub name: String,
    /// Dtype.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes.
    pub data: Vec<u8>,
}

/// A generated model: tensors and metadata the canonical writer accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Tensors, in generation order.
    pub tensors: Vec<GenTensor>,
    /// Metadata entries, keys unique.
    pub metadata: Vec<(String, String)>,
}

pub(crate) const COMMON_NON_ASCII: &[char] = &[
    'é', 'ß', 'ø', 'Ω', 'ж', '中', '文', 'ｆ', 'ﬁ', '😀', '𝔘', '\u{a0}', '\u{ad}', '\u{2028}',
    '\u{301}',
];

pub(crate) fn gen_char(src: &mut impl Source, classes: u8) -> char {
    let mut class = src.below(5) as u8;
    if classes & (1 << class) == 0 {
        // Fall back to the lowest class that is on.
        class = classes.trailing_zeros() as u8;
    }
    match class {
        0 => char::from(b'a' + src.below(26) as u8),
        1 => src.pick(&['0', '7', '.', '_', '-', '/', '9']),
        2 => src.pick(&['"', '\\', '\u{7f}', '\u{1}', '\n', '\u{1f}']),
        3 => src.pick(COMMON_NON_ASCII),
        _ => char::from_u32(src.below(0x11_0000) as u32).unwrap_or('\u{fffd}'),
    }
}

pub(crate) fn gen_string(src: &mut impl Source, max_len: u64, classes: u8) -> String {
    let len = src.upto(max_len);
    (0..len).map(|_| gen_char(src, classes)).collect()
}

/// Make a name the writer accepts (no `NAME-*` error or warning, not `__metadata__`).
pub(crate) fn sanitize_name(raw: String) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if stcheck::internal::is_control(c) || stcheck::internal::is_invisible(c) {
                '~'
            } else {
                c
            }
        })
        .collect();
    if name.is_empty() || name == "__metadata__" || stcheck::portable::special_name(&name).is_some()
    {
        name.insert(0, 't');
    }
    if stcheck::internal::is_path_like(&name) {
        name = name.replace(['/', '\\'], "|");
        if name == ".." {
            name.push('|');
        }
    }
    name
}

/// Bytes for a tensor: drawn from the source for the first 64, then a cheap pattern.
pub(crate) fn gen_data(src: &mut impl Source, len: usize) -> Vec<u8> {
    let head: Vec<u8> = (0..len.min(64)).map(|_| src.byte()).collect();
    let mut data = head.clone();
    let mut x = head.first().copied().unwrap_or(0);
    while data.len() < len {
        x = x.wrapping_mul(31).wrapping_add(7);
        data.push(x);
    }
    data
}

impl Model {
    /// Draw bounds, then a model within them.
    pub fn generate(src: &mut impl Source) -> Self {
        let b = Bounds::generate(src);
        Self::generate_within(src, &b)
    }

    /// A model within `b`.
    pub fn generate_within(src: &mut impl Source, b: &Bounds) -> Self {
        let allowed: Vec<Dtype> = Dtype::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| b.dtypes & (1 << i) != 0)
            .map(|(_, &d)| d)
            .collect();
        let count = src.upto(b.max_tensors);
        let mut budget = b.data_budget;
        let mut names = HashSet::new();
        let mut tensors = Vec::new();
        for i in 0..count {
            let mut name = sanitize_name(gen_string(src, b.max_name_len, b.name_classes));
            if !names.insert(name.clone()) {
                name.push_str(&format!("#{i}"));
                names.insert(name.clone());
            }
            let dtype = src.pick(&allowed);
            let rank = src.upto(b.max_rank);
            let mut shape: Vec<u64> = (0..rank).map(|_| src.upto(b.max_dim)).collect();
            let bytes = loop {
                match stcheck::internal::byte_length(dtype, &shape) {
                    Ok(n) if n <= budget => break n,
                    // Too large: give the tensor no elements.
                    Ok(_) => {
                        if let Some(d) = shape.first_mut() {
                            *d = 0;
                        } else {
                            shape.push(0);
                        }
                    }
                    // Sub-byte types: 4 more elements make any count whole bytes.
                    Err((Rule::SizeBits, _)) => shape.push(4),
                    Err(_) => shape = vec![0],
                }
            };
            budget -= bytes;
            let data = gen_data(src, bytes as usize);
            tensors.push(GenTensor {
                name,
                dtype,
                shape,
                data,
            });
        }
        let mut metadata: Vec<(String, String)> = Vec::new();
        let meta_count = src.upto(b.max_metadata);
        let params: u64 = tensors
            .iter()
            .map(|t| stcheck::internal::element_count(&t.shape).unwrap_or(0))
            .fold(0, u64::saturating_add);
        for _ in 0..meta_count {
            let key = if src.chance(24) {
                "total_parameters".to_owned()
            } else {
                gen_string(src, b.max_name_len, b.name_classes | 1)
            };
            if metadata.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let value = if key == "total_parameters" {
                params.to_string()
            } else {
                gen_string(src, 12, b.name_classes | 1)
            };
            metadata.push((key, value));
        }
        Model { tensors, metadata }
    }

    /// Write the model with the canonical writer. Panics if the writer refuses it (a bug in
    /// the generator or the writer).
    pub fn serialize(&self) -> Vec<u8> {
        let specs: Vec<TensorSpec<'_>> = self
            .tensors
            .iter()
            .map(|t| TensorSpec::new(&t.name, t.dtype, &t.shape, &t.data))
            .collect();
        let meta: Vec<(&str, &str)> = self
            .metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match write::serialize(&specs, &meta) {
            Ok(f) => f,
            Err(e) => panic!("FUZZ FINDING: the writer refused a generated model: {e}"),
        }
    }

    /// Assert that `file` validates to exactly this model, with no warning.
    pub fn assert_reads_back(&self, file: &[u8], what: &str) {
        let report = match stcheck::validate(file, &Config::default()) {
            Ok(r) => r,
            Err(e) => panic!("FUZZ FINDING: {what}: a valid file is rejected: {e}"),
        };
        assert!(
            report.warnings().is_empty(),
            "FUZZ FINDING: {what}: warnings on a valid file: {:?}",
            report.warnings()
        );
        let mut got: Vec<GenTensor> = report
            .tensors()
            .map(|t| GenTensor {
                name: t.name.to_owned(),
                dtype: t.dtype,
                shape: t.shape.to_vec(),
                data: t.data(file).to_vec(),
            })
            .collect();
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let mut want = self.tensors.clone();
        want.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(got, want, "FUZZ FINDING: {what}: tensors read back differ");
        let mut meta: Vec<(String, String)> = report
            .metadata()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        meta.sort();
        let mut want_meta = self.metadata.clone();
        want_meta.sort();
        assert_eq!(
            meta, want_meta,
            "FUZZ FINDING: {what}: metadata read back differs"
        );
    }
}
