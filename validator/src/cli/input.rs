//! Turning the PATH arguments into a list of jobs, walking directories.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use stcheck::index::INDEX_SUFFIX;

/// One unit of work, in output order.
#[derive(Debug)]
pub(crate) enum Job {
    /// A safetensors file.
    File(PathBuf),
    /// A `*.safetensors.index.json` and its shards.
    Index(PathBuf),
    /// Standard input.
    Stdin,
    /// A symbolic link met while walking, not followed.
    SkippedLink(PathBuf),
    /// A directory that could not be read.
    WalkError(PathBuf, io::Error),
}

fn is_index(name: &str) -> bool {
    name.ends_with(INDEX_SUFFIX)
}

fn is_safetensors(name: &str) -> bool {
    name.ends_with(".safetensors")
}

/// Expand the command-line paths. A path named on the command line is taken as given
/// (links followed); links met inside directories are reported unless `follow_links`.
pub(crate) fn expand(paths: &[OsString], follow_links: bool) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut visited = HashSet::new();
    for p in paths {
        if p == "-" {
            jobs.push(Job::Stdin);
            continue;
        }
        let path = PathBuf::from(p);
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk(&path, follow_links, &mut visited, &mut jobs),
            _ => {
                // Files, and paths that fail: the check reports the error in order.
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if is_index(name) {
                    jobs.push(Job::Index(path));
                } else {
                    jobs.push(Job::File(path));
                }
            }
        }
    }
    jobs
}

fn walk(dir: &Path, follow: bool, visited: &mut HashSet<PathBuf>, jobs: &mut Vec<Job>) {
    // Loop protection when following links: each real directory is walked once.
    if let Ok(real) = fs::canonicalize(dir) {
        if !visited.insert(real) {
            return;
        }
    }
    let entries = match fs::read_dir(dir) {
        Ok(rd) => rd.collect::<Result<Vec<_>, _>>(),
        Err(e) => Err(e),
    };
    let mut entries = match entries {
        Ok(e) => e,
        Err(e) => {
            jobs.push(Job::WalkError(dir.to_path_buf(), e));
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_str().unwrap_or("");
        let ty = match entry.file_type() {
            Ok(t) => t,
            Err(e) => {
                jobs.push(Job::WalkError(path, e));
                continue;
            }
        };
        let (is_dir, is_file) = if ty.is_symlink() {
            let target = fs::metadata(&path);
            let target_dir = target.as_ref().is_ok_and(|m| m.is_dir());
            if !follow {
                if target_dir || is_index(name) || is_safetensors(name) {
                    jobs.push(Job::SkippedLink(path));
                }
                continue;
            }
            match target {
                Ok(m) => (m.is_dir(), !m.is_dir()),
                // A broken link with a matching name: the check reports it.
                Err(_) => (false, true),
            }
        } else {
            (ty.is_dir(), !ty.is_dir())
        };
        if is_dir {
            walk(&path, follow, visited, jobs);
        } else if is_file {
            if is_index(name) {
                jobs.push(Job::Index(path));
            } else if is_safetensors(name) {
                jobs.push(Job::File(path));
            }
        }
    }
}
