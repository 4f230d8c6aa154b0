//! The one error model.
//!
//! A [`Finding`] is a rule broken at a byte offset, with the tensor where one applies and, for
//! a finding about a sharded checkpoint, its [`Context`]: which shard, whether the offset
//! points into the index or into that shard, and the shard's own error as the cause (in the
//! spirit of ripgrep's `ignore::Error::WithPath`). An [`Error`] is a finding that rejects the
//! file; a [`Warning`] one that does not. There is no constructor without an offset.
//!
//! What could not be *read* is not a finding: it is a [`ReadError`], which says nothing about
//! validity. Every entry point that reads returns `Result<_, ReadError>`, and the value inside
//! carries the verdict as `Result<Report, Error>`: one result shape for rejected versus
//! could-not-read, whatever the source of the bytes.
//!
//! Dependencies' error types never appear here: serde_json's errors are turned into a rule
//! and a message where they arise (`json.rs`), and I/O errors are wrapped in [`ReadError`].

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::names::escape;
use crate::rules::{Kind, Rule, Severity};

/// Which file a finding's offset points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Location {
    /// The safetensors file itself (the default).
    File,
    /// A sharded checkpoint's `*.safetensors.index.json`.
    Index,
    /// The shard named by [`Finding::shard`].
    Shard,
}

impl Location {
    /// `"file"`, `"index"` or `"shard"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Location::File => "file",
            Location::Index => "index",
            Location::Shard => "shard",
        }
    }
}

/// Where a finding about a sharded checkpoint stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Context {
    shard: Option<Box<str>>,
    location: Location,
    cause: Option<Error>,
}

/// A finding: the rule it breaks, where, and a human message.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    rule: Rule,
    offset: u64,
    tensor: Option<Box<str>>,
    message: Box<str>,
    context: Option<Box<Context>>,
}

impl Finding {
    pub(crate) fn new(rule: Rule, offset: u64, message: impl Into<String>) -> Self {
        Finding {
            rule,
            offset,
            tensor: None,
            message: message.into().into_boxed_str(),
            context: None,
        }
    }

    pub(crate) fn with_tensor(mut self, name: &str) -> Self {
        self.tensor = Some(name.into());
        self
    }

    fn context_mut(&mut self) -> &mut Context {
        self.context.get_or_insert_with(|| {
            Box::new(Context {
                shard: None,
                location: Location::File,
                cause: None,
            })
        })
    }

    /// A finding about a sharded checkpoint: the offset points into the index.
    pub(crate) fn in_index(mut self) -> Self {
        self.context_mut().location = Location::Index;
        self
    }

    /// The offset points into the shard `name`.
    pub(crate) fn in_shard(mut self, name: &str) -> Self {
        let c = self.context_mut();
        c.location = Location::Shard;
        c.shard = Some(name.into());
        self
    }

    /// The finding is about the shard `name` (the offset keeps its location).
    pub(crate) fn about_shard(mut self, name: &str) -> Self {
        self.context_mut().shard = Some(name.into());
        self
    }

    pub(crate) fn with_cause(mut self, cause: Error) -> Self {
        self.context_mut().cause = Some(cause);
        self
    }

    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// Malformed or invalid: the rule's kind.
    pub fn kind(&self) -> Kind {
        self.rule.kind()
    }

    /// Byte offset into the file given by [`Finding::location`], as close to the fault as the
    /// parser allows.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The tensor the finding is about, where one applies.
    pub fn tensor(&self) -> Option<&str> {
        self.tensor.as_deref()
    }

    /// The human message, without the rule ID, the tensor name or the offset.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The shard the finding is about, as the index names it (sharded checkpoints only).
    pub fn shard(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.shard.as_deref())
    }

    /// Which file [`Finding::offset`] points into.
    pub fn location(&self) -> Location {
        self.context.as_ref().map_or(Location::File, |c| c.location)
    }

    /// For `INDEX-SHARD-INVALID`, the shard's own error.
    pub fn cause(&self) -> Option<&Error> {
        self.context.as_ref().and_then(|c| c.cause.as_ref())
    }
}

impl fmt::Display for Finding {
    /// `RULE-ID: tensor "name": message (at offset 0x1a)`; with a context,
    /// `RULE-ID: shard "s": tensor "t": message (at offset 0x1a in the index): cause`. Names
    /// are escaped ([`crate::names::escape`]), so a hostile name cannot forge a line of output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule.id())?;
        if let Some(s) = self.shard() {
            write!(f, "shard \"{}\": ", escape(s))?;
        }
        if let Some(name) = &self.tensor {
            write!(f, "tensor \"{}\": ", escape(name))?;
        }
        write!(f, "{} (at offset {:#x}", self.message, self.offset)?;
        match self.location() {
            Location::File => f.write_str(")")?,
            other => write!(f, " in the {})", other.as_str())?,
        }
        if let Some(c) = self.cause() {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Why a file is rejected. One boxed word; see [`Finding`] for the accessors.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Error(Box<Finding>);

impl Error {
    /// `INTEGRITY-SHA256` from every id published for a file (at offset 0: the digest is over
    /// the whole file): `published` holds `(source, id)` pairs (the source named as the user knows it: "the hub's listing (lfs.oid)",
    /// "X-Linked-Etag", "--expect-sha256"); `computed` is the file's SHA-256. `None` when every
    /// id is a SHA-256 (64 hex digits) equal to `computed`; else the finding names each
    /// source and what it says, and why they are not one published file: an id that is not a
    /// SHA-256, ids that disagree among themselves, or ids that are not the bytes.
    pub fn sha256_published(computed: &[u8; 32], published: &[(&str, &str)]) -> Option<Error> {
        let hex: String = computed.iter().map(|b| format!("{b:02x}")).collect();
        let is_sha = |id: &str| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
        let malformed = published.iter().any(|(_, id)| !is_sha(id));
        let first = published.first()?.1;
        let disagree = published
            .iter()
            .any(|(_, id)| !id.eq_ignore_ascii_case(first));
        if !malformed && !disagree && first.eq_ignore_ascii_case(&hex) {
            return None;
        }
        let said: Vec<String> = published
            .iter()
            .map(|(source, id)| {
                let shown: String = id
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .take(80)
                    .collect::<String>()
                    .to_ascii_lowercase();
                match is_sha(id) {
                    true => format!("{source} publishes {shown}"),
                    false => format!("{source} publishes {shown:?}, not a SHA-256"),
                }
            })
            .collect();
        let why = if malformed {
            "a published id is not a SHA-256 (64 hex digits): the bytes cannot be confirmed"
        } else if disagree {
            "the published ids disagree: no one version of the file was published"
        } else {
            "these are not the bytes that were published"
        };
        let message = format!("the file's SHA-256 is {hex}; {}: {why}", said.join("; "));
        Some(Finding::new(Rule::IntegritySha256, 0, message).into())
    }

    /// The finding behind the error.
    pub fn finding(&self) -> &Finding {
        &self.0
    }
    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.0.rule
    }
    /// Malformed or invalid.
    pub fn kind(&self) -> Kind {
        self.0.kind()
    }
    /// Byte offset into the file.
    pub fn offset(&self) -> u64 {
        self.0.offset
    }
    /// The tensor the error is about, where one applies.
    pub fn tensor(&self) -> Option<&str> {
        self.0.tensor()
    }
    /// The human message.
    pub fn message(&self) -> &str {
        self.0.message()
    }
    /// Whether a warning was promoted to this error by `deny_warnings`, `deny_nonfinite` or
    /// a denied rule.
    pub fn is_promoted_warning(&self) -> bool {
        self.0.rule.severity() == Severity::Warning
    }
}

impl From<Finding> for Error {
    fn from(f: Finding) -> Self {
        Error(Box::new(f))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {}

/// A warning: a finding that does not reject the file in the strict profile.
pub type Warning = Finding;

/// Why something could not be read, so no verdict could be given. Never a verdict: a caller
/// that gates on validity must treat it as a failure.
#[derive(Debug)]
pub struct ReadError {
    kind: ReadErrorKind,
    /// A finer code than the kind, for machines (e.g. `dangling_link`, `link_loop`).
    code: &'static str,
    /// The HTTP status a server answered with, for the code `http_status`.
    http_status: Option<u16>,
    path: Option<PathBuf>,
    shard: Option<Box<str>>,
    message: Box<str>,
    source: Option<io::Error>,
}

/// What kind of [`ReadError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// No such file.
    NotFound,
    /// Not a regular file: a directory, FIFO, socket or device.
    NotRegular,
    /// A symbolic link that the link policy does not follow.
    LinkNotFollowed,
    /// The input is larger than a documented bound for the requested check.
    TooLarge,
    /// The file changed (shrank or grew, or another file took its place) while it was read.
    Changed,
    /// A loop of links or directories.
    Loop,
    /// A directory named to be checked holds nothing to check.
    Empty,
    /// A file of another weight format than safetensors (a pickle, GGUF, ...), named by a
    /// gate rather than passed unseen.
    OtherFormat,
    /// Any other I/O failure (permission denied, a read error, a network failure).
    Io,
}

impl ReadErrorKind {
    /// A stable snake_case name, for JSON output (read back by `str::parse`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReadErrorKind::NotFound => "not_found",
            ReadErrorKind::NotRegular => "not_regular",
            ReadErrorKind::LinkNotFollowed => "link_not_followed",
            ReadErrorKind::TooLarge => "too_large",
            ReadErrorKind::Changed => "changed",
            ReadErrorKind::Loop => "loop",
            ReadErrorKind::Empty => "empty",
            ReadErrorKind::OtherFormat => "other_format",
            ReadErrorKind::Io => "io",
        }
    }
}

/// Every kind, in the order of [`ReadErrorKind::as_str`]'s documentation.
const READ_ERROR_KINDS: [ReadErrorKind; 9] = [
    ReadErrorKind::NotFound,
    ReadErrorKind::NotRegular,
    ReadErrorKind::LinkNotFollowed,
    ReadErrorKind::TooLarge,
    ReadErrorKind::Changed,
    ReadErrorKind::Loop,
    ReadErrorKind::Empty,
    ReadErrorKind::OtherFormat,
    ReadErrorKind::Io,
];

/// `FromStr` for the enums named by their `as_str`: each of `all` is parsed back from its name.
macro_rules! from_name {
    ($($t:ty: $all:expr;)*) => {$(
        impl std::str::FromStr for $t {
            type Err = $crate::UnknownName;

            /// The one named so by `as_str`.
            fn from_str(s: &str) -> Result<Self, $crate::UnknownName> {
                $crate::UnknownName::find(s, $all, <$t>::as_str)
            }
        }
    )*};
}

pub(crate) use from_name;

from_name! {
    ReadErrorKind: READ_ERROR_KINDS;
}

/// A name that is none of the names of a closed set (a profile, a read mode, a read-error
/// kind): the name given and the names known. Its message is `"lax" is not strict, reference
/// or portable`; a face puts its own spelling of the option in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    given: Box<str>,
    known: Box<[&'static str]>,
}

impl UnknownName {
    /// The one of `all` whose `name` is `given`, or the error naming them all.
    pub(crate) fn find<T: Copy, const N: usize>(
        given: &str,
        all: [T; N],
        name: fn(T) -> &'static str,
    ) -> Result<T, UnknownName> {
        all.into_iter()
            .find(|&t| name(t) == given)
            .ok_or_else(|| UnknownName {
                given: given.into(),
                known: all.map(name).into(),
            })
    }

    /// The names that would have been accepted.
    pub fn known(&self) -> &[&'static str] {
        &self.known
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not ", self.given)?;
        for (i, name) in self.known.iter().enumerate() {
            let sep = match i {
                0 => "",
                _ if i + 1 == self.known.len() => " or ",
                _ => ", ",
            };
            write!(f, "{sep}{name}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownName {}

impl ReadError {
    /// A read error of this kind with a human message.
    pub fn new(kind: ReadErrorKind, message: impl Into<String>) -> Self {
        ReadError {
            kind,
            code: kind.as_str(),
            http_status: None,
            path: None,
            shard: None,
            message: message.into().into_boxed_str(),
            source: None,
        }
    }

    /// Wrap an I/O error (its kind chosen from the error: not found, or any other).
    pub fn io(e: io::Error) -> Self {
        let kind = if e.kind() == io::ErrorKind::NotFound {
            ReadErrorKind::NotFound
        } else {
            ReadErrorKind::Io
        };
        ReadError {
            kind,
            code: kind.as_str(),
            http_status: None,
            path: None,
            shard: None,
            message: e.to_string().into_boxed_str(),
            source: Some(e),
        }
    }

    /// The same error, about `path`.
    pub fn with_path(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The same error, about the shard `name` of a sharded checkpoint.
    pub fn with_shard(mut self, name: &str) -> Self {
        self.shard = Some(name.into());
        self
    }

    /// What kind of failure.
    pub fn kind(&self) -> ReadErrorKind {
        self.kind
    }

    /// A stable code for machines, finer than the kind where the cause is known (the codes of
    /// the gate's file-system policy, or the kind's name).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The same error with a finer machine code than its kind's name (the file-system policy
    /// of a gate names why a path was not checked: `"dangling_link"`, `"fifo"`, ...).
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = code;
        self
    }

    /// The same error with the HTTP status a server answered with (a source that reads from a
    /// server gives it with the code `"http_status"`).
    pub fn with_http_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    /// The HTTP status a server answered with, where that is why nothing could be read.
    pub fn http_status(&self) -> Option<u16> {
        self.http_status
    }

    /// Whether the path was not checked by policy or by its nature (a special file, a link
    /// not followed, a loop, an empty directory, a file that changed), rather than because
    /// reading it failed.
    pub fn is_policy(&self) -> bool {
        !matches!(
            self.kind,
            ReadErrorKind::Io | ReadErrorKind::NotFound | ReadErrorKind::TooLarge
        )
    }

    /// The path it is about, where known.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The shard it is about, where it happened while checking a sharded checkpoint.
    pub fn shard(&self) -> Option<&str> {
        self.shard.as_deref()
    }

    /// The message, without the path.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The I/O error behind it, when reading failed (its kind intact), or one made of the
    /// message.
    pub fn into_io_error(self) -> io::Error {
        match self.source {
            Some(e) => e,
            None => io::Error::other(self.message.into_string()),
        }
    }
}

impl fmt::Display for ReadError {
    /// `shard "s": message` (the path is printed by the caller, once, in front of the line).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.shard {
            write!(f, "shard \"{}\": ", escape(s))?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::io(e)
    }
}
