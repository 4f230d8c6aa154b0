//! Mutations.

use crate::*;

/// One mutation of a written file. Its numbers are raw choices, reduced against the file when
/// it is applied; a mutation that does not apply to a file leaves it unmutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Copy a top-level entry (a tensor or `__metadata__`) to after entry `at`.
    DuplicateKey {
        /// Which entry.
        which: u64,
        /// After which entry.
        at: u64,
    },
    /// Shift both offsets of a non-empty tensor by `delta` (down if `down`).
    ShiftOffsets {
        /// Which tensor.
        which: u64,
        /// By how much.
        delta: u64,
        /// Downwards.
        down: bool,
    },
    /// Change only a tensor's end offset.
    ShiftEnd {
        /// Which tensor.
        which: u64,
        /// By how much (non-zero).
        delta: u64,
        /// Downwards.
        down: bool,
    },
    /// Insert `len` bytes into the data region at a tensor's begin (or the end), moving the
    /// tensors from there on.
    InsertGap {
        /// Which position.
        which: u64,
        /// How many bytes (>= 1).
        len: u64,
    },
    /// Respell one number of a shape or `data_offsets`.
    Respell {
        /// Which number.
        which: u64,
        /// Which spelling.
        spelling: u8,
    },
    /// Append bytes to the file.
    Append {
        /// How many (>= 1).
        len: u64,
    },
    /// Truncate the file.
    Truncate {
        /// New length (mod the old one).
        to: u64,
    },
    /// Replace the length field.
    LengthField {
        /// Which kind of new value.
        kind: u8,
        /// A raw number for it.
        raw: u64,
    },
    /// Put a byte-order mark before the header object.
    Bom,
    /// Lower-case one tensor's dtype.
    DtypeCase {
        /// Which tensor.
        which: u64,
    },
    /// Add an unknown field to a tensor entry.
    UnknownField {
        /// Which tensor.
        which: u64,
    },
    /// Swap two top-level entries (the meaning is unchanged).
    Reorder {
        /// One.
        a: u64,
        /// The other.
        b: u64,
    },
    /// Write one character of a key as a `\u` escape (the meaning is unchanged).
    EscapeKey {
        /// Which key.
        which: u64,
        /// Which character.
        at: u64,
    },
    /// Insert JSON whitespace after a structural token (the meaning is unchanged).
    Whitespace {
        /// After which token.
        which: u64,
        /// Which whitespace.
        ws: u8,
    },
    /// XOR one byte; only the generic properties are checked.
    FlipByte {
        /// Which byte.
        at: u64,
        /// Non-zero mask.
        mask: u8,
    },
}

impl Mutation {
    /// The mutation's name (for counting in tests).
    pub fn name(&self) -> &'static str {
        match self {
            Mutation::DuplicateKey { .. } => "duplicate-key",
            Mutation::ShiftOffsets { .. } => "shift-offsets",
            Mutation::ShiftEnd { .. } => "shift-end",
            Mutation::InsertGap { .. } => "insert-gap",
            Mutation::Respell { .. } => "respell-number",
            Mutation::Append { .. } => "append",
            Mutation::Truncate { .. } => "truncate",
            Mutation::LengthField { .. } => "length-field",
            Mutation::Bom => "bom",
            Mutation::DtypeCase { .. } => "dtype-case",
            Mutation::UnknownField { .. } => "unknown-field",
            Mutation::Reorder { .. } => "reorder",
            Mutation::EscapeKey { .. } => "escape-key",
            Mutation::Whitespace { .. } => "whitespace",
            Mutation::FlipByte { .. } => "flip-byte",
        }
    }

    /// Every mutation's name.
    pub const NAMES: &'static [&'static str] = &[
        "duplicate-key",
        "shift-offsets",
        "shift-end",
        "insert-gap",
        "respell-number",
        "append",
        "truncate",
        "length-field",
        "bom",
        "dtype-case",
        "unknown-field",
        "reorder",
        "escape-key",
        "whitespace",
        "flip-byte",
    ];

    /// Draw a mutation.
    pub fn generate(src: &mut impl Source) -> Self {
        match src.below(15) {
            0 => Mutation::DuplicateKey {
                which: src.u32().into(),
                at: src.u32().into(),
            },
            1 => Mutation::ShiftOffsets {
                which: src.u32().into(),
                delta: 1 + src.pick(&[0, 1, 3, 7, 15, 255, 1 << 20, 1 << 40]),
                down: src.chance(128),
            },
            2 => Mutation::ShiftEnd {
                which: src.u32().into(),
                delta: 1 + src.pick(&[0, 1, 3, 7, 15, 255, 1 << 20, 1 << 40]),
                down: src.chance(128),
            },
            3 => Mutation::InsertGap {
                which: src.u32().into(),
                len: 1 + src.below(64),
            },
            4 => Mutation::Respell {
                which: src.u32().into(),
                spelling: src.byte(),
            },
            5 => Mutation::Append {
                len: 1 + src.below(64),
            },
            6 => Mutation::Truncate { to: src.u64() },
            7 => Mutation::LengthField {
                kind: src.byte(),
                raw: src.u64(),
            },
            8 => Mutation::Bom,
            9 => Mutation::DtypeCase {
                which: src.u32().into(),
            },
            10 => Mutation::UnknownField {
                which: src.u32().into(),
            },
            11 => Mutation::Reorder {
                a: src.u32().into(),
                b: src.u32().into(),
            },
            12 => Mutation::EscapeKey {
                which: src.u32().into(),
                at: src.u32().into(),
            },
            13 => Mutation::Whitespace {
                which: src.u32().into(),
                ws: src.byte(),
            },
            _ => Mutation::FlipByte {
                at: src.u64(),
                mask: src.byte().max(1),
            },
        }
    }
}

/// What a mutation implies about the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// The same model, valid, with no warning.
    Same,
    /// Rejected with this rule, at this offset if given, about this tensor if given.
    Rule {
        rule: Rule,
        offset: Option<u64>,
        tensor: Option<String>,
    },
    /// Rejected with one of these rules.
    OneOf(&'static [Rule]),
    /// Nothing beyond the generic properties.
    Anything,
}

pub(crate) fn rule(rule: Rule) -> Expect {
    Expect::Rule {
        rule,
        offset: None,
        tensor: None,
    }
}

/// A file split at the header: its header bytes (the N after the length field) and data.
pub(crate) struct Parts {
    pub(crate) header: Vec<u8>,
    pub(crate) data: Vec<u8>,
}

impl Parts {
    fn of(file: &[u8]) -> Self {
        let mut le = [0u8; 8];
        le.copy_from_slice(&file[..8]);
        let n = u64::from_le_bytes(le) as usize;
        Parts {
            header: file[8..8 + n].to_vec(),
            data: file[8 + n..].to_vec(),
        }
    }

    /// The file, with the header padded with spaces to a multiple of 8.
    fn join(mut self) -> Vec<u8> {
        let padded = self.header.len().next_multiple_of(8);
        self.header.resize(padded, b' ');
        let mut out = (self.header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.data);
        out
    }

    /// The header without its padding.
    fn json(&self) -> Vec<u8> {
        let end = self
            .header
            .iter()
            .rposition(|&b| b != b' ')
            .map_or(0, |i| i + 1);
        self.header[..end].to_vec()
    }
}

pub(crate) fn splice(text: &[u8], at: (usize, usize), with: &[u8]) -> Vec<u8> {
    let mut out = text[..at.0].to_vec();
    out.extend_from_slice(with);
    out.extend_from_slice(&text[at.1..]);
    out
}

/// File offset of the `k`-th (0-based) top-level key whose raw text is `key`, in `header`.
pub(crate) fn key_offset(header: &[u8], key: &[u8], k: usize) -> Option<u64> {
    let toks = scan(header);
    entries(&toks)
        .iter()
        .filter(|e| &header[e.key.0..e.key.1] == key)
        .nth(k)
        .map(|e| 8 + e.key.0 as u64)
}

/// A tensor entry as located in the header: the entry and the model tensor's index.
pub(crate) fn tensor_entries(json: &[u8], model: &Model) -> Vec<(Entry, usize)> {
    let toks = scan(json);
    entries(&toks)
        .into_iter()
        .filter_map(|e| {
            let key: String = serde_json::from_slice(&json[e.key.0..e.key.1]).ok()?;
            let i = model.tensors.iter().position(|t| t.name == key)?;
            Some((e, i))
        })
        .collect()
}

/// Replace the two offsets of a tensor entry. Returns the new JSON.
pub(crate) fn set_offsets(json: &[u8], e: &Entry, begin: u64, end: u64) -> Option<Vec<u8>> {
    let toks = scan(json);
    let nums = field_tokens(&toks, json, e, "data_offsets");
    let [b, en] = nums.as_slice() else {
        return None;
    };
    let mut out = splice(json, (en.start, en.end), end.to_string().as_bytes());
    out = splice(&out, (b.start, b.end), begin.to_string().as_bytes());
    Some(out)
}

/// Where the tensors of the written file lie: (model index, begin, end), from the header.
pub(crate) fn layout(json: &[u8], model: &Model) -> Vec<(Entry, usize, u64, u64)> {
    let toks = scan(json);
    tensor_entries(json, model)
        .into_iter()
        .filter_map(|(e, i)| {
            let nums = field_tokens(&toks, json, &e, "data_offsets");
            let [b, en] = nums.as_slice() else {
                return None;
            };
            let b: u64 = std::str::from_utf8(&json[b.start..b.end])
                .ok()?
                .parse()
                .ok()?;
            let en: u64 = std::str::from_utf8(&json[en.start..en.end])
                .ok()?
                .parse()
                .ok()?;
            Some((e, i, b, en))
        })
        .collect()
}

/// Apply `m` to the valid `file` of `model`: the mutated file and what it implies, or `None`
/// when the mutation does not apply to this file.
pub(crate) fn apply(model: &Model, file: &[u8], m: Mutation) -> Option<(Vec<u8>, Expect)> {
    let parts = Parts::of(file);
    let json = parts.json();
    let toks = scan(&json);
    let ents = entries(&toks);
    let with_json = |new_json: Vec<u8>| {
        Parts {
            header: new_json,
            data: parts.data.clone(),
        }
        .join()
    };
    match m {
        Mutation::DuplicateKey { which, at } => {
            if ents.is_empty() {
                return None;
            }
            let e = ents[(which % ents.len() as u64) as usize];
            let after = ents[(at % ents.len() as u64) as usize];
            let mut copy = b",".to_vec();
            copy.extend_from_slice(&json[e.span.0..e.span.1]);
            let new_json = splice(&json, (after.span.1, after.span.1), &copy);
            let key = &json[e.key.0..e.key.1];
            let offset = key_offset(&new_json, key, 1)?;
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::JsonDuplicateKey,
                    offset: Some(offset),
                    tensor: None,
                },
            ))
        }
        Mutation::ShiftOffsets { which, delta, down } => {
            let lay: Vec<_> = layout(&json, model)
                .into_iter()
                .filter(|&(_, _, b, e)| e > b)
                .collect();
            if lay.is_empty() {
                return None;
            }
            let (e, _, b, en) = lay[(which % lay.len() as u64) as usize];
            let (nb, ne) = if down {
                (b.checked_sub(delta)?, en.checked_sub(delta)?)
            } else {
                (b.checked_add(delta)?, en.checked_add(delta)?)
            };
            let new_json = set_offsets(&json, &e, nb, ne)?;
            Some((
                with_json(new_json),
                Expect::OneOf(&[
                    Rule::LayoutGap,
                    Rule::LayoutOverlap,
                    Rule::DataTruncated,
                    Rule::DataTrailing,
                ]),
            ))
        }
        Mutation::ShiftEnd { which, delta, down } => {
            let lay = layout(&json, model);
            if lay.is_empty() {
                return None;
            }
            let (e, i, b, en) = lay[(which % lay.len() as u64) as usize];
            let ne = if down {
                en.checked_sub(delta)?
            } else {
                en.checked_add(delta)?
            };
            let new_json = set_offsets(&json, &e, b, ne)?;
            let r = if ne < b {
                Rule::LayoutOrder
            } else {
                Rule::SizeMismatch
            };
            let offset = 8 + e.key.0 as u64;
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: r,
                    offset: Some(offset),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::InsertGap { which, len } => {
            let lay = layout(&json, model);
            let total = parts.data.len() as u64;
            let mut positions: Vec<u64> = lay.iter().map(|&(_, _, b, _)| b).collect();
            positions.push(total);
            positions.sort_unstable();
            positions.dedup();
            let p = positions[(which % positions.len() as u64) as usize];
            // Move every tensor that begins at or after p, last entries first so spans hold.
            let mut moved: Vec<_> = lay
                .iter()
                .filter(|&&(_, _, b, _)| b >= p)
                .copied()
                .collect();
            moved.sort_by_key(|&(e, ..)| std::cmp::Reverse(e.span.0));
            let mut new_json = json.clone();
            for &(e, _, b, en) in &moved {
                new_json = set_offsets(&new_json, &e, b + len, en + len)?;
            }
            let mut data = parts.data.clone();
            let at = p as usize;
            data.splice(at..at, std::iter::repeat_n(0xA5, len as usize));
            let mutated = Parts {
                header: new_json.clone(),
                data,
            }
            .join();
            let expect = if moved.is_empty() {
                let n = mutated.len() as u64 - total - len;
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(n + total),
                    tensor: None,
                }
            } else {
                // The first tensor in offset order after the gap: smallest (end, key offset)
                // among those that began at p.
                let first = moved
                    .iter()
                    .filter(|&&(_, _, b, _)| b == p)
                    .map(|&(_, i, _, en)| {
                        let key = serde_json::to_string(&model.tensors[i].name).unwrap_or_default();
                        (en, key_offset(&new_json, key.as_bytes(), 0), i)
                    })
                    .min()?;
                Expect::Rule {
                    rule: Rule::LayoutGap,
                    offset: first.1,
                    tensor: Some(model.tensors[first.2].name.clone()),
                }
            };
            Some((mutated, expect))
        }
        Mutation::Respell { which, spelling } => {
            let mut nums = Vec::new();
            for (e, i) in tensor_entries(&json, model) {
                for (f, r) in [
                    ("shape", Rule::SchemaShape),
                    ("data_offsets", Rule::SchemaOffsets),
                ] {
                    for t in field_tokens(&toks, &json, &e, f) {
                        nums.push((t, i, r));
                    }
                }
            }
            if nums.is_empty() {
                return None;
            }
            let (t, i, field_rule) = nums[(which % nums.len() as u64) as usize];
            let s = String::from_utf8_lossy(&json[t.start..t.end]).into_owned();
            let name = Some(model.tensors[i].name.clone());
            let integer = |rule| Expect::Rule {
                rule,
                offset: None,
                tensor: name.clone(),
            };
            let (new, expect) = match spelling % 10 {
                0 => (format!("{s}.0"), integer(Rule::SchemaInteger)),
                1 => (format!("{s}e0"), integer(Rule::SchemaInteger)),
                2 => (format!("{s}E+0"), integer(Rule::SchemaInteger)),
                3 => (format!("-{s}"), integer(Rule::SchemaInteger)),
                4 => (
                    "18446744073709551616".to_owned(),
                    integer(Rule::SchemaInteger),
                ),
                5 => (format!("0{s}"), rule(Rule::JsonSyntax)),
                6 => (format!("+{s}"), rule(Rule::JsonSyntax)),
                7 => (format!("{s}."), rule(Rule::JsonSyntax)),
                8 => (format!("\t{s} "), Expect::Same),
                _ => (format!("\"{s}\""), integer(field_rule)),
            };
            Some((
                with_json(splice(&json, (t.start, t.end), new.as_bytes())),
                expect,
            ))
        }
        Mutation::Append { len } => {
            let mut f = file.to_vec();
            f.extend(std::iter::repeat_n(0u8, len as usize));
            Some((
                f,
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(file.len() as u64),
                    tensor: None,
                },
            ))
        }
        Mutation::Truncate { to } => {
            let len = file.len() as u64;
            let t = to % len;
            let n = parts.header.len() as u64;
            let expect = if t < 8 {
                Expect::Rule {
                    rule: Rule::FrameShort,
                    offset: Some(0),
                    tensor: None,
                }
            } else if t < 8 + n {
                Expect::Rule {
                    rule: Rule::FrameHeaderBounds,
                    offset: Some(0),
                    tensor: None,
                }
            } else {
                Expect::Rule {
                    rule: Rule::DataTruncated,
                    offset: Some(t),
                    tensor: None,
                }
            };
            Some((file[..t as usize].to_vec(), expect))
        }
        Mutation::LengthField { kind, raw } => {
            let n = parts.header.len() as u64;
            let len = file.len() as u64;
            let json_len = json.len() as u64;
            let rest = len - 8 - n;
            let new_n = match kind % 5 {
                0 => 0,
                1 => stcheck::limits::DEFAULT_MAX_HEADER_SIZE + 1 + raw % (1 << 40),
                2 => 1 + raw % n,
                3 if rest > 0 => n + 1 + raw % rest,
                _ => n.checked_add(rest + 1 + raw % (1 << 20))?,
            };
            if new_n == n {
                return None;
            }
            let mut f = file.to_vec();
            f[..8].copy_from_slice(&new_n.to_le_bytes());
            let at0 = |r| Expect::Rule {
                rule: r,
                offset: Some(0),
                tensor: None,
            };
            let expect = if new_n == 0 {
                at0(Rule::FrameEmptyHeader)
            } else if new_n > stcheck::limits::DEFAULT_MAX_HEADER_SIZE {
                at0(Rule::FrameHeaderLimit)
            } else if new_n > len - 8 {
                at0(Rule::FrameHeaderBounds)
            } else if new_n < json_len {
                Expect::OneOf(&[Rule::JsonSyntax, Rule::Utf8Invalid])
            } else if new_n < n {
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(8 + new_n + rest),
                    tensor: None,
                }
            } else {
                Expect::OneOf(&[Rule::Utf8Invalid, Rule::JsonTrailing, Rule::DataTruncated])
            };
            Some((f, expect))
        }
        Mutation::Bom => {
            let mut new_json = "\u{feff}".as_bytes().to_vec();
            new_json.extend_from_slice(&json);
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::JsonBom,
                    offset: Some(8),
                    tensor: None,
                },
            ))
        }
        Mutation::DtypeCase { which } => {
            let te = tensor_entries(&json, model);
            if te.is_empty() {
                return None;
            }
            let (e, i) = te[(which % te.len() as u64) as usize];
            let d = *field_tokens(&toks, &json, &e, "dtype").first()?;
            let lower = json[d.start..d.end].to_ascii_lowercase();
            Some((
                with_json(splice(&json, (d.start, d.end), &lower)),
                Expect::Rule {
                    rule: Rule::DtypeUnknown,
                    offset: Some(8 + d.start as u64),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::UnknownField { which } => {
            let te = tensor_entries(&json, model);
            if te.is_empty() {
                return None;
            }
            let (e, i) = te[(which % te.len() as u64) as usize];
            let close = toks[e.value_toks.1 - 1];
            let at = close.start;
            let new_json = splice(&json, (at, at), b",\"extra\":1");
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::SchemaUnknownField,
                    offset: Some(8 + at as u64 + 1),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::Reorder { a, b } => {
            if ents.len() < 2 {
                return None;
            }
            let mut order: Vec<usize> = (0..ents.len()).collect();
            order.swap(
                (a % ents.len() as u64) as usize,
                (b % ents.len() as u64) as usize,
            );
            let mut new_json = b"{".to_vec();
            for (k, &i) in order.iter().enumerate() {
                if k > 0 {
                    new_json.push(b',');
                }
                new_json.extend_from_slice(&json[ents[i].span.0..ents[i].span.1]);
            }
            new_json.push(b'}');
            Some((with_json(new_json), Expect::Same))
        }
        Mutation::EscapeKey { which, at } => {
            if ents.is_empty() {
                return None;
            }
            let e = ents[(which % ents.len() as u64) as usize];
            let key: String = serde_json::from_slice(&json[e.key.0..e.key.1]).ok()?;
            let chars: Vec<char> = key.chars().collect();
            if chars.is_empty() {
                return None;
            }
            let k = (at % chars.len() as u64) as usize;
            let mut quoted = String::from("\"");
            for (j, &c) in chars.iter().enumerate() {
                if j == k {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        quoted.push_str(&format!("\\u{u:04X}"));
                    }
                } else {
                    let s = serde_json::to_string(&c.to_string()).ok()?;
                    quoted.push_str(&s[1..s.len() - 1]);
                }
            }
            quoted.push('"');
            Some((
                with_json(splice(&json, e.key, quoted.as_bytes())),
                Expect::Same,
            ))
        }
        Mutation::Whitespace { which, ws } => {
            let spots: Vec<usize> = toks
                .iter()
                .filter(|t| matches!(t.kind, Tok::Open | Tok::Colon | Tok::Comma))
                .map(|t| t.end)
                .collect();
            if spots.is_empty() {
                return None;
            }
            let at = spots[(which % spots.len() as u64) as usize];
            let w = [b' ', b'\t', b'\n', b'\r'][usize::from(ws % 4)];
            Some((with_json(splice(&json, (at, at), &[w])), Expect::Same))
        }
        Mutation::FlipByte { at, mask } => {
            let mut f = file.to_vec();
            let i = (at % f.len() as u64) as usize;
            f[i] ^= mask;
            Some((f, Expect::Anything))
        }
    }
}

/// A `structured` case: a model and at most one mutation.
#[derive(Debug, Clone)]
pub struct Structured {
    /// The model.
    pub model: Model,
    /// The mutation.
    pub mutation: Option<Mutation>,
}

impl Structured {
    /// Draw a case.
    pub fn generate(src: &mut impl Source) -> Self {
        let model = Model::generate(src);
        let mutation = if src.chance(40) {
            None
        } else {
            Some(Mutation::generate(src))
        };
        Structured { model, mutation }
    }

    /// Write, check the unmutated file, apply the mutation and check its verdict. Returns the
    /// name of the mutation that applied, if one did.
    pub fn check(&self) -> Option<&'static str> {
        let file = self.model.serialize();
        self.model.assert_reads_back(&file, "unmutated");
        assert_eq!(
            check_differential(&file),
            Differential::BothAccept,
            "FUZZ FINDING: the reference does not load a canonical file"
        );
        let m = self.mutation?;
        let (mutated, expect) = apply(&self.model, &file, m)?;
        check_validate(&mutated);
        check_differential(&mutated);
        let result = stcheck::validate(&mutated, &Config::default());
        let what = format!("after mutation {m:?}");
        match expect {
            Expect::Same => self.model.assert_reads_back(&mutated, &what),
            Expect::Anything => {}
            Expect::OneOf(rules) => match result {
                Err(e) => assert!(
                    rules.contains(&e.rule()),
                    "FUZZ FINDING: {what}: expected one of {rules:?}, got {e}"
                ),
                Ok(_) => panic!("FUZZ FINDING: {what}: accepted, expected one of {rules:?}"),
            },
            Expect::Rule {
                rule,
                offset,
                tensor,
            } => match result {
                Err(e) => {
                    assert_eq!(e.rule(), rule, "FUZZ FINDING: {what}: got {e}");
                    if let Some(o) = offset {
                        assert_eq!(e.offset(), o, "FUZZ FINDING: {what}: offset of {e}");
                    }
                    if let Some(t) = tensor {
                        assert_eq!(e.tensor(), Some(t.as_str()), "FUZZ FINDING: {what}: {e}");
                    }
                }
                Ok(_) => panic!("FUZZ FINDING: {what}: accepted, expected {rule}"),
            },
        }
        Some(m.name())
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Structured {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Structured::generate(u))
    }
}

/// A file for the byte-level smoke tests: a generated valid file, a mutated one, or noise.
pub fn smoke_file(rng: &mut Rng) -> Vec<u8> {
    match rng.below(4) {
        0 => {
            let len = rng.below(64) as usize;
            rng.bytes(len)
        }
        1 => Model::generate(rng).serialize(),
        _ => {
            let case = Structured::generate(rng);
            let file = case.model.serialize();
            let m = Mutation::generate(rng);
            match apply(&case.model, &file, m) {
                Some((f, _)) => f,
                None => file,
            }
        }
    }
}
