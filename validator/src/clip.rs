//! Text of messages that quote what a file holds.

use std::borrow::Cow;

/// A string for messages, cut after 200 characters so a hostile value cannot flood a report.
pub(crate) fn clip(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(200) {
        Some((i, _)) => Cow::Owned(format!("{}...", &s[..i])),
        None => Cow::Borrowed(s),
    }
}
