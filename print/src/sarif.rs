//! SARIF 2.1.0 output (`stcheck --format sarif`): the types and a writer that streams one log,
//! for GitHub code scanning, GitLab and other dashboards. Beside [`crate::records`]'s JSON records,
//! so the command line and the Python package write the same log.
//!
//! The log has one run. Its tool driver is `stcheck` with its version and one rule per rule of
//! SPEC.md ([`Rule::ALL`], in that order): the rule ID as `id`, the first sentence of its
//! statement as `shortDescription`, the statement as `fullDescription`, the rationale (and the
//! whole section as Markdown) as `help`, and its severity as `defaultConfiguration.level`.
//!
//! - **One result per finding**: the error of an invalid file (`level: "error"`, also for a
//!   warning made an error by `--deny`, `--deny-warnings` or `--deny-nonfinite`) and each kept
//!   warning of a valid file (`"warning"`). `ruleId` is the rule ID; the location is the file
//!   as a URI (relative paths relative to `%SRCROOT%`, the working directory; bytes that are
//!   not unreserved URI characters percent-encoded, so a name that is not UTF-8 keeps its
//!   bytes; a file checked by URL at its URL) and the byte offset as `region.byteOffset`. Findings of a sharded set point into
//!   the index or into the shard (`INDEX-TENSOR-UNLISTED`, `INDEX-TENSOR-DUPLICATE`); an
//!   `INDEX-SHARD-INVALID` result at the index has the shard's own error as a related location.
//!   The shards' own findings are results of their own, at the shard.
//! - **Paths that could not be checked** are not results (they say nothing about a file's
//!   content) but tool execution notifications of level `error` in the run's invocation, with
//!   the reason code as the descriptor ID; `executionSuccessful` is then false. At most
//!   [`MAX_NOTIFICATIONS`] are listed; one more notification counts the rest.
//! - **A weight file of another format** (a pickle `pytorch_model.bin`: loading one can run
//!   code) is such a path too, and also a result of its own, [`FORMAT_OTHER`] at level `error`
//!   located on the file, so that code scanning shows an alert on it. Its rule is the last of
//!   the driver's rules, after [`Rule::ALL`]. With `--allow-other-formats` such files are not
//!   reported at all.
//!
//! Results are written as they are produced; only the notifications wait for the end of the
//! log, so memory does not grow with the number of results.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::records::write_json;
use crate::spec::{one_line, RuleText};
use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::reference::Verdict;
use stcheck::Checked;
use stcheck::{Error, Finding, Location as At, ReadError, ReadErrorKind};
use stcheck::{Rule, Severity};
use stcheck_gate::{Place, Shown, Sink, Status, Unchecked, Via};

/// The SARIF version written.
pub(crate) const VERSION: &str = "2.1.0";

/// The `$schema` of the log: the OASIS schema of SARIF 2.1.0 (errata 01).
pub(crate) const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The most paths that could not be checked listed one by one in a log.
pub(crate) const MAX_NOTIFICATIONS: usize = 1000;

/// The base ID of relative artifact locations: the working directory of the run.
pub(crate) const SRCROOT: &str = "%SRCROOT%";

/// The rule ID of the result for a weight file of another format than safetensors (not a rule
/// of SPEC.md's checks: the file is not checked, but the log shows it as an alert on the file).
pub(crate) const FORMAT_OTHER: &str = "FORMAT-OTHER";

/// A result's or notification's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub(crate) enum Level {
    /// The file is rejected (or could not be checked).
    Error,
    /// A warning of a valid file.
    Warning,
}

impl From<Severity> for Level {
    fn from(s: Severity) -> Self {
        match s {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
        }
    }
}

/// `{"text": ...}`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Message<'a> {
    /// Plain text.
    pub(crate) text: Cow<'a, str>,
}

impl<'a> Message<'a> {
    fn new(text: impl Into<Cow<'a, str>>) -> Self {
        Message { text: text.into() }
    }
}

/// `{"text", "markdown"}`, for a rule's help.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MultiformatMessage {
    /// Plain text.
    pub(crate) text: String,
    /// The same in Markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) markdown: Option<String>,
}

/// The descriptor of one rule (`reportingDescriptor`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuleDescriptor {
    /// The rule ID of SPEC.md.
    pub(crate) id: &'static str,
    /// The rule's name in the library (`LayoutGap`).
    pub(crate) name: String,
    /// The first sentence of the statement.
    pub(crate) short_description: MultiformatMessage,
    /// The statement.
    pub(crate) full_description: MultiformatMessage,
    /// The rationale, and the whole SPEC.md section as Markdown.
    pub(crate) help: MultiformatMessage,
    /// `{"level": "error" | "warning"}`: the rule's severity.
    pub(crate) default_configuration: Configuration,
    /// `{"kind": "malformed" | "invalid" | "integrity", "tags": [...]}`.
    pub(crate) properties: RuleProperties,
}

/// `reportingConfiguration`.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Configuration {
    /// The default level.
    pub(crate) level: Level,
}

/// A rule's property bag.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RuleProperties {
    /// `"malformed"` or `"invalid"` (SPEC.md section 1.1).
    pub(crate) kind: &'static str,
    /// `["safetensors", "malformed" | "invalid"]`.
    pub(crate) tags: [&'static str; 2],
}

impl RuleDescriptor {
    /// The descriptor of `rule`, from SPEC.md (the ID alone where SPEC.md lacks the rule).
    pub(crate) fn new(rule: Rule) -> Self {
        let (short, statement, rationale, section) = match RuleText::of(rule) {
            Some(t) => (
                t.summary(),
                one_line(t.statement),
                one_line(t.rationale),
                t.section.to_owned(),
            ),
            None => {
                let id = rule.id().to_owned();
                (id.clone(), id.clone(), id.clone(), id)
            }
        };
        let explain = format!("Run `stcheck --explain {}` for the whole rule.", rule.id());
        RuleDescriptor {
            id: rule.id(),
            name: format!("{rule:?}"),
            short_description: MultiformatMessage {
                text: short,
                markdown: None,
            },
            full_description: MultiformatMessage {
                text: statement,
                markdown: None,
            },
            help: MultiformatMessage {
                text: format!("Rationale: {rationale} {explain}"),
                markdown: Some(format!("{section}\n\n{explain}")),
            },
            default_configuration: Configuration {
                level: rule.severity().into(),
            },
            properties: RuleProperties {
                kind: rule.kind().as_str(),
                tags: ["safetensors", rule.kind().as_str()],
            },
        }
    }
}

impl RuleDescriptor {
    /// The descriptor of [`FORMAT_OTHER`]: a weight file in another format, not checked.
    pub(crate) fn other_format() -> Self {
        let short =
            "A weight file in another format than safetensors was found; it was not checked.";
        let statement = "A file named or made like a weight file of another format (a PyTorch \
            pickle `.bin` or `.pt`, GGUF, ONNX, ...) is not safetensors, and a safetensors gate \
            cannot check it. It makes the run exit 2 (not checked, SPEC.md section 7) unless \
            `--allow-other-formats` is given.";
        let rationale = "Loading a pickle can run arbitrary code: a repository that ships one \
            beside (or instead of) safetensors weights gives its users a way to run the \
            uploader's code. Convert the weights to safetensors and remove the file, or pass \
            `--allow-other-formats` to accept such files unseen.";
        RuleDescriptor {
            id: FORMAT_OTHER,
            name: "OtherFormat".to_owned(),
            short_description: MultiformatMessage {
                text: short.to_owned(),
                markdown: None,
            },
            full_description: MultiformatMessage {
                text: statement.to_owned(),
                markdown: None,
            },
            help: MultiformatMessage {
                text: format!("Rationale: {rationale}"),
                markdown: Some(format!(
                    "### {FORMAT_OTHER}: a weight file in another format\n\n{statement}\n\n\
                     **Rationale.** {rationale}"
                )),
            },
            default_configuration: Configuration {
                level: Level::Error,
            },
            properties: RuleProperties {
                kind: "other_format",
                tags: ["safetensors", "security"],
            },
        }
    }
}

/// `tool.driver`: stcheck, its version and every rule.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Driver {
    /// `"stcheck"`.
    pub(crate) name: &'static str,
    /// The library's version.
    pub(crate) version: &'static str,
    /// The same, as a semantic version.
    pub(crate) semantic_version: &'static str,
    /// Where to learn about stcheck: the package's repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) information_uri: Option<&'static str>,
    /// Every rule of [`Rule::ALL`], in order (a result's `ruleIndex` is its place here), then
    /// [`FORMAT_OTHER`].
    pub(crate) rules: Vec<RuleDescriptor>,
}

impl Driver {
    /// stcheck's driver.
    pub(crate) fn stcheck() -> Self {
        Driver {
            name: "stcheck",
            version: env!("CARGO_PKG_VERSION"),
            semantic_version: env!("CARGO_PKG_VERSION"),
            information_uri: Some(env!("CARGO_PKG_REPOSITORY")).filter(|u| !u.is_empty()),
            rules: Rule::ALL
                .iter()
                .map(|&r| RuleDescriptor::new(r))
                .chain([RuleDescriptor::other_format()])
                .collect(),
        }
    }
}

/// `artifactLocation`: a path as a URI reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArtifactLocation {
    /// A relative reference (for a relative path) or a `file://` URI.
    pub(crate) uri: String,
    /// [`SRCROOT`] for a relative path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uri_base_id: Option<&'static str>,
}

impl ArtifactLocation {
    /// The location of `path`: relative paths relative to [`SRCROOT`] (leading `./` dropped),
    /// absolute ones as `file://` URIs; every byte outside the URI's unreserved characters and
    /// `/` percent-encoded.
    pub(crate) fn of_path(path: &Path) -> Self {
        let bytes = path.as_os_str().as_encoded_bytes();
        if bytes.first() == Some(&b'/') {
            return ArtifactLocation {
                uri: format!("file://{}", percent_encode(bytes)),
                uri_base_id: None,
            };
        }
        let mut rest = bytes;
        while let Some(r) = rest.strip_prefix(b"./") {
            rest = r.strip_prefix(b"/").unwrap_or(r);
        }
        ArtifactLocation {
            uri: percent_encode(rest),
            uri_base_id: Some(SRCROOT),
        }
    }

    /// A URL as it was given (http, https, hf), with the bytes a URI cannot hold
    /// percent-encoded.
    pub(crate) fn of_url(url: &str) -> Self {
        use std::fmt::Write as _;
        let url = stcheck_gate::target::redacted_url(url);
        let mut uri = String::with_capacity(url.len());
        for &b in url.as_bytes() {
            if b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b) {
                uri.push(char::from(b));
            } else {
                let _ = write!(uri, "%{b:02X}");
            }
        }
        ArtifactLocation {
            uri,
            uri_base_id: None,
        }
    }

    /// A directory as a base URI: `file:///abs/dir/`.
    pub(crate) fn of_dir(dir: &Path) -> Self {
        let mut uri = ArtifactLocation::of_path(dir).uri;
        if !uri.ends_with('/') {
            uri.push('/');
        }
        ArtifactLocation {
            uri,
            uri_base_id: None,
        }
    }
}

/// Percent-encode every byte but the unreserved characters of RFC 3986 and `/`.
pub(crate) fn percent_encode(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `region`: a byte offset into the artifact.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Region {
    /// The offset of the finding.
    pub(crate) byte_offset: u64,
}

/// `physicalLocation`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PhysicalLocation {
    /// The file.
    pub(crate) artifact_location: ArtifactLocation,
    /// The byte offset, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) region: Option<Region>,
}

/// `location`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Location<'a> {
    /// An ID unique within the result (for related locations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<u64>,
    /// The file and offset.
    pub(crate) physical_location: PhysicalLocation,
    /// What is at this location (for related locations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Message<'a>>,
}

impl Location<'_> {
    fn at(file: ArtifactLocation, offset: Option<u64>) -> Self {
        Location {
            id: None,
            physical_location: PhysicalLocation {
                artifact_location: file,
                region: offset.map(|byte_offset| Region { byte_offset }),
            },
            message: None,
        }
    }
}

/// A result's property bag.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResultProperties<'a> {
    /// `"malformed"`, `"invalid"`, `"integrity"` or (for [`FORMAT_OTHER`]) `"other_format"`.
    pub(crate) kind: &'static str,
    /// The tensor the finding is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tensor: Option<&'a str>,
    /// The shard (as the index names it) the finding is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<&'a str>,
    /// The error is a warning made an error by an option.
    pub(crate) promoted_warning: bool,
    /// With `--compare-reference`: `"accept"`, `"reject"` or `"panic"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reference_verdict: Option<&'static str>,
    /// With `--compare-reference`, when the reference loads a file strict rejects: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reference_divergence: Option<&'static str>,
}

/// One result: one finding.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SarifResult<'a> {
    /// The rule ID.
    pub(crate) rule_id: &'static str,
    /// The rule's index in the driver's rules ([`Rule::ALL`]).
    pub(crate) rule_index: usize,
    /// `error` or `warning`.
    pub(crate) level: Level,
    /// The finding's message, with the shard and tensor it is about.
    pub(crate) message: Message<'a>,
    /// The file and byte offset (none for standard input).
    pub(crate) locations: Vec<Location<'a>>,
    /// For `INDEX-SHARD-INVALID`: the shard's own error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) related_locations: Vec<Location<'a>>,
    /// Kind, tensor, shard, promotion, the reference's verdict.
    pub(crate) properties: ResultProperties<'a>,
}

/// Where the shards of a sharded set are: a directory, or the URL prefix of a remote index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shards {
    /// The directory of the index.
    Dir(PathBuf),
    /// The index's URL up to and including its last `/`.
    Url(String),
}

impl Shards {
    /// The shards of the index at `path`: its directory (`.` for a bare name).
    pub(crate) fn of_index_path(path: &Path) -> Self {
        Shards::Dir(match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        })
    }

    /// The shards of the index at `url`: the URL up to its last `/`.
    pub(crate) fn of_index_url(url: &str) -> Self {
        let url = stcheck_gate::target::redacted_url(url);
        Shards::Url(url.rfind('/').map_or("", |k| &url[..=k]).to_owned())
    }

    /// The location of the shard `name` (a plain file name).
    pub(crate) fn location(&self, name: &str) -> ArtifactLocation {
        match self {
            Shards::Dir(dir) => ArtifactLocation::of_path(&dir.join(name)),
            Shards::Url(prefix) => {
                ArtifactLocation::of_url(&format!("{prefix}{}", percent_encode(name.as_bytes())))
            }
        }
    }
}

/// Where a finding stands: the checked file, index or shard (`None` for standard input) and,
/// for the findings of a sharded set, where its shards are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'t> {
    /// The file, index or shard the finding was reported for.
    pub(crate) file: Option<&'t ArtifactLocation>,
    /// The shards, for the findings of a sharded set.
    pub(crate) shards: Option<&'t Shards>,
}

/// The index of `rule` in [`Rule::ALL`].
fn rule_index(rule: Rule) -> usize {
    Rule::ALL.iter().position(|&r| r == rule).unwrap_or(0)
}

/// A finding's text for a message: `shard "s": tensor "t": message` (names escaped), with a
/// final period.
fn finding_text(f: &Finding) -> String {
    let mut s = String::new();
    if let Some(shard) = f.shard() {
        s.push_str(&format!("shard \"{}\": ", stcheck::escape(shard)));
    }
    if let Some(t) = f.tensor() {
        s.push_str(&format!("tensor \"{}\": ", stcheck::escape(t)));
    }
    s.push_str(f.message());
    if let Some(c) = f.cause() {
        s.push_str(&format!(": {}", c.finding()));
    }
    sentence(s)
}

/// `text` ending with a period (SARIF messages are sentences).
fn sentence(mut text: String) -> String {
    if !text.ends_with(['.', '!', '?']) {
        text.push('.');
    }
    text
}

impl<'a> SarifResult<'a> {
    /// The result of `finding` about `target`, as an error or as a warning.
    pub(crate) fn new(finding: &'a Finding, as_error: bool, target: Target<'_>) -> Self {
        let rule = finding.rule();
        let at = |offset: u64, shard: Option<&str>| -> Option<Location<'a>> {
            let file = match (shard, target.shards) {
                (Some(name), Some(shards)) => shards.location(name),
                _ => target.file?.clone(),
            };
            Some(Location::at(file, Some(offset)))
        };
        let in_shard = (finding.location() == At::Shard)
            .then(|| finding.shard())
            .flatten();
        let locations = at(finding.offset(), in_shard).into_iter().collect();
        let related_locations = match (finding.cause(), finding.shard()) {
            (Some(cause), Some(shard)) if target.shards.is_some() => {
                at(cause.offset(), Some(shard))
                    .map(|l| Location {
                        id: Some(1),
                        message: Some(Message::new(sentence(cause.finding().to_string()))),
                        ..l
                    })
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        };
        SarifResult {
            rule_id: rule.id(),
            rule_index: rule_index(rule),
            level: if as_error {
                Level::Error
            } else {
                Level::Warning
            },
            message: Message::new(finding_text(finding)),
            locations,
            related_locations,
            properties: ResultProperties {
                kind: rule.kind().as_str(),
                tensor: finding.tensor(),
                shard: finding.shard(),
                promoted_warning: as_error && rule.severity() == Severity::Warning,
                reference_verdict: None,
                reference_divergence: None,
            },
        }
    }

    /// The result of a file's error.
    pub(crate) fn error(e: &'a Error, target: Target<'_>) -> Self {
        SarifResult::new(e.finding(), true, target)
    }

    /// The [`FORMAT_OTHER`] result of a weight file of another format, at its first byte.
    pub(crate) fn other_format(
        file: Option<&ArtifactLocation>,
        shown: &str,
        why: &ReadError,
    ) -> Self {
        SarifResult {
            rule_id: FORMAT_OTHER,
            rule_index: Rule::ALL.len(),
            level: Level::Error,
            message: Message::new(sentence(format!("{shown}: not checked: {why}"))),
            locations: file
                .map(|f| Location::at(f.clone(), Some(0)))
                .into_iter()
                .collect(),
            related_locations: Vec::new(),
            properties: ResultProperties {
                kind: "other_format",
                tensor: None,
                shard: None,
                promoted_warning: false,
                reference_verdict: None,
                reference_divergence: None,
            },
        }
    }
}

/// `notification`: a path that could not be checked.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Notification {
    /// Always `error`: the path fails the run.
    pub(crate) level: Level,
    /// `path: message`.
    pub(crate) message: Message<'static>,
    /// The path, when there is one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) locations: Vec<Location<'static>>,
    /// `{"id": reason}`: the reason code (`not_regular_file`, `dangling_link`, `io`, ...).
    pub(crate) descriptor: DescriptorReference,
}

/// `reportingDescriptorReference` by ID.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DescriptorReference {
    /// The ID.
    pub(crate) id: &'static str,
}

impl Notification {
    /// The notification that `file` (shown as `shown`) could not be checked.
    pub(crate) fn not_checked(
        file: Option<&ArtifactLocation>,
        shown: &str,
        why: &ReadError,
    ) -> Self {
        Notification {
            level: Level::Error,
            message: Message::new(sentence(format!("{shown}: not checked: {why}"))),
            locations: file
                .map(|f| Location::at(f.clone(), None))
                .into_iter()
                .collect(),
            descriptor: DescriptorReference { id: why.code() },
        }
    }
}

/// Streams one SARIF log: [`SarifWriter::start`], then results and notifications in any order,
/// then [`SarifWriter::finish`].
#[derive(Debug)]
pub struct SarifWriter<W: Write> {
    out: W,
    results: u64,
    notifications: Vec<Notification>,
    omitted_notifications: u64,
    /// The set whose shards are being written (as a sink of the gate's events).
    open: Option<Shards>,
}

impl<W: Write> SarifWriter<W> {
    /// Write the head of the log: the version, the tool with its rules, and `%SRCROOT%` as
    /// `base` (the directory relative paths are relative to) when given.
    pub fn start(mut out: W, base: Option<&Path>) -> io::Result<Self> {
        struct Head<'b> {
            base: Option<&'b Path>,
        }
        impl Serialize for Head<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                #[derive(Serialize)]
                struct Tool {
                    driver: Driver,
                }
                #[derive(Serialize)]
                struct Base {
                    uri: String,
                }
                let mut m = s.serialize_map(None)?;
                m.serialize_entry(
                    "tool",
                    &Tool {
                        driver: Driver::stcheck(),
                    },
                )?;
                if let Some(dir) = self.base {
                    let mut bases = std::collections::BTreeMap::new();
                    bases.insert(
                        SRCROOT,
                        Base {
                            uri: ArtifactLocation::of_dir(dir).uri,
                        },
                    );
                    m.serialize_entry("originalUriBaseIds", &bases)?;
                }
                m.end()
            }
        }
        out.write_all(b"{\"$schema\":")?;
        write_json(&mut out, SCHEMA_URI)?;
        out.write_all(b",\"version\":")?;
        write_json(&mut out, VERSION)?;
        out.write_all(b",\"runs\":[")?;
        let mut head = Vec::new();
        write_json(&mut head, &Head { base })?;
        // The run object stays open for its results.
        out.write_all(head.strip_suffix(b"}").unwrap_or(&head))?;
        out.write_all(b",\"results\":[\n")?;
        Ok(SarifWriter {
            out,
            results: 0,
            notifications: Vec::new(),
            omitted_notifications: 0,
            open: None,
        })
    }

    /// The writer the log goes to (to flush it between results).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Write one result.
    pub(crate) fn result(&mut self, r: &SarifResult<'_>) -> io::Result<()> {
        if self.results > 0 {
            self.out.write_all(b",\n")?;
        }
        self.results += 1;
        write_json(&mut self.out, r)
    }

    /// The results of one checked file (the strict verdict): its error, or its warnings. With
    /// the reference crate's verdict in `checked`, the error says what the reference does.
    /// `file` is `None` for standard input.
    pub(crate) fn file(
        &mut self,
        file: Option<&ArtifactLocation>,
        checked: &Checked<'_>,
    ) -> io::Result<()> {
        let target = Target { file, shards: None };
        match &checked.verdict {
            Err(e) => {
                let mut r = SarifResult::error(e, target);
                if let Some(v) = &checked.reference {
                    r.properties.reference_verdict = Some(match v {
                        Verdict::Accept(_) => "accept",
                        Verdict::Reject(_) => "reject",
                        Verdict::Panic(_) => "panic",
                    });
                    r.properties.reference_divergence = crate::records::divergence(checked);
                }
                self.result(&r)
            }
            Ok(report) => {
                for w in report.warnings() {
                    self.result(&SarifResult::new(w, false, target))?;
                }
                // With the portable profile: every misreading by a chosen reader.
                for f in checked.portable.iter().flat_map(|p| p.findings()) {
                    self.result(&SarifResult::new(f.finding(), true, target))?;
                }
                Ok(())
            }
        }
    }

    /// The results of a sharded set's own findings, for the index at `index` with its shards
    /// at `shards` (the shards' findings are written with [`SarifWriter::file`] as they are
    /// checked, at `shards.location(name)`).
    pub(crate) fn index(
        &mut self,
        index: &ArtifactLocation,
        shards: &Shards,
        report: &IndexReport,
    ) -> io::Result<()> {
        let target = Target {
            file: Some(index),
            shards: Some(shards),
        };
        for e in report.errors() {
            self.result(&SarifResult::new(e, true, target))?;
        }
        for w in report.warnings() {
            self.result(&SarifResult::new(w, false, target))?;
        }
        for f in report.portable().iter().flat_map(|p| p.findings()) {
            self.result(&SarifResult::new(f.finding(), true, target))?;
        }
        Ok(())
    }

    /// A path or URL that could not be checked (listed at the end of the log, in the
    /// invocation). A weight file of another format is also a [`FORMAT_OTHER`] result, written
    /// now.
    pub(crate) fn not_checked(
        &mut self,
        file: Option<&ArtifactLocation>,
        shown: &str,
        why: &ReadError,
    ) -> io::Result<()> {
        if why.kind() == ReadErrorKind::OtherFormat {
            self.result(&SarifResult::other_format(file, shown, why))?;
        }
        if self.notifications.len() < MAX_NOTIFICATIONS {
            self.notifications
                .push(Notification::not_checked(file, shown, why));
        } else {
            self.omitted_notifications += 1;
        }
        Ok(())
    }

    /// Close the log with the invocation: `exitCode`, `executionSuccessful` (false when a path
    /// could not be checked) and the notifications. Returns the writer.
    pub fn finish(mut self, exit_code: u8) -> io::Result<W> {
        struct Invocation<'n> {
            exit_code: u8,
            notifications: &'n [Notification],
            omitted: u64,
        }
        impl Serialize for Invocation<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry(
                    "executionSuccessful",
                    &(self.notifications.is_empty() && self.exit_code != 2),
                )?;
                m.serialize_entry("exitCode", &self.exit_code)?;
                if !self.notifications.is_empty() {
                    m.serialize_entry("toolExecutionNotifications", &Notes(self))?;
                }
                m.end()
            }
        }
        struct Notes<'i, 'n>(&'i Invocation<'n>);
        impl Serialize for Notes<'_, '_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(None)?;
                for n in self.0.notifications {
                    seq.serialize_element(n)?;
                }
                if self.0.omitted > 0 {
                    seq.serialize_element(&Notification {
                        level: Level::Error,
                        message: Message::new(format!(
                            "{} more paths could not be checked (not listed).",
                            self.0.omitted
                        )),
                        locations: Vec::new(),
                        descriptor: DescriptorReference { id: "omitted" },
                    })?;
                }
                seq.end()
            }
        }
        self.out.write_all(b"\n],\"invocations\":[")?;
        write_json(
            &mut self.out,
            &Invocation {
                exit_code,
                notifications: &self.notifications,
                omitted: self.omitted_notifications,
            },
        )?;
        self.out.write_all(b"]}]}\n")?;
        Ok(self.out)
    }
}

/// Where a target stands, as a SARIF artifact (`None` for standard input).
pub(crate) fn location_of(at: &Shown<'_>) -> Option<ArtifactLocation> {
    match at.place {
        Place::Path(p) => Some(ArtifactLocation::of_path(p)),
        Place::Url(u) => Some(ArtifactLocation::of_url(u)),
        Place::Stdin => None,
    }
}

impl<W: Write> Sink for SarifWriter<W> {
    fn file(
        &mut self,
        at: &Shown<'_>,
        checked: &Checked<'_>,
        _via: &Via,
        _status: Status,
    ) -> io::Result<()> {
        SarifWriter::file(self, location_of(at).as_ref(), checked)
    }

    fn index_start(&mut self, at: &Shown<'_>, _mode: Option<stcheck::ReadMode>) -> io::Result<()> {
        self.open = match at.place {
            Place::Path(p) => Some(Shards::of_index_path(p)),
            Place::Url(u) => Some(Shards::of_index_url(u)),
            Place::Stdin => None,
        };
        Ok(())
    }

    fn shard(
        &mut self,
        _at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        _via: Option<&Via>,
        _status: Status,
    ) -> io::Result<()> {
        match (outcome, &self.open) {
            (ShardOutcome::Checked(c), Some(shards)) => {
                let at = shards.location(name);
                SarifWriter::file(self, Some(&at), c)
            }
            _ => Ok(()),
        }
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        _via: &Via,
        _status: Status,
    ) -> io::Result<()> {
        let shards = self.open.take();
        let file = location_of(at);
        match (outcome, shards, &file) {
            (Ok(rep), Some(shards), Some(file)) => self.index(file, &shards, rep),
            (Err(e), _, _) => self.not_checked(file.as_ref(), at.text, e),
            _ => Ok(()),
        }
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, _how: Unchecked) -> io::Result<()> {
        SarifWriter::not_checked(self, location_of(at).as_ref(), at.text, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            ArtifactLocation::of_path(Path::new("./a b/ü.safetensors")),
            ArtifactLocation {
                uri: "a%20b/%C3%BC.safetensors".to_owned(),
                uri_base_id: Some(SRCROOT)
            }
        );
        assert_eq!(
            ArtifactLocation::of_path(Path::new("/x/#y?.safetensors")).uri,
            "file:///x/%23y%3F.safetensors"
        );
        assert_eq!(ArtifactLocation::of_dir(Path::new("/w")).uri, "file:///w/");
        assert_eq!(
            ArtifactLocation::of_url("hf://org/m@main/a b\u{e9}.safetensors?x=1").uri,
            "hf://org/m@main/a%20b%C3%A9.safetensors?..."
        );
        assert_eq!(
            Shards::of_index_url("https://h/m/x.safetensors.index.json")
                .location("p q.safetensors")
                .uri,
            "https://h/m/p%20q.safetensors"
        );
        assert_eq!(
            Shards::of_index_path(Path::new("x.safetensors.index.json"))
                .location("s.safetensors")
                .uri,
            "s.safetensors"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = Path::new(std::ffi::OsStr::from_bytes(b"q\xfd.safetensors"));
            assert_eq!(ArtifactLocation::of_path(p).uri, "q%FD.safetensors");
        }
    }

    #[test]
    fn every_rule_is_described() {
        let d = Driver::stcheck();
        assert_eq!(d.rules.len(), Rule::ALL.len() + 1);
        assert_eq!(d.rules[Rule::ALL.len()].id, FORMAT_OTHER);
        for (r, rule) in d.rules.iter().zip(Rule::ALL) {
            assert_eq!(r.id, rule.id());
            assert_eq!(
                rule_index(*rule),
                d.rules
                    .iter()
                    .position(|x| x.id == r.id)
                    .unwrap_or(usize::MAX)
            );
            assert!(r.short_description.text.len() < r.full_description.text.len() + 1);
            assert_ne!(r.short_description.text, r.id, "{}: not in SPEC.md", r.id);
        }
    }
}
