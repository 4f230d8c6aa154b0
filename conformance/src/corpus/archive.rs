//! Versioned corpus releases: `corpus/` (the reader cases, the writer tasks, the recipes and
//! the documents) packed into one reproducible `.tar.gz` with a `RELEASE.json` that gives the
//! corpus version, the manifest version, the case counts and a checksum of the contents; and
//! the way back, an archive unpacked and checked before a runner uses it.
//!
//! The archive is the same bytes every time it is built from the same files: entries in byte
//! order of their paths, no timestamps (mtime 0, in the tar headers and the gzip header), no
//! owners, modes 0644/0755, a fixed compression level.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The name of the release description at the root of a release.
pub const RELEASE_FILE: &str = "RELEASE.json";

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
    /// target`), in byte order of the paths.
    pub content_sha256: String,
}

/// One entry of a release.
enum Entry {
    File(Vec<u8>),
    Link(String),
}

fn walk(base: &Path, rel: &str, out: &mut Vec<(String, Entry)>) -> Result<(), String> {
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
        let t = e
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if t.is_symlink() {
            let target = fs::read_link(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let target = target
                .to_str()
                .ok_or_else(|| format!("{}: a link target that is not UTF-8", path.display()))?;
            out.push((child, Entry::Link(target.to_owned())));
        } else if t.is_dir() {
            walk(base, &child, out)?;
        } else if t.is_file() {
            let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
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
    walk(dir, "", &mut out)?;
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

/// The release description of the corpus at `dir`.
fn describe(dir: &Path, entries: &[(String, Entry)]) -> Result<Release, String> {
    let text = fs::read_to_string(dir.join("manifest.json"))
        .map_err(|e| format!("{}: {e}", dir.join("manifest.json").display()))?;
    let m: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
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

/// The release of the corpus at `dir`, as it would be packed.
pub fn release_of(dir: &Path) -> Result<Release, String> {
    describe(dir, &contents(dir)?)
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
    let release = describe(dir, &entries)?;
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
    let release = describe(dir, &entries)?;
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    for (path, e) in &entries {
        let to = out.join(path);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        match e {
            Entry::File(b) => fs::write(&to, b),
            Entry::Link(t) => std::os::unix::fs::symlink(t, &to),
        }
        .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    fs::write(out.join(RELEASE_FILE), release_json(&release)?)
        .map_err(|e| format!("{}: {e}", out.join(RELEASE_FILE).display()))?;
    Ok(release)
}

/// Check an unpacked release: its files are those `RELEASE.json` describes.
pub fn verify(dir: &Path) -> Result<Release, String> {
    let path = dir.join(RELEASE_FILE);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let claimed: Release = serde_json::from_str(&text)
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

/// Unpack a release archive into a directory under `cache` named after the archive's
/// SHA-256 (reused when it is there and intact), check it, and return the release's root.
pub fn unpack(archive: &Path, cache: &Path) -> Result<(PathBuf, Release), String> {
    let mut bytes = Vec::new();
    fs::File::open(archive)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", archive.display()))?;
    let key = hex(&Sha256::digest(&bytes));
    let into = cache.join(&key[..16]);
    let root_of = |into: &Path| -> Result<PathBuf, String> {
        let mut roots = fs::read_dir(into)
            .map_err(|e| format!("{}: {e}", into.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir());
        match (roots.next(), roots.next()) {
            (Some(root), None) => Ok(root),
            _ => Err(format!(
                "{}: a release archive holds one directory",
                archive.display()
            )),
        }
    };
    if let Ok(root) = root_of(&into) {
        if let Ok(r) = verify(&root) {
            return Ok((root, r));
        }
    }
    let _ = fs::remove_dir_all(&into);
    fs::create_dir_all(&into).map_err(|e| format!("{}: {e}", into.display()))?;
    let gz = flate2::read::GzDecoder::new(bytes.as_slice());
    let mut tar = tar::Archive::new(gz);
    // `unpack` keeps every entry inside `into` (no absolute paths, no `..`).
    tar.unpack(&into)
        .map_err(|e| format!("{}: not a corpus archive: {e}", archive.display()))?;
    let root = root_of(&into)?;
    let r = verify(&root)?;
    Ok((root, r))
}
