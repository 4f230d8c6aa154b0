//! Versioned corpus releases: `corpus/` (the reader cases, the writer tasks, the recipes and
//! the documents) packed into one reproducible `.tar.gz` with a `RELEASE.json` that gives the
//! corpus version, the manifest version, the case counts and a checksum of the contents; and
//! the way back, an archive unpacked and checked before a runner uses it.
//!
//! The archive is the same bytes every time it is built from the same files: entries in byte
//! order of their paths, no timestamps (mtime 0, in the tar headers and the gzip header), no
//! owners, modes 0644/0755, a fixed compression level.
//!
//! An archive is trusted only as far as it checks out: it is read into memory under caps
//! (its size, the bytes and entries it unpacks to, the size of `RELEASE.json` and
//! `manifest.json`), only regular files and symbolic links that stay inside the release are
//! taken (no hard links, devices, FIFOs, absolute or `..` paths, nor paths that could not be
//! written: see [`MAX_NAME`] and [`MAX_PATH`]; no space or control character in a path or a
//! link target, so the contents' checksum reads one way), its contents must hash to
//! its own `RELEASE.json`, and the unpacked copy in the cache is compared with the archive's
//! description on every use, not with the copy's own `RELEASE.json`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The name of the release description at the root of a release.
pub const RELEASE_FILE: &str = "RELEASE.json";

/// The largest release archive read (the 1.0.0 release is 2.1 MB).
pub const MAX_ARCHIVE: u64 = 64 << 20;
/// The most bytes of files a release may hold, unpacked (1.0.0: 2.0 MB).
pub const MAX_UNPACKED: u64 = 256 << 20;
/// The most files and links a release may hold (1.0.0: 503).
pub const MAX_ENTRIES: usize = 20_000;
/// The largest `RELEASE.json` read.
pub const MAX_RELEASE_JSON: u64 = 64 << 10;
/// The largest `manifest.json` read (1.0.0: 350 KB).
pub const MAX_MANIFEST: u64 = 32 << 20;

/// Read a regular file (a link is followed) of at most `cap` bytes: not a device, a FIFO or
/// a directory, and not read past the cap.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let f = fs::File::open(path).map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if meta.len() > cap {
        return Err(format!(
            "{}: {} bytes, more than the {cap} allowed",
            path.display(),
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    f.take(cap + 1).read_to_end(&mut bytes).map_err(err)?;
    if bytes.len() as u64 > cap {
        return Err(format!(
            "{}: more than the {cap} bytes allowed",
            path.display()
        ));
    }
    Ok(bytes)
}

/// A link at `path` (relative to a release's root, `/`-separated) to `target` stays inside
/// the release: a relative target whose `..` never climbs above the root.
pub fn link_inside(path: &str, target: &str) -> bool {
    link_destination(path, target).is_some()
}

/// Where a link at `path` (relative to the release or corpus) to `target` points, relative to
/// the same root; `None` when it leaves it (an absolute target, a backslash, a `..` above the
/// root) or names the root itself, or when a `..` follows a name (`a/../b`).
///
/// The destination is worked out from the text, as the file system would only if no name the
/// target passes through were itself a link: a `..` after a name that is a link to a
/// directory climbs from where that link points. So `..` may only lead the target, where it
/// climbs through the link's own parent directories, which are directories (no entry of a
/// release lies beneath another: [`beneath_entry`]).
fn link_destination(path: &str, target: &str) -> Option<String> {
    if target.is_empty() || target.starts_with('/') || target.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    let mut climbing = true;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if climbing => {
                parts.pop()?;
            }
            ".." => return None,
            p => {
                climbing = false;
                parts.push(p);
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The first of `paths` (relative to a release's root) that lies beneath another of them or
/// beneath the release's own `RELEASE.json`, which is then a file or a link, not a directory:
/// `a/l/f` where `a/l` is a link would be written where the link points, which the link's own
/// check ([`link_inside`]) does not cover; `a/f/g` where `a/f` is a file cannot be written at
/// all, nor `RELEASE.json/f` (a directory `RELEASE.json` leaves no room for the description).
fn beneath_entry(paths: &[(String, Entry)]) -> Option<&str> {
    let entries: std::collections::BTreeSet<&str> = paths
        .iter()
        .map(|(p, _)| p.as_str())
        .chain([RELEASE_FILE])
        .collect();
    paths
        .iter()
        .map(|(p, _)| p.as_str())
        .find(|p| p.match_indices('/').any(|(i, _)| entries.contains(&p[..i])))
}

/// A path inside a release: relative, `/`-separated, no empty, `.` or `..` component.
fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
}

/// The longest name of one file, directory or link in a release, in bytes (Linux's
/// `NAME_MAX`; the longest in the 1.1.0 corpus has 48).
pub const MAX_NAME: usize = 255;
/// The longest path in a release archive (its root included) or link target, in bytes (the
/// longest in the 1.1.0 release has 95, a target 64): the cache's own path must leave room
/// for it within Linux's `PATH_MAX` of 4,096.
pub const MAX_PATH: usize = 1024;

/// Why a path or a link target of a release could not be taken as it is, if it could not:
/// more than [`MAX_PATH`] bytes, a NUL byte, a space or another control character, or a name
/// longer than [`MAX_NAME`]. Both readers of a release ask it of every name as they read it:
/// an archive's (`read_archive`, for checking and unpacking alike, so checking refuses what
/// unpacking would fail on) and a directory's (`walk`, for making a release). No space or
/// control character, so that each line of the contents' checksum (`F path sha256`, `L path
/// target`) reads one way only: with a newline or a space in a name, two different releases
/// could give the same lines (a link `a` to `b c` and a link `a b` to `c`). The length is
/// checked first, so no message quotes more than [`MAX_PATH`] bytes of an archive's text.
fn unfit(what: &str, text: &str) -> Option<String> {
    if text.len() > MAX_PATH {
        Some(format!(
            "{what} of {} bytes, more than the {MAX_PATH} allowed",
            text.len()
        ))
    } else if text.contains('\0') {
        Some(format!("{what} {text:?} holds a NUL byte"))
    } else if text.chars().any(|c| c == ' ' || c.is_control()) {
        Some(format!(
            "{what} {text:?} holds a space or a control character"
        ))
    } else if text.split('/').any(|n| n.len() > MAX_NAME) {
        Some(format!(
            "{what} {text:?} holds a name of more than {MAX_NAME} bytes"
        ))
    } else {
        None
    }
}

/// Running totals against the caps.
#[derive(Default)]
struct Budget {
    bytes: u64,
    entries: usize,
}

impl Budget {
    fn entry(&mut self, what: &str) -> Result<(), String> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(format!(
                "{what}: more than {MAX_ENTRIES} files and links (a release holds fewer)"
            ));
        }
        Ok(())
    }

    /// The bytes a file may still have.
    fn left(&self) -> u64 {
        MAX_UNPACKED.saturating_sub(self.bytes)
    }

    fn file(&mut self, what: &str, len: u64) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > MAX_UNPACKED {
            return Err(format!(
                "{what}: more than {MAX_UNPACKED} bytes of files (a release holds fewer)"
            ));
        }
        Ok(())
    }
}

/// What a release holds, written as `RELEASE.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// The corpus version (`corpus_version` of the manifest; `corpus/CHANGELOG.md`).
    pub corpus_version: String,
    /// The manifest's schema version.
    pub manifest_version: String,
    /// Reader cases in the manifest (committed files).
    pub cases: usize,
    /// Large reader cases (listed, generated on demand).
    pub large_cases: usize,
    /// Writer tasks (`writers/**/*.json`).
    pub writer_tasks: usize,
    /// Files and links in the release, this file left out.
    pub files: usize,
    /// SHA-256 of the contents: one line per file (`F path sha256`) or link (`L path
    /// target`), in byte order of the paths (which, like link targets, hold no space or
    /// control character: each line reads one way).
    pub content_sha256: String,
}

/// One entry of a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A symbolic link's target.
    Link(String),
}

fn walk(
    base: &Path,
    rel: &str,
    out: &mut Vec<(String, Entry)>,
    budget: &mut Budget,
) -> Result<(), String> {
    let dir = base.join(rel);
    let entries = fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e
            .file_name()
            .into_string()
            .map_err(|n| format!("{}: a name that is not UTF-8: {n:?}", dir.display()))?;
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if rel.is_empty() && name == RELEASE_FILE {
            continue;
        }
        let path = base.join(&child);
        if let Some(why) = unfit("the path", &child) {
            return Err(format!("{}: {why}", base.display()));
        }
        let t = e
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if t.is_symlink() {
            budget.entry(&base.display().to_string())?;
            let target = fs::read_link(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let target = target
                .to_str()
                .ok_or_else(|| format!("{}: a link target that is not UTF-8", path.display()))?;
            if let Some(why) = unfit(&format!("{child:?} is a link to a target"), target) {
                return Err(format!("{}: {why}", base.display()));
            }
            if !link_inside(&child, target) {
                return Err(format!(
                    "{}: a link to {target:?}, outside the corpus",
                    path.display()
                ));
            }
            out.push((child, Entry::Link(target.to_owned())));
        } else if t.is_dir() {
            walk(base, &child, out, budget)?;
        } else if t.is_file() {
            budget.entry(&base.display().to_string())?;
            let bytes = read_capped(&path, budget.left())?;
            budget.file(&base.display().to_string(), bytes.len() as u64)?;
            out.push((child, Entry::File(bytes)));
        } else {
            return Err(format!(
                "{}: not a file, a directory or a link",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Every file and link under `dir` (its `RELEASE.json` left out), in byte order of paths.
fn contents(dir: &Path) -> Result<Vec<(String, Entry)>, String> {
    let mut out = Vec::new();
    walk(dir, "", &mut out, &mut Budget::default())?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn content_sha256(entries: &[(String, Entry)]) -> String {
    let mut h = Sha256::new();
    for (path, e) in entries {
        let line = match e {
            Entry::File(b) => format!("F {path} {}\n", hex(&Sha256::digest(b))),
            Entry::Link(t) => format!("L {path} {t}\n"),
        };
        h.update(line.as_bytes());
    }
    hex(&h.finalize())
}

/// The release description of a corpus's contents (its `manifest.json` among them).
fn describe(entries: &[(String, Entry)]) -> Result<Release, String> {
    let text = entries
        .iter()
        .find_map(|(p, e)| match e {
            Entry::File(b) if p == "manifest.json" => Some(b),
            _ => None,
        })
        .ok_or("no manifest.json (not a corpus)")?;
    if text.len() as u64 > MAX_MANIFEST {
        return Err(format!(
            "manifest.json: more than the {MAX_MANIFEST} bytes allowed"
        ));
    }
    let m: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("manifest.json: {e}"))?;
    let text_of = |k: &str| {
        m[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("manifest.json has no {k:?}"))
    };
    let count = |k: &str| m[k].as_array().map_or(0, Vec::len);
    let writer_tasks = entries
        .iter()
        .filter(|(p, e)| {
            p.starts_with("writers/") && p.ends_with(".json") && matches!(e, Entry::File(_))
        })
        .count();
    Ok(Release {
        corpus_version: text_of("corpus_version")?,
        manifest_version: text_of("version")?,
        cases: count("cases"),
        large_cases: count("large"),
        writer_tasks,
        files: entries.len(),
        content_sha256: content_sha256(entries),
    })
}

/// The description (`RELEASE.json`) of a release holding `entries` (paths relative to its
/// root, `RELEASE.json` left out, in any order), as [`pack`] writes it: for a tool that builds
/// release archives of its own (the `corpus_archive` fuzz target).
pub fn describe_entries(mut entries: Vec<(String, Entry)>) -> Result<Release, String> {
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    describe(&entries)
}

/// The release of the corpus at `dir`, as it would be packed.
pub fn release_of(dir: &Path) -> Result<Release, String> {
    describe(&contents(dir)?).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The directory name of a release: `stcheck-corpus-<version>`.
pub fn release_name(r: &Release) -> String {
    format!("stcheck-corpus-{}", r.corpus_version)
}

fn release_json(r: &Release) -> Result<Vec<u8>, String> {
    let mut out = serde_json::to_vec_pretty(r).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(out)
}

fn header(kind: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

/// Pack the corpus at `dir` into a reproducible `.tar.gz` at `out`, every entry under
/// `stcheck-corpus-<version>/`, with `RELEASE.json` first. Returns its description.
pub fn pack(dir: &Path, out: &Path) -> Result<Release, String> {
    let entries = contents(dir)?;
    let release = describe(&entries).map_err(|e| format!("{}: {e}", dir.display()))?;
    let root = release_name(&release);
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::new(9));
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut add = |path: &str, kind: tar::EntryType, data: &[u8], link: Option<&str>| {
        let full = format!("{root}/{path}");
        let mode = if kind == tar::EntryType::Directory {
            0o755
        } else {
            0o644
        };
        let mut h = header(kind, data.len() as u64, mode);
        match link {
            Some(target) => tar.append_link(&mut h, &full, target),
            None => tar.append_data(&mut h, &full, data),
        }
        .map_err(|e| format!("{full}: {e}"))
    };
    add(
        RELEASE_FILE,
        tar::EntryType::Regular,
        &release_json(&release)?,
        None,
    )?;
    for (path, e) in &entries {
        match e {
            Entry::File(b) => add(path, tar::EntryType::Regular, b, None)?,
            Entry::Link(t) => add(path, tar::EntryType::Symlink, &[], Some(t))?,
        }
    }
    let gz = tar.into_inner().map_err(|e| e.to_string())?;
    let bytes = gz.finish().map_err(|e| e.to_string())?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    fs::write(out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(release)
}

/// Copy the corpus at `dir` to `out` as an unpacked release (the files and `RELEASE.json`):
/// what a wheel bundles.
pub fn export(dir: &Path, out: &Path) -> Result<Release, String> {
    let entries = contents(dir)?;
    let release = describe(&entries).map_err(|e| format!("{}: {e}", dir.display()))?;
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    write_entries(entries.iter().map(|(p, e)| (p, e)), out, false)?;
    fs::write(out.join(RELEASE_FILE), release_json(&release)?)
        .map_err(|e| format!("{}: {e}", out.join(RELEASE_FILE).display()))?;
    Ok(release)
}

/// Check an unpacked release: its files are those `RELEASE.json` describes.
pub fn verify(dir: &Path) -> Result<Release, String> {
    let path = dir.join(RELEASE_FILE);
    let text = read_capped(&path, MAX_RELEASE_JSON)?;
    let claimed: Release = serde_json::from_slice(&text)
        .map_err(|e| format!("{}: not a release description: {e}", path.display()))?;
    let actual = release_of(dir)?;
    if actual != claimed {
        return Err(format!(
            "{}: the files differ from what {RELEASE_FILE} describes (content {} there, {} \
             here; {} files there, {} here): a damaged or edited release",
            dir.display(),
            claimed.content_sha256,
            actual.content_sha256,
            claimed.files,
            actual.files
        ));
    }
    Ok(claimed)
}

/// A release archive read into memory and checked: its root directory's name, its
/// `RELEASE.json` (bytes and parsed) and its contents, which hash to what that file says.
struct Checked {
    root: String,
    release_json: Vec<u8>,
    release: Release,
    entries: Vec<(String, Entry)>,
}

/// Read a release archive's bytes under the caps and check it against its own description.
fn read_archive(bytes: &[u8], name: &str) -> Result<Checked, String> {
    let bad = |why: String| format!("{name}: not a corpus release archive: {why}");
    // The decompressed stream is capped as a whole (tar headers and padding included), so no
    // header trick reads past it.
    let cap = MAX_UNPACKED + (MAX_ENTRIES as u64 + 16) * 2048;
    let gz = flate2::read::GzDecoder::new(bytes).take(cap);
    let mut tar = tar::Archive::new(gz);
    let mut budget = Budget::default();
    let mut root: Option<String> = None;
    let mut release_json: Option<Vec<u8>> = None;
    let mut entries = Vec::new();
    for entry in tar.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let path = String::from_utf8(entry.path_bytes().into_owned())
            .map_err(|_| bad("a path that is not UTF-8".into()))?;
        let path = path.trim_end_matches('/').to_owned();
        if let Some(why) = unfit("the path", &path) {
            return Err(bad(why));
        }
        if !plain_path(&path) {
            return Err(bad(format!("the path {path:?}")));
        }
        let (top, rel) = path.split_once('/').unwrap_or((path.as_str(), ""));
        match &root {
            None => root = Some(top.to_owned()),
            Some(r) if r != top => {
                return Err(bad(format!("two top directories, {r:?} and {top:?}")));
            }
            Some(_) => {}
        }
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if rel.is_empty() {
            return Err(bad(format!("{path:?} is not inside a directory")));
        }
        budget.entry(name)?;
        if rel == RELEASE_FILE && (!kind.is_file() || release_json.is_some()) {
            // Written out, a link there would take the description's bytes where it points.
            return Err(bad(format!(
                "{path:?} is not the one regular file {RELEASE_FILE}"
            )));
        }
        if kind.is_symlink() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8(t.into_owned()))
                .transpose()
                .map_err(|_| bad(format!("{path:?} is a link to a target that is not UTF-8")))?
                .unwrap_or_default();
            if let Some(why) = unfit(&format!("{path:?} is a link to a target"), &target) {
                return Err(bad(why));
            }
            if !link_inside(rel, &target) {
                return Err(bad(format!(
                    "{path:?} is a link to {target:?}, outside the release"
                )));
            }
            entries.push((rel.to_owned(), Entry::Link(target)));
        } else if kind.is_file() {
            let size = entry.header().size().map_err(|e| bad(e.to_string()))?;
            let cap = if rel == RELEASE_FILE {
                MAX_RELEASE_JSON
            } else {
                budget.left()
            };
            if size > cap {
                return Err(bad(format!("{path:?} is larger than allowed")));
            }
            let mut data = Vec::new();
            (&mut entry)
                .take(cap + 1)
                .read_to_end(&mut data)
                .map_err(|e| bad(e.to_string()))?;
            budget.file(name, data.len() as u64)?;
            if rel == RELEASE_FILE {
                release_json = Some(data);
            } else {
                entries.push((rel.to_owned(), Entry::File(data)));
            }
        } else {
            return Err(bad(format!(
                "{path:?} is neither a file, a directory nor a symbolic link ({kind:?})"
            )));
        }
    }
    let root = root.ok_or_else(|| bad("empty".into()))?;
    let release_json = release_json.ok_or_else(|| bad(format!("no {RELEASE_FILE}")))?;
    let release: Release =
        serde_json::from_slice(&release_json).map_err(|e| bad(format!("{RELEASE_FILE}: {e}")))?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if entries.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(bad("a path listed twice".into()));
    }
    if let Some(p) = beneath_entry(&entries) {
        return Err(bad(format!(
            "{p:?} lies beneath a file or a link of the release"
        )));
    }
    let actual = describe(&entries).map_err(bad)?;
    if actual != release {
        return Err(format!(
            "{name}: its files differ from what its {RELEASE_FILE} describes (content {} \
             there, {} here): a damaged or edited release",
            release.content_sha256, actual.content_sha256
        ));
    }
    Ok(Checked {
        root,
        release_json,
        release,
        entries,
    })
}

/// Check a release archive without unpacking it: read into memory under the caps, its
/// contents compared with its `RELEASE.json`. No directory is written.
pub fn verify_archive(archive: &Path) -> Result<Release, String> {
    let bytes = read_capped(archive, MAX_ARCHIVE)?;
    Ok(read_archive(&bytes, &archive.display().to_string())?.release)
}

/// Write a checked archive's contents under `dir/<root>`.
fn write_out(read: &Checked, dir: &Path) -> Result<(), String> {
    let root = dir.join(&read.root);
    write_entries(read.entries.iter().map(|(p, e)| (p, e)), &root, false)?;
    let to = root.join(RELEASE_FILE);
    fs::write(&to, &read.release_json).map_err(|e| format!("{}: {e}", to.display()))
}

/// Unpack a release archive into a directory under `cache` named after the archive's
/// SHA-256 and return the release's root. The archive is read and checked on every call; the
/// copy in the cache is reused only when its files are those the archive describes (a
/// changed byte, an added or removed file, an edited `RELEASE.json` there: it is unpacked
/// again). A fresh copy is written to a directory of its own in `cache` and moved into place.
pub fn unpack(archive: &Path, cache: &Path) -> Result<(PathBuf, Release), String> {
    let bytes = read_capped(archive, MAX_ARCHIVE)?;
    let read = read_archive(&bytes, &archive.display().to_string())?;
    let key = hex(&Sha256::digest(&bytes));
    let into = cache.join(&key[..16]);
    let root = into.join(&read.root);
    let cached_ok = |root: &Path| {
        release_of(root).is_ok_and(|r| r == read.release)
            && read_capped(&root.join(RELEASE_FILE), MAX_RELEASE_JSON)
                .is_ok_and(|b| b == read.release_json)
            && fs::read_dir(root.parent().unwrap_or(root)).is_ok_and(|d| d.count() == 1)
    };
    if cached_ok(&root) {
        return Ok((root, read.release));
    }
    fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let staging = cache.join(format!(".unpack-{}-{}", std::process::id(), &key[..16]));
    let _ = fs::remove_dir_all(&staging);
    let written = write_out(&read, &staging);
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    let _ = fs::remove_dir_all(&into);
    if fs::rename(&staging, &into).is_err() {
        // Another run put its copy there first; it must check out as well.
        let _ = fs::remove_dir_all(&staging);
    }
    if !cached_ok(&root) {
        let _ = fs::remove_dir_all(&into);
        return Err(format!(
            "{}: the unpacked copy of {} does not match the archive",
            into.display(),
            archive.display()
        ));
    }
    Ok((root, read.release))
}

/// Copy `items` of the corpus at `dir` (paths relative to it: case files, and the
/// directories of index cases, whole) to `out`, read-only: files 0444, directories 0555,
/// links as links, each checked to stay inside the corpus and its target copied too. What an
/// adapter is handed, so that one that writes to its files changes nothing another run
/// reads. Returns the bytes copied.
pub fn copy_read_only(dir: &Path, out: &Path, items: &[String]) -> Result<u64, String> {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let mut budget = Budget::default();
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    let mut queue: Vec<String> = items.to_vec();
    while let Some(item) = queue.pop() {
        if entries.contains_key(&item) || !plain_path(&item) {
            continue;
        }
        let path = dir.join(&item);
        let meta = fs::symlink_metadata(&path).map_err(|e| io(&path, e))?;
        let mut found = Vec::new();
        if meta.is_dir() {
            walk(dir, &item, &mut found, &mut budget)?;
        } else if meta.file_type().is_symlink() {
            budget.entry(&dir.display().to_string())?;
            let target = fs::read_link(&path).map_err(|e| io(&path, e))?;
            let target = target
                .to_str()
                .ok_or_else(|| format!("{}: a link target that is not UTF-8", path.display()))?
                .to_owned();
            found.push((item.clone(), Entry::Link(target)));
        } else {
            budget.entry(&dir.display().to_string())?;
            let bytes = read_capped(&path, budget.left())?;
            budget.file(&dir.display().to_string(), bytes.len() as u64)?;
            found.push((item.clone(), Entry::File(bytes)));
        }
        for (p, e) in found {
            if let Entry::Link(t) = &e {
                let to = link_destination(&p, t).ok_or_else(|| {
                    format!(
                        "{}: a link to {t:?}, outside the corpus",
                        dir.join(&p).display()
                    )
                })?;
                queue.push(to);
            }
            entries.insert(p, e);
        }
    }
    let bytes = write_entries(entries.iter(), out, true)?;
    // The directories last, deepest first, so each is still writable while it is filled.
    let mut dirs = std::collections::BTreeSet::new();
    for path in entries.keys() {
        let mut parent = out.join(path).parent().map(Path::to_path_buf);
        while let Some(p) = parent.filter(|p| p.starts_with(out) && p != out) {
            parent = p.parent().map(Path::to_path_buf);
            dirs.insert(p);
        }
    }
    for d in dirs.iter().rev() {
        fs::set_permissions(d, fs::Permissions::from_mode(0o555)).map_err(|e| io(d, e))?;
    }
    Ok(bytes)
}

/// Write entries under `root` (files 0444 when `read_only`); returns the bytes of files.
fn write_entries<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Entry)>,
    root: &Path,
    read_only: bool,
) -> Result<u64, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut bytes = 0u64;
    for (path, e) in entries {
        let to = root.join(path);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        match e {
            Entry::File(b) => {
                bytes += b.len() as u64;
                fs::write(&to, b).and_then(|()| {
                    if read_only {
                        fs::set_permissions(&to, fs::Permissions::from_mode(0o444))
                    } else {
                        Ok(())
                    }
                })
            }
            Entry::Link(t) => std::os::unix::fs::symlink(t, &to),
        }
        .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(bytes)
}

/// Make the directories under `dir` writable again (so a read-only copy can be removed).
pub fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            make_writable(&e.path());
        }
    }
}
