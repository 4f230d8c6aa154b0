//! The text of `SPEC.md`, compiled into the library: each rule's section, for
//! `stcheck --explain RULE` and for the rule descriptions of the SARIF output
//! ([`crate::SarifWriter`]). SPEC.md is the one source; a test keeps every rule of [`Rule::ALL`]
//! documented there and the command's output equal to the document.
//!
//! A rule's section is the text from its heading `### RULE-ID` to the next heading. Its
//! *statement* is the text before the first list item; its *rationale* is the list item that
//! starts with `Rationale:`.

use stcheck::Rule;

/// SPEC.md, as it was when the library was built (through the link `print/SPEC.md`, so that
/// the packaged crate carries it).
pub const SPEC_MD: &str = include_str!("../SPEC.md");

/// One rule's text in SPEC.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleText {
    /// The rule.
    pub rule: Rule,
    /// The whole section, from its heading line `### RULE-ID` to the line before the next
    /// heading, without trailing blank lines (Markdown).
    pub section: &'static str,
    /// The statement: the paragraphs between the heading and the first list item (Markdown,
    /// with the document's line breaks).
    pub statement: &'static str,
    /// The rationale list item, without its `- Rationale:` lead (Markdown, with the
    /// document's line breaks), or `""` if the section has none.
    pub rationale: &'static str,
}

impl RuleText {
    /// The text of `rule`, or `None` if SPEC.md has no section for it.
    pub fn of(rule: Rule) -> Option<RuleText> {
        let section = section(SPEC_MD, rule.id())?;
        let body = section.split_once('\n').map_or("", |(_, b)| b);
        let statement = body
            .split("\n- ")
            .next()
            .unwrap_or("")
            .trim_matches(|c: char| c.is_whitespace());
        let rationale = list_item(body, "Rationale:").unwrap_or("");
        Some(RuleText {
            rule,
            section,
            statement,
            rationale,
        })
    }

    /// The first sentence of the statement, on one line.
    pub fn summary(&self) -> String {
        let flat = one_line(self.statement);
        match flat.find(". ") {
            Some(i) => flat[..=i].to_owned(),
            None => flat,
        }
    }
}

/// The section of the rule `id` in `doc`: from the line `### id` to the next heading.
pub fn section<'d>(doc: &'d str, id: &str) -> Option<&'d str> {
    let heading = format!("### {id}");
    let mut start = None;
    let mut offset = 0;
    for line in doc.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        match start {
            None if text == heading => start = Some(offset),
            Some(s) if text.starts_with('#') => return Some(doc[s..offset].trim_end()),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|s| doc[s..].trim_end())
}

/// The list item of `body` that starts with `lead` (after `- `), without the lead, its
/// continuation lines included.
fn list_item<'d>(body: &'d str, lead: &str) -> Option<&'d str> {
    let marker = format!("- {lead}");
    let start = body
        .match_indices(&marker)
        .find(|&(i, _)| i == 0 || body.as_bytes()[i - 1] == b'\n')?
        .0
        + marker.len();
    let rest = &body[start..];
    // The item ends at the next line that is not a continuation (indented) line.
    let mut end = rest.len();
    let mut offset = 0;
    for (n, line) in rest.split_inclusive('\n').enumerate() {
        if n > 0 && !line.starts_with(' ') {
            end = offset;
            break;
        }
        offset += line.len();
    }
    Some(rest[..end].trim())
}

/// Markdown text with its line breaks (and the indentation of continuation lines) turned into
/// single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_a_statement_and_a_rationale() {
        for &rule in Rule::ALL {
            let t = RuleText::of(rule).unwrap_or_else(|| panic!("{rule}: no section in SPEC.md"));
            assert!(t.section.starts_with(&format!("### {rule}\n")), "{rule}");
            assert!(!t.statement.is_empty(), "{rule}: no statement");
            assert!(
                !t.statement.contains("\n- "),
                "{rule}: statement runs into the list"
            );
            assert!(!t.rationale.is_empty(), "{rule}: no rationale");
            assert!(!t.rationale.contains("\n- "), "{rule}: rationale runs on");
            assert!(t.summary().ends_with('.'), "{rule}: {}", t.summary());
        }
    }

    #[test]
    fn sections_end_before_the_next_heading() {
        let t = RuleText::of(Rule::FrameShort).expect("documented");
        assert!(!t.section.contains("### FRAME-EMPTY-HEADER"));
        let last = RuleText::of(Rule::IndexShardUnlisted).expect("documented");
        assert!(last.section.ends_with(last.section.trim_end()));
    }
}
