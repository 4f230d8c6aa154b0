//! stcheck in JavaScript: the native half of the npm package (`js/`), compiled to WebAssembly.
//!
//! A thin face over the core (`stcheck`), the gate's option resolution
//! (`stcheck_gate::options::RunOptions`, with [`Face::Js`] names) and the printer's records
//! (`stcheck_print::records`), so a record here is the one `stcheck --json` writes. It reads
//! nothing itself: the JavaScript wrapper (`js/lib/core.js`) reads a `Blob`, a URL or a
//! `Uint8Array` and feeds the bytes to one [`Stream`], a `stcheck::Checker`.
//!
//! Every check returns an *envelope* ([`Envelope`]): `{"record": ...}` (the record of
//! `stcheck --json`'s `data`), `{"usage": "message"}` (options that do not go together) or
//! `{"unread": {"reason", "message"}}` (the bytes could not be checked). A file's check hands
//! it over in a compact encoding that the wrapper builds into objects without a JSON text
//! ([`compact`]: a small header's check is dominated by its record), a set's as JSON text. Nothing
//! here panics on any input: the module is built with `panic = "abort"`, where a panic would
//! end the module.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use stcheck::index::{check_index_with, check_shard_name, ShardSource};
use stcheck::{Checked, Checker, Config, Need, Profile, ReadError, ReadErrorKind, Rule};
use stcheck_gate::options::{Face, Opt, RunOptions, Spec, Value, OPTIONS};
use stcheck_gate::{shown_shard, Cost, HubInfo, Place, Shown, Sink, Status, Via};
use stcheck_print::records::FileRecord;
use stcheck_print::JsonLines;
use wasm_bindgen::prelude::*;

mod compact;

/// Options resolved once: the core's configuration and what the record shows.
#[derive(Debug, Clone)]
struct Resolved {
    config: Config,
    record: stcheck_print::Options,
    /// The SHA-256 the caller gives for the file (`expectSha256`): `(source, hex)`.
    expected: Option<(&'static str, String)>,
    /// Why these options cannot check a sharded set (`expectSha256` gives one file's hash).
    not_for_a_set: Option<String>,
}

/// The options of the JavaScript API, as its users spell them (camelCase): each property
/// read by the gate's table ([`OPTIONS`], [`Face::Js`] names), and `verbose`. Options of the
/// wrapper alone (`onProgress`, `fetch`, `headers`, `chunkSize`, `path`) are taken out before
/// they get here; any other unknown name is a usage error, not silently ignored.
fn resolve(options: &str) -> Result<Resolved, String> {
    let mut run = RunOptions::default();
    run.face = Face::Js;
    let mut verbose = false;
    if !options.trim().is_empty() {
        let given: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(options).map_err(|e| format!("options: {e}"))?;
        for (key, value) in &given {
            match (key.as_str(), Spec::find(Face::Js, key)) {
                ("verbose", _) => {
                    verbose = value
                        .as_bool()
                        .ok_or_else(|| format!("verbose: {value} is not true or false"))?
                }
                (_, Some(spec)) => run
                    .set(spec.opt, Value::from_json(value))
                    .map_err(|e| e.0)?,
                (_, None) => {
                    let known: Vec<String> = OPTIONS
                        .iter()
                        .filter_map(|s| s.js)
                        .chain(["verbose"])
                        .map(|k| format!("`{k}`"))
                        .collect();
                    return Err(format!(
                        "options: unknown field `{key}`, expected one of {}",
                        known.join(", ")
                    ));
                }
            }
        }
    }
    if run.compare_reference || run.profile == Profile::Reference {
        return Err(format!(
            "{}: the reference crate's verdict is left out of the WebAssembly build: compiled \
             for wasm32 its sizes and offsets are 32-bit (usize), so it rejects files the \
             64-bit reference loads (8 of the corpus's files, and the messages of 10 more \
             differ); the stcheck command line and the Python package give it",
            if run.compare_reference {
                run.name(Opt::CompareReference)
            } else {
                Face::Js.reference_profile()
            }
        ));
    }
    let mut config = run.resolve().map_err(|e| e.0)?;
    // No threads in a WebAssembly module without shared memory: the deep scan runs on one.
    config.threads = 1;
    let record = stcheck_print::Options::new(run.effective_profile()).verbose(verbose);
    let expected = run.expected_id().map(|(s, hex)| (s, hex.to_owned()));
    let set = stcheck_gate::walk::Target::Index(std::path::PathBuf::new(), None);
    let not_for_a_set = run.one_file(&[set]).err().map(|e| e.0);
    Ok(Resolved {
        config,
        record,
        expected,
        not_for_a_set,
    })
}

thread_local! {
    /// The options last resolved, by their JSON text. A page or a service checks many files
    /// with the same options; resolving them (the option table, the portable reader table)
    /// would otherwise be most of a small header's check.
    static LAST_RESOLVED: RefCell<Option<(String, Rc<Resolved>)>> = const { RefCell::new(None) };
}

/// [`resolve`], remembering the last options that resolved.
fn resolve_cached(options: &str) -> Result<Rc<Resolved>, String> {
    let hit = LAST_RESOLVED.with_borrow(|last| match last {
        Some((text, r)) if text == options => Some(Rc::clone(r)),
        _ => None,
    });
    if let Some(r) = hit {
        return Ok(r);
    }
    let r = Rc::new(resolve(options)?);
    LAST_RESOLVED.set(Some((options.to_owned(), Rc::clone(&r))));
    Ok(r)
}

/// What a check hands to the wrapper: the record, or why there is none. The checks of one
/// file hand it over compact ([`hand`], [`compact`]), a set's check and its listing as JSON
/// text ([`json`]): the same value either way, opened by the wrapper's `open`.
enum Envelope<'a, T: ?Sized = ()> {
    /// `{"record": ...}`: the record of `stcheck --json`'s `data`.
    Record(&'a T),
    /// `{"usage": "message"}`: options that do not go together.
    Usage(&'a str),
    /// `{"unread": {"reason", "message"}}`: the bytes could not be checked.
    Unread(&'a str, &'a str),
}

impl<T: serde::Serialize + ?Sized> serde::Serialize for Envelope<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(serde::Serialize)]
        struct Unread<'a> {
            reason: &'a str,
            message: &'a str,
        }
        let mut m = s.serialize_map(Some(1))?;
        match self {
            Envelope::Record(r) => m.serialize_entry("record", r)?,
            Envelope::Usage(message) => m.serialize_entry("usage", message)?,
            Envelope::Unread(reason, message) => {
                m.serialize_entry("unread", &Unread { reason, message })?
            }
        }
        m.end()
    }
}

/// The longest record handed to JavaScript. A verbose record lists every tensor: a header of
/// 1.4 million tensors made one of hundreds of megabytes, held in the module, then as a
/// JavaScript string and its parse (1.78 GB in all). Past this, the file is not checked here.
const MAX_RECORD: usize = 64 << 20;

/// Hand `envelope` over in the compact encoding ([`compact::hand_over`]): the address the
/// wrapper decodes it from. A record longer than `cap` bytes is not handed over: the file is
/// not checked here (an `unread` envelope instead).
fn hand<T: serde::Serialize + ?Sized>(envelope: &Envelope<'_, T>, cap: usize) -> u32 {
    let message = match compact::hand_over(envelope, cap) {
        Ok(at) => return at,
        Err(compact::Error::TooLong) => format!(
            "the record is longer than the {cap} bytes this WebAssembly module hands over (a \
             verbose record lists every tensor); check without `verbose`, or with the stcheck \
             command line"
        ),
        Err(compact::Error::Other(e)) => format!("the record could not be written: {e}"),
    };
    // A short envelope of strings: it encodes (0, never handed out, tells the wrapper if not).
    compact::hand_over(&Envelope::<()>::Unread("io", &message), usize::MAX).unwrap_or(0)
}

fn record<T: serde::Serialize + ?Sized>(value: &T) -> u32 {
    hand(&Envelope::Record(value), MAX_RECORD)
}

fn usage(message: &str) -> u32 {
    hand(&Envelope::<()>::Usage(message), MAX_RECORD)
}

fn unread(reason: &str, message: &str) -> u32 {
    hand(&Envelope::<()>::Unread(reason, message), MAX_RECORD)
}

fn unread_error(e: &ReadError) -> u32 {
    unread(e.kind().as_str(), &e.to_string())
}

/// `envelope` as JSON text.
fn json<T: serde::Serialize + ?Sized>(envelope: &Envelope<'_, T>) -> String {
    stcheck_print::json_out::to_string(envelope).unwrap_or_else(|_| {
        r#"{"unread":{"reason":"io","message":"the record could not be written"}}"#.to_owned()
    })
}

/// The module's memory, where the wrapper reads what [`hand`] hands over.
#[wasm_bindgen(js_name = moduleMemory)]
pub fn module_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// 64 random bits from the wrapper (`crypto.getRandomValues`) for the seeds of the core's
/// duplicate-name tables: this target's std has no randomness of its own (`stcheck::seed_hashes`).
#[wasm_bindgen(js_name = seedHashes)]
pub fn seed_hashes(high: u32, low: u32) {
    stcheck::seed_hashes(u64::from(high) << 32 | u64::from(low));
}

/// A length from JavaScript (a `number`): a non-negative integer up to 2^53.
fn length(n: f64) -> Option<u64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if (0.0..=MAX_SAFE).contains(&n) && n.fract() == 0.0 {
        Some(n as u64)
    } else {
        None
    }
}

/// The address `url` as every output shows it: user information removed, a query shown as
/// `?...`, the fragment dropped (the gate's `shown_url`), for the wrapper's messages and paths.
#[wasm_bindgen(js_name = shownUrl)]
pub fn shown_url(url: &str) -> String {
    stcheck_gate::target::shown_url(url)
}

/// `message` with the secrets of `url` (user information, query, fragment) replaced, for
/// messages of lower layers (`fetch`) that quote the address as it was given.
#[wasm_bindgen(js_name = scrubUrlIn)]
pub fn scrub_url_in(message: &str, url: &str) -> String {
    stcheck_gate::target::scrub_url_in(message, url)
}

/// The usage error of `options` (JSON), or `""` when they resolve.
#[wasm_bindgen(js_name = optionsError)]
pub fn options_error(options: &str) -> String {
    match resolve_cached(options) {
        Ok(_) => String::new(),
        Err(m) => m,
    }
}

/// The usage error of `options` (JSON) for a sharded set's check, or `""` when they resolve
/// and can check one (`expectSha256` gives the hash of one file).
#[wasm_bindgen(js_name = indexOptionsError)]
pub fn index_options_error(options: &str) -> String {
    match resolve_cached(options) {
        Ok(r) => r.not_for_a_set.clone().unwrap_or_default(),
        Err(m) => m,
    }
}

/// Check `bytes`. With `file_len` (a number, or a negative one for none), `bytes` are the
/// first bytes of a file of that length (the length field and the header at least; the data
/// too when the options read it); without it, `bytes` are the whole file.
#[wasm_bindgen(js_name = checkBytes)]
///
/// `path` and `options` may be left out (`undefined`): the path is then shown as `-`, and the
/// options are the defaults (`{}`), so the usual call passes no string at all.
pub fn check_bytes(
    bytes: &[u8],
    file_len: f64,
    path: Option<String>,
    options: Option<String>,
) -> u32 {
    let path = path.as_deref().unwrap_or("-");
    let r = match resolve_cached(options.as_deref().unwrap_or("{}")) {
        Ok(r) => r,
        Err(m) => return usage(&m),
    };
    if let Some(e) = header_too_large(bytes, &r.config) {
        return unread_error(&e);
    }
    if file_len < 0.0 {
        let checked = Checker::check_slice(&r.config, bytes);
        return finish_record(Ok(checked), path, &r, None, &HubInfo::default());
    }
    let Some(len) = length(file_len) else {
        return usage("fileLength: not a length in bytes");
    };
    if (bytes.len() as u64) > len {
        return usage(&format!(
            "fileLength: {len} bytes, fewer than the {} bytes given",
            bytes.len()
        ));
    }
    let mut s = Stream::start(r, len);
    s.feed(bytes);
    if let Some(more) = s.still_wanted() {
        return unread(
            "io",
            &format!(
                "the {} bytes given end before the check does (it needs {more} more bytes of \
                 the {len}-byte file)",
                bytes.len()
            ),
        );
    }
    s.finish(path)
}

fn finish_record(
    checked: Result<Checked<'_>, ReadError>,
    path: &str,
    r: &Resolved,
    remote: Option<(&str, Cost)>,
    hub: &HubInfo,
) -> u32 {
    match checked {
        Err(e) => unread_error(&e),
        Ok(mut c) => {
            // The one integrity decision, as the gate makes it for the other faces: what the
            // server published (its X-Linked-Etag), then the caller's `expectSha256`.
            let mut ids = hub.published_ids(None);
            if let Some((source, hex)) = &r.expected {
                ids.push((source, hex.clone()));
            }
            let pairs: Vec<(&str, &str)> = ids.iter().map(|(s, id)| (*s, id.as_str())).collect();
            c.compare_published(&pairs);
            let status = Status::of_file(&c, r.record.profile);
            let rec = FileRecord::new(path, &c, r.record, status);
            match remote {
                Some((url, cost)) => record(&rec.with_remote(url, cost)),
                None => record(&rec),
            }
        }
    }
}

/// The longest header this module checks. The core holds the header and builds its parse
/// from it (about [`stcheck::limits::MEMORY_FACTOR_PER_HEADER_BYTE`] bytes per header byte, and
/// the record beside): a header of a gigabyte, allowed by a raised `maxHeaderSize`, would take
/// the module past its 4 GiB of memory and end it. Past this, the file is not checked.
const MAX_HEADER: u64 = 256 << 20;

/// Why a file whose first bytes are `first` is not checked here: its length field announces a
/// header longer than [`MAX_HEADER`] that the options allow (one past their limit is the
/// core's `FRAME-HEADER-LIMIT`, decided without reading it).
fn header_too_large(first: &[u8], config: &Config) -> Option<ReadError> {
    let n = u64::from_le_bytes(first.get(..8)?.try_into().ok()?);
    (n > MAX_HEADER && n <= config.header_limit()).then(|| {
        ReadError::new(
            ReadErrorKind::Io,
            format!(
                "the header is {n} bytes long, more than the {MAX_HEADER} bytes this \
                 WebAssembly module checks (its memory is bounded); check the file with the \
                 stcheck command line"
            ),
        )
    })
}

/// One file fed in order to the core's one checker (`stcheck::Checker`): by a `Blob`'s
/// slices, a response body's chunks, or bytes at once.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Stream {
    checker: Option<Checker<'static>>,
    resolved: Rc<Resolved>,
    len: u64,
    /// The file's first bytes, up to the length field's 8.
    head: Vec<u8>,
    /// Set when the length field announces a header longer than [`MAX_HEADER`].
    refused: Option<ReadError>,
}

impl Stream {
    fn start(resolved: Rc<Resolved>, len: u64) -> Stream {
        Stream {
            checker: Some(Checker::new(&resolved.config).with_len(len)),
            resolved,
            len,
            head: Vec::with_capacity(8),
            refused: None,
        }
    }

    /// Bytes still wanted before the file's end: `Some(n)` when the checker wants more and
    /// the file has them.
    fn still_wanted(&self) -> Option<u64> {
        if self.refused.is_some() {
            return None;
        }
        let c = self.checker.as_ref()?;
        let want = c.wanted()?;
        let left = self.len.saturating_sub(c.consumed());
        (left > 0 && want > 0).then_some(want.min(left))
    }

    fn take_checked(&mut self) -> Result<Checked<'static>, ReadError> {
        if let Some(e) = self.refused.take() {
            self.checker = None;
            return Err(e);
        }
        match self.checker.take() {
            Some(c) => c.try_finish(),
            None => Err(ReadError::new(
                ReadErrorKind::Io,
                "the check was already finished",
            )),
        }
    }
}

/// Open a stream for a file of `len` bytes under `options` (JSON); `undefined` when the
/// options or the length are not usable (the wrapper checks both first).
#[wasm_bindgen(js_name = openStream)]
pub fn open_stream(options: &str, len: f64) -> Option<Stream> {
    let resolved = resolve_cached(options).ok()?;
    Some(Stream::start(resolved, length(len)?))
}

#[wasm_bindgen]
impl Stream {
    /// How many bytes to read next (the rest of the length field, of the header, or of the
    /// data region plus one byte), or 0 when nothing more is needed.
    pub fn wanted(&self) -> f64 {
        self.still_wanted().map_or(0.0, |n| n as f64)
    }

    /// Feed the next bytes of the file; returns whether more are wanted.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        if self.head.len() < 8 {
            let n = (8 - self.head.len()).min(bytes.len());
            self.head.extend(bytes.iter().take(n));
            self.refused = header_too_large(&self.head, &self.resolved.config);
        }
        if self.refused.is_some() {
            return false;
        }
        match self.checker.as_mut() {
            Some(c) => c.feed(bytes) == Need::More && self.still_wanted().is_some(),
            None => false,
        }
    }

    /// Bytes consumed so far.
    pub fn consumed(&self) -> f64 {
        self.checker.as_ref().map_or(0.0, |c| c.consumed() as f64)
    }

    /// The record of the file, shown as `path` (an envelope handed over: [`hand`]).
    pub fn finish(&mut self, path: &str) -> u32 {
        let checked = self.take_checked();
        finish_record(checked, path, &self.resolved, None, &HubInfo::default())
    }

    /// The record of a file fetched from `url` with `requests` requests that brought `bytes`
    /// body bytes (an envelope handed over), as `stcheck --json URL` writes it; `linked_etag`: the
    /// `X-Linked-Etag` a response of the URL's own origin gave, compared as the CLI does.
    #[wasm_bindgen(js_name = finishRemote)]
    pub fn finish_remote(
        &mut self,
        path: &str,
        url: &str,
        requests: u32,
        bytes: f64,
        redirects: u32,
        linked_etag: Option<String>,
    ) -> u32 {
        let mut hub = HubInfo::default();
        if let Some(v) = linked_etag {
            hub.note_linked_etag(v.as_bytes());
        }
        let checked = self.take_checked();
        let cost = Cost {
            requests,
            bytes: length(bytes).unwrap_or(0),
            redirects,
            retries: 0,
        };
        finish_record(checked, path, &self.resolved, Some((url, cost)), &hub)
    }
}

/// The most distinct shards a set checked here may name. The largest published checkpoints
/// have some thousands; a set's record holds an entry per shard, so an index naming millions
/// (all missing) would make a record of gigabytes, past the module's 4 GiB of memory.
const MAX_SHARDS: usize = 100_000;

/// A sharded set being checked: the index's bytes, and its shards' results as the wrapper
/// checks them (each through a [`Stream`]), then the set's rules over them
/// (`stcheck::index`), the same as `stcheck --json` on the index.
#[wasm_bindgen]
#[derive(Debug)]
pub struct IndexSession {
    index: Vec<u8>,
    resolved: Rc<Resolved>,
    /// Each shard read: its result, or why it could not be read (a kind and a message).
    shards: BTreeMap<String, Result<Checked<'static>, (ReadErrorKind, String)>>,
    listing: Option<Vec<String>>,
}

/// Open a set: the index's bytes under `options` (JSON); `undefined` when the options do not
/// resolve (the wrapper checks them first).
#[wasm_bindgen(js_name = openIndex)]
pub fn open_index(index: Vec<u8>, options: &str) -> Option<IndexSession> {
    let resolved = resolve_cached(options)
        .ok()
        .filter(|r| r.not_for_a_set.is_none())?;
    Some(IndexSession {
        index,
        resolved,
        shards: BTreeMap::new(),
        listing: None,
    })
}

#[wasm_bindgen]
impl IndexSession {
    /// The shard file names the index names, each once, in the index's order, without the
    /// names that are not plain file names (those are findings, never read): a JSON array.
    /// An index naming more than [`MAX_SHARDS`] shards is not checked (an `unread` envelope):
    /// the set's record, with an entry per shard, would not fit in the module's memory.
    #[wasm_bindgen(js_name = shardNames)]
    pub fn shard_names(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        stcheck::index::visit_shard_names(&self.index, &self.resolved.config, &mut |name| {
            if check_shard_name(name).is_ok() && seen.insert(name.to_owned()) {
                if names.len() == MAX_SHARDS {
                    return std::ops::ControlFlow::Break(());
                }
                names.push(name.to_owned());
            }
            std::ops::ControlFlow::Continue(())
        });
        if seen.len() > MAX_SHARDS {
            let message = format!(
                "the index names more than {MAX_SHARDS} shards, more than this WebAssembly \
                 module checks in one set (its memory is bounded); check it with the stcheck \
                 command line"
            );
            return json(&Envelope::<()>::Unread("io", &message));
        }
        serde_json::to_string(&names).unwrap_or_else(|_| "[]".to_owned())
    }

    /// A stream for a shard of `len` bytes, under the set's options; `undefined` for a
    /// length that is not one.
    #[wasm_bindgen(js_name = openShard)]
    pub fn open_shard(&self, len: f64) -> Option<Stream> {
        Some(Stream::start(Rc::clone(&self.resolved), length(len)?))
    }

    /// The shard `name`, checked by `stream` (fed to its end).
    #[wasm_bindgen(js_name = addShard)]
    pub fn add_shard(&mut self, name: &str, stream: &mut Stream) {
        let checked = stream
            .take_checked()
            .map_err(|e| (e.kind(), e.message().to_owned()));
        self.shards.insert(name.to_owned(), checked);
    }

    /// The shard `name` could not be read, for `reason` (a read-error kind: `not_found` and
    /// `not_regular` are `INDEX-SHARD-MISSING`, `link_not_followed` is `INDEX-SHARD-LINK`;
    /// any other makes the set not checked, as the CLI does when a shard's read fails).
    #[wasm_bindgen(js_name = shardUnreadable)]
    pub fn shard_unreadable(&mut self, name: &str, reason: &str, message: &str) {
        let kind = reason.parse().unwrap_or(ReadErrorKind::Io);
        self.shards
            .insert(name.to_owned(), Err((kind, message.to_owned())));
    }

    /// The `*.safetensors` names in the index's directory (a JSON array of strings), for
    /// `INDEX-SHARD-UNLISTED`; without it, the directory is taken to hold the shards read.
    #[wasm_bindgen(js_name = setListing)]
    pub fn set_listing(&mut self, names: &str) -> bool {
        match serde_json::from_str::<Vec<String>>(names) {
            Ok(v) => {
                self.listing = Some(v);
                true
            }
            Err(_) => false,
        }
    }

    /// The set's record, shown as `path` with its shards under `dir` (a `{"type", "data"}`
    /// line, as `stcheck --json` writes it, by the same printer).
    pub fn finish(&self, path: &str, dir: &str) -> String {
        let r = &self.resolved;
        let mut lines = JsonLines::new(Vec::new(), r.record);
        let at = Shown {
            text: path,
            place: Place::Stdin,
        };
        let profile = r.record.profile;
        let mut written = lines.index_start(&at, None);
        let result = check_index_with(&self.index, self, &r.config, &mut |name, outcome| {
            if written.is_ok() {
                let text = shown_shard(dir, name);
                let shard = Shown {
                    text: &text,
                    place: Place::Stdin,
                };
                let status = Status::of_shard(&outcome, profile);
                written = lines.shard(&shard, name, outcome, Some(&Via::Memory), status);
            }
        });
        let status = Status::of_index(result.as_ref(), profile);
        let written =
            written.and_then(|()| lines.index_end(&at, result.as_ref(), &Via::Memory, status));
        if let Err(e) = written {
            let message = format!("the record could not be written: {e}");
            return json(&Envelope::<()>::Unread("io", &message));
        }
        let mut out = lines.into_inner();
        out.pop(); // the newline
        String::from_utf8(out)
            .unwrap_or_else(|_| json(&Envelope::<()>::Unread("io", "a record is not UTF-8")))
    }
}

impl ShardSource for IndexSession {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        Ok(match &self.listing {
            Some(names) => names.clone(),
            None => self
                .shards
                .iter()
                .filter(|(n, c)| c.is_ok() && n.ends_with(".safetensors"))
                .map(|(n, _)| n.clone())
                .collect(),
        })
    }

    fn check(
        &self,
        name: &str,
        _config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        match self.shards.get(name) {
            None => Err(ReadError::new(ReadErrorKind::NotFound, "no such file")),
            Some(Err((kind, message))) => Err(ReadError::new(*kind, message.clone())),
            Some(Ok(c)) => {
                f(c.clone());
                Ok(())
            }
        }
    }
}

/// The text of `rule` in SPEC.md as JSON (`{"rule", "severity", "kind", "summary",
/// "statement", "rationale", "section"}`), or `"null"` for an unknown rule ID.
#[wasm_bindgen]
pub fn explain(rule: &str) -> String {
    let Some(rule) = Rule::from_id_any_case(rule.trim()) else {
        return "null".to_owned();
    };
    let Some(t) = stcheck_print::spec::RuleText::of(rule) else {
        return "null".to_owned();
    };
    serde_json::json!({
        "rule": rule.id(),
        "severity": rule.severity().as_str(),
        "kind": rule.kind().as_str(),
        "summary": t.summary(),
        "statement": t.statement,
        "rationale": t.rationale,
        "section": t.section,
    })
    .to_string()
}

/// The rule IDs of SPEC.md (a JSON array).
#[wasm_bindgen]
pub fn rules() -> String {
    let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
    serde_json::to_string(&ids).unwrap_or_else(|_| "[]".to_owned())
}

/// The package's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`hand`] handed over at `at` (its address), decoded as the wrapper decodes it, as
    /// JSON text.
    fn handed(at: u32) -> String {
        assert_ne!(at, 0, "something was handed over");
        compact::decoded().to_string()
    }

    fn shard(name: &str) -> Vec<u8> {
        let spec = stcheck::write::TensorSpec::new(name, stcheck::Dtype::U8, &[1], &[1]);
        stcheck::write::serialize(&[spec], &[]).expect("shard")
    }

    fn add(set: &mut IndexSession, name: &str, bytes: &[u8]) {
        let mut s = set.open_shard(bytes.len() as f64).expect("stream");
        s.feed(bytes);
        set.add_shard(name, &mut s);
    }

    /// Issue 29: a set's record is written by the printer crate's JSON Lines printer from the
    /// gate's events (no record put together here): each shard shown under `dir`, with the
    /// gate's status, no read mode (bytes handed over), a missing shard's finding, and a set that
    /// could not be read with `io_error` and its code.
    #[test]
    fn a_set_is_written_by_the_json_lines_printer() {
        let index =
            br#"{"weight_map":{"a":"a.safetensors","b":"b.safetensors","c":"c.safetensors"}}"#;
        let mut set = open_index(index.to_vec(), "").expect("options");
        add(&mut set, "a.safetensors", &shard("a"));
        add(&mut set, "b.safetensors", &[1, 2, 3]);
        let line = set.finish("d/m.safetensors.index.json", "d/");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["type"], "index", "{line}");
        let d = &v["data"];
        assert_eq!(d["path"], "d/m.safetensors.index.json");
        assert_eq!(d["status"], "invalid");
        let shards = d["shards"].as_array().expect("shards");
        let got: Vec<(&str, &str, &str)> = shards
            .iter()
            .map(|s| {
                let f = |k: &str| s[k].as_str().unwrap_or_default();
                (f("name"), f("path"), f("status"))
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a.safetensors", "d/a.safetensors", "valid"),
                ("b.safetensors", "d/b.safetensors", "invalid"),
                ("c.safetensors", "d/c.safetensors", "missing"),
            ]
        );
        assert!(shards[..2].iter().all(|s| s["mode"].is_null()), "{line}");

        let mut set = open_index(index.to_vec(), "").expect("options");
        add(&mut set, "a.safetensors", &shard("a"));
        set.shard_unreadable("b.safetensors", "io", "b.safetensors: the read failed");
        let line = set.finish("m.safetensors.index.json", "");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        let d = &v["data"];
        assert_eq!(d["status"], "io_error", "{line}");
        assert_eq!(d["read_error"], "io", "{line}");
        assert!(d["io_error"]
            .as_str()
            .is_some_and(|m| m.contains("the read failed")));
    }

    /// Issue 35: a length field announcing a header past [`MAX_HEADER`] (that a raised
    /// `maxHeaderSize` allows) stops the stream before the header is buffered: not checked.
    /// Under the options' own limit it is the core's `FRAME-HEADER-LIMIT`.
    #[test]
    fn a_header_past_the_module_bound_is_not_checked() {
        let n: u64 = 1_200_000_000;
        let mut head = n.to_le_bytes().to_vec();
        head.extend_from_slice(b"{   ");
        head.resize(stcheck::limits::HEAD_LEN, b' ');
        let raised = r#"{"maxHeaderSize":2000000000}"#;
        let mut s = open_stream(raised, (n + 8) as f64).expect("stream");
        assert!(s.feed(head.get(..3).unwrap_or_default()));
        assert!(!s.feed(head.get(3..).unwrap_or_default()));
        assert_eq!(s.wanted(), 0.0);
        let out = handed(s.finish("x.safetensors"));
        assert!(out.contains(r#""unread""#), "{out}");
        assert!(out.contains("more than the 268435456 bytes"), "{out}");
        let out = handed(check_bytes(
            &head,
            (n + 8) as f64,
            None,
            Some(raised.into()),
        ));
        assert!(out.contains("more than the 268435456 bytes"), "{out}");
        let out = handed(check_bytes(&head, (n + 8) as f64, Some("x".into()), None));
        assert!(out.contains("FRAME-HEADER-LIMIT"), "{out}");
    }

    /// Issue 35: an index naming more than [`MAX_SHARDS`] shards is not checked; at the cap
    /// its names are listed.
    #[test]
    fn an_index_past_the_shard_bound_is_not_checked() {
        let index = |n: usize| {
            let entries: Vec<String> = (0..n)
                .map(|i| format!(r#""t{i}":"s{i}.safetensors""#))
                .collect();
            format!(r#"{{"weight_map":{{{}}}}}"#, entries.join(",")).into_bytes()
        };
        let set = open_index(index(MAX_SHARDS + 1), "").expect("options");
        let out = set.shard_names();
        assert!(
            out.starts_with(r#"{"unread""#),
            "{}",
            out.get(..200).unwrap_or(&out)
        );
        let set = open_index(index(MAX_SHARDS), "").expect("options");
        let names: Vec<String> = serde_json::from_str(&set.shard_names()).expect("names");
        assert_eq!(names.len(), MAX_SHARDS);
    }

    /// Issue 35: a record longer than the bound is not handed over (an `unread` envelope),
    /// and what is kept meanwhile stays within the bound.
    #[test]
    fn a_record_past_the_bound_is_not_handed_over() {
        let names: Vec<String> = (0..1000).map(|i| format!("tensor.{i}")).collect();
        let out = handed(hand(&Envelope::Record(&names), 1000));
        assert!(out.starts_with(r#"{"unread""#), "{out}");
        assert!(out.contains("longer than the 1000 bytes"), "{out}");
        let out = handed(hand(&Envelope::Record(&names), MAX_RECORD));
        assert!(
            out.starts_with(r#"{"record":["tensor.0","#),
            "{}",
            out.get(..100).unwrap_or(&out)
        );
    }
}
