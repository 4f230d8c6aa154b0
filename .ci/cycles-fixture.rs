// The self-test of .ci/cycles.py (run first on every run of it): every `use crate::seen_*`
// line below must be found, and no `crate::hidden_*` path, which stand only in comments and
// literals. Each seen path follows a literal or comment that the regular expressions used
// before misread (they saw 5 of these 11 imports; the code after a misread literal vanished
// from the graph). Not compiled: it is lexed only.

const HUB: &str = "https://huggingface.co"; // `//` inside a string is not a comment
use crate::seen_after_a_url;

const QUOTE: u8 = b'"'; // a byte literal holding a double quote
use crate::seen_after_a_byte_quote;

const KIND: &str = "integer"; // a string ending in `r` is not the start of a raw string
use crate::seen_after_a_string_ending_in_r;

const RAW: &str = r#"crate::hidden_in_a_raw_string "quoted" "#;
use crate::seen_after_a_raw_string;

const RAW_BYTES: &[u8] = br##"crate::hidden_in_raw_bytes "# still inside"##;
use crate::seen_after_raw_bytes;

fn longest<'a>(x: &'a str, _y: &'a str) -> &'a str {
    'outer: loop {
        break 'outer x;
    }
}
use crate::seen_after_lifetimes_and_a_label;

const APOSTROPHE: char = '\'';
const SNOWMAN: char = '\u{2603}';
use crate::seen_after_escaped_chars;

/* a block comment /* nested: crate::hidden_in_a_nested_comment */ still the comment:
crate::hidden_in_a_block_comment */
use crate::seen_after_a_nested_comment;

const ESCAPED: &str = "a \" crate::hidden_in_an_escaped_string \\";
use crate::seen_after_escaped_quotes;

fn identifiers_ending_in_r(for_r: u32) -> u32 {
    let br = for_r; // `br` and `for_r` are identifiers, not raw-string prefixes
    br
}
use crate::seen_after_identifiers_ending_in_r;

// crate::hidden_in_a_line_comment "an unbalanced quote in a comment
use crate::seen_after_a_quote_in_a_comment;
