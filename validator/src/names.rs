//! Rules on tensor names (`NAME-*`), shared by the validator and the writer.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::rules::Rule;

/// Untrusted text (a tensor name, a file path) made safe for one line of human output: every
/// character that `char::escape_debug` escapes (quotes, backslashes, control and other
/// non-printable characters, U+2028/U+2029) and every invisible character is written as an
/// escape, so the text can neither break the line nor hide what it is.
pub fn escape(s: &str) -> Cow<'_, str> {
    let needs = |c: char| c == '"' || c == '\\' || !c.is_ascii() || c.is_ascii_control();
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_invisible(c)) {
        let _ = write!(out, "{}\\u{{{:x}}}", rest[..i].escape_debug(), c as u32);
        rest = &rest[i + c.len_utf8()..];
    }
    let _ = write!(out, "{}", rest.escape_debug());
    Cow::Owned(out)
}

/// Whether `c` is a control character of `NAME-CONTROL`: U+0000-U+001F and U+007F-U+009F.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Whether `c` is a bidirectional-control or zero-width character of `NAME-INVISIBLE`.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'          // Arabic letter mark
        | '\u{200b}'..='\u{200f}' // zero-width space, non-joiner, joiner, LRM, RLM
        | '\u{202a}'..='\u{202e}' // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}' // bidi isolates
        | '\u{feff}' // zero-width no-break space
    )
}

/// Whether the name looks like a path: a leading `/` or `\`, or a `..` segment.
pub fn is_path_like(name: &str) -> bool {
    name.starts_with('/')
        || name.starts_with('\\')
        || name.split(['/', '\\']).any(|segment| segment == "..")
}

/// The error a name breaks, if any (`NAME-CONTROL`).
pub(crate) fn check_error(name: &str) -> Option<(Rule, String)> {
    let (at, c) = name.char_indices().find(|&(_, c)| is_control(c))?;
    Some((
        Rule::NameControl,
        format!(
            "tensor name holds the control character U+{:04X} at character {}",
            c as u32,
            name[..at].chars().count()
        ),
    ))
}

/// The warnings a name raises, in rule order.
pub(crate) fn check_warnings(name: &str) -> Vec<(Rule, String)> {
    let mut out = Vec::new();
    if name.is_empty() {
        out.push((Rule::NameEmpty, "empty tensor name".to_owned()));
        return out;
    }
    if let Some(c) = name.chars().find(|&c| is_invisible(c)) {
        out.push((
            Rule::NameInvisible,
            format!(
                "tensor name holds the invisible character U+{:04X}",
                c as u32
            ),
        ));
    }
    if is_path_like(name) {
        out.push((
            Rule::NamePath,
            "tensor name looks like a path (leading slash or a \"..\" segment)".to_owned(),
        ));
    }
    out
}
