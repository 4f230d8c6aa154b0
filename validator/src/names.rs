//! Rules on tensor names (`NAME-*`), shared by the validator and the writer, and the one
//! escaping function for untrusted text in human output ([`escape`]).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::rules::Rule;

/// The code points with the property `Default_Ignorable_Code_Point`, as listed in the Unicode
/// Character Database's `DerivedCoreProperties-17.0.0.txt` (unchanged since Unicode 16.0), with
/// adjacent ranges merged (`180B..180D` + `180E` + `180F`, `2060..2064` + `2065` + `2066..206F`,
/// `E0000` + ... + `E01F0..E0FFF`). Sorted and disjoint; the unassigned code points the property
/// reserves (`2065`, `FFF0..FFF8`, parts of `E0000..E0FFF`) are included, as the property does.
const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00ad}', '\u{00ad}'),   // SOFT HYPHEN
    ('\u{034f}', '\u{034f}'),   // COMBINING GRAPHEME JOINER
    ('\u{061c}', '\u{061c}'),   // ARABIC LETTER MARK
    ('\u{115f}', '\u{1160}'),   // HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    ('\u{17b4}', '\u{17b5}'),   // KHMER VOWEL INHERENT AQ, AA
    ('\u{180b}', '\u{180f}'),   // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    ('\u{200b}', '\u{200f}'),   // ZERO WIDTH SPACE .. RIGHT-TO-LEFT MARK
    ('\u{202a}', '\u{202e}'),   // bidi embeddings and overrides
    ('\u{2060}', '\u{206f}'),   // WORD JOINER .. NOMINAL DIGIT SHAPES, bidi isolates
    ('\u{3164}', '\u{3164}'),   // HANGUL FILLER
    ('\u{fe00}', '\u{fe0f}'),   // VARIATION SELECTOR-1..16
    ('\u{feff}', '\u{feff}'),   // ZERO WIDTH NO-BREAK SPACE
    ('\u{ffa0}', '\u{ffa0}'),   // HALFWIDTH HANGUL FILLER
    ('\u{fff0}', '\u{fff8}'),   // reserved
    ('\u{1bca0}', '\u{1bca3}'), // SHORTHAND FORMAT controls
    ('\u{1d173}', '\u{1d17a}'), // MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    ('\u{e0000}', '\u{e0fff}'), // tags (E0001, E0020..E007F), VARIATION SELECTOR-17..256
];

/// Whether `c` has the Unicode property `Default_Ignorable_Code_Point` (Unicode 17.0.0):
/// characters that render as nothing when a font has no glyph for them.
pub(crate) fn is_default_ignorable(c: char) -> bool {
    let i = DEFAULT_IGNORABLE.partition_point(|&(_, last)| last < c);
    DEFAULT_IGNORABLE
        .get(i)
        .is_some_and(|&(first, _)| first <= c)
}

/// Whether `c` breaks a rule of `NAME-CONTROL`: a C0 or C1 control character
/// (U+0000-U+001F, U+007F-U+009F), or the line and paragraph separators U+2028 and U+2029,
/// which JavaScript and many editors and line splitters treat as line ends.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}')
}

/// Whether `c` is a character of `NAME-INVISIBLE`: any default-ignorable code point
/// (Unicode's `Default_Ignorable_Code_Point`), which includes the bidirectional controls,
/// the zero-width characters, the soft hyphen, the variation selectors and the tag characters.
pub fn is_invisible(c: char) -> bool {
    is_default_ignorable(c)
}

/// Whether the name looks like a path: a leading `/` or `\`, or a `..` segment.
pub fn is_path_like(name: &str) -> bool {
    name.starts_with('/')
        || name.starts_with('\\')
        || name.split(['/', '\\']).any(|segment| segment == "..")
}

/// Untrusted text (a tensor name, a file path, a message quoting a file) made safe for one
/// line of human output: every character that `char::escape_debug` escapes (quotes,
/// backslashes, control characters including U+0085, U+2028 and U+2029, and other
/// non-printable characters) and every default-ignorable code point ([`is_invisible`]: bidi
/// controls U+202A-U+202E and U+2066-U+2069, zero-width characters, the soft hyphen, tag
/// characters, ...) is written as an escape, so the text can neither break the line nor hide
/// what it is, and maps back to exactly one text. Borrows `s` when nothing needs escaping.
///
/// ```
/// use stcheck::escape;
/// assert_eq!(escape("model.weight"), "model.weight");
/// assert_eq!(escape("a\u{202e}b\nc\u{ad}"), r"a\u{202e}b\nc\u{ad}");
/// assert_eq!(escape(r#"say "\""#), r#"say \"\\\""#);
/// ```
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

/// The number of characters before byte index `at` of `name`.
fn char_index(name: &str, at: usize) -> usize {
    name[..at].chars().count()
}

/// The error a name breaks, if any (`NAME-CONTROL`).
pub(crate) fn check_error(name: &str) -> Option<(Rule, String)> {
    let (at, c) = name.char_indices().find(|&(_, c)| is_control(c))?;
    let what = match c {
        '\u{2028}' => "the line separator",
        '\u{2029}' => "the paragraph separator",
        _ => "the control character",
    };
    Some((
        Rule::NameControl,
        format!(
            "tensor name holds {what} U+{:04X} at character {}",
            c as u32,
            char_index(name, at)
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
    out.extend(special_warning(name));
    if let Some((at, c)) = name.char_indices().find(|&(_, c)| is_invisible(c)) {
        out.push((
            Rule::NameInvisible,
            format!(
                "tensor name holds the invisible (default-ignorable) character U+{:04X} at character {}",
                c as u32,
                char_index(name, at)
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

/// The lengths of the names some reader of the built-in reader table (`corpus/readers.json`)
/// treats specially, as a bit set (bit `n` for length `n`, 63 for longer ones): the table is
/// looked up only for a name of one of these lengths. Written out, not computed from the
/// table, so that a check that meets no such name never parses the table (it is most of the
/// cost of a one-file run); `special_lengths_follow_the_table` keeps it equal to the table.
const SPECIAL_LENGTHS: u64 = 1 << "__proto__".len();

/// `NAME-SPECIAL`: a name that a reader of the built-in reader table (`corpus/readers.json`)
/// treats specially (`__proto__` in the Hub's JavaScript parser). Cheap for every other name:
/// only a name of the length of a special one is looked up.
pub(crate) fn special_warning(name: &str) -> Option<(Rule, String)> {
    if SPECIAL_LENGTHS & (1u64 << name.len().min(63)) == 0 {
        return None;
    }
    crate::portable::table::special_name_warning(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_lengths_follow_the_table() {
        let names = crate::portable::table::special_names();
        assert!(
            !names.is_empty(),
            "the built-in table names special tensor names"
        );
        let lengths = names.iter().fold(0u64, |m, n| m | 1u64 << n.len().min(63));
        assert_eq!(
            SPECIAL_LENGTHS, lengths,
            "SPECIAL_LENGTHS must hold the lengths of {names:?}"
        );
        for n in names {
            assert!(special_warning(n).is_some(), "{n}");
        }
        assert!(special_warning("model.embed").is_none());
    }

    #[test]
    fn default_ignorable_table_is_sorted_and_disjoint() {
        for w in DEFAULT_IGNORABLE.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0, "{w:x?}");
        }
    }

    #[test]
    fn default_ignorable_bounds() {
        for &(first, last) in DEFAULT_IGNORABLE {
            assert!(is_default_ignorable(first) && is_default_ignorable(last));
            for c in [first as u32 - 1, last as u32 + 1] {
                let c = char::from_u32(c).expect("no range touches a surrogate");
                assert!(!is_default_ignorable(c), "U+{:04X}", c as u32);
            }
        }
        assert!(!is_default_ignorable('\0'));
        assert!(!is_default_ignorable(char::MAX));
    }
}
