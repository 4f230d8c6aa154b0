//! A small scanner over the writer's header JSON, to find what to mutate.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    Str,
    Num,
    Open,
    Close,
    Colon,
    Comma,
    Other,
}

/// A token of the header text: kind, byte range, and nesting depth before it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token {
    pub(crate) kind: Tok,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) depth: usize,
}

pub(crate) fn scan(text: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < text.len() {
        let c = text[i];
        let start = i;
        let kind = match c {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                Tok::Str
            }
            b'-' | b'0'..=b'9' => {
                while i < text.len()
                    && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                Tok::Num
            }
            b'{' | b'[' => {
                i += 1;
                Tok::Open
            }
            b'}' | b']' => {
                i += 1;
                Tok::Close
            }
            b':' => {
                i += 1;
                Tok::Colon
            }
            b',' => {
                i += 1;
                Tok::Comma
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                Tok::Other
            }
        };
        if kind == Tok::Close {
            depth = depth.saturating_sub(1);
        }
        out.push(Token {
            kind,
            start,
            end: i.min(text.len()),
            depth,
        });
        if kind == Tok::Open {
            depth += 1;
        }
    }
    out
}

/// A top-level `"key": value` of the header: token indices and byte ranges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) key: (usize, usize),
    /// Byte range of the whole `"key":value`.
    pub(crate) span: (usize, usize),
    /// Token index range of the value.
    pub(crate) value_toks: (usize, usize),
}

pub(crate) fn entries(toks: &[Token]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < toks.len() {
        let t = toks[i];
        if t.kind == Tok::Str && t.depth == 1 && toks[i + 1].kind == Tok::Colon {
            let vstart = i + 2;
            let mut j = vstart;
            if toks[j].kind == Tok::Open {
                j += 1;
                while j < toks.len() && !(toks[j].kind == Tok::Close && toks[j].depth == 1) {
                    j += 1;
                }
            }
            let j = j.min(toks.len() - 1);
            out.push(Entry {
                key: (t.start, t.end),
                span: (t.start, toks[j].end),
                value_toks: (vstart, j + 1),
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The value token following a field key `field` inside an entry's value.
pub(crate) fn field_tokens(toks: &[Token], text: &[u8], e: &Entry, field: &str) -> Vec<Token> {
    let quoted = format!("\"{field}\"");
    let (a, b) = e.value_toks;
    let mut out = Vec::new();
    for i in a..b {
        let t = toks[i];
        if t.kind == Tok::Str && t.depth == 2 && &text[t.start..t.end] == quoted.as_bytes() {
            let mut j = i + 2;
            if j < b && toks[j].kind == Tok::Open {
                j += 1;
                while j < b && toks[j].kind != Tok::Close {
                    out.push(toks[j]);
                    j += 1;
                }
            } else if j < b {
                out.push(toks[j]);
            }
        }
    }
    out.retain(|t| t.kind != Tok::Comma);
    out
}
