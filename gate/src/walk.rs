//! Turning the PATH arguments into a list of targets, with the file-system policy of
//! [`crate::fs`]: a path named on the command line is taken as given (a link is followed, to a
//! regular file or a directory); below a directory, what looks like a checkpoint is either a
//! job or reported as not checked.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::PathBuf;

use crate::fs::{checkpoint_kind, Checkpoint, FileKind, LinkPolicy, NotChecked, WalkEntry, Walker};

/// One unit of work, in output order.
#[derive(Debug)]
pub enum Target {
    /// A safetensors file.
    File(PathBuf),
    /// A `*.safetensors.index.json` and its shards, with the directory named on the command
    /// line that it was found under (its shards' links must stay inside it), if any.
    Index(PathBuf, Option<PathBuf>),
    /// Standard input.
    Stdin,
    /// A file or an index on an HTTP(S) server (`http://`, `https://`, `hf://`). A whole
    /// repository on the hub (`hf://org/repo[@revision]`) is listed by [`crate::Gate::plan`]
    /// into the targets of its files.
    Url(String),
    /// An address that is not checked: a repository whose files could not be listed, or a
    /// file of a repository in another weight format than safetensors.
    UrlNotChecked(String, stcheck::ReadError),
    /// A path that looks like a checkpoint (or a directory that could hold one, or a
    /// directory with nothing to check) that is not checked: a failure of the run.
    NotChecked(PathBuf, stcheck::ReadError),
    /// A path that could not be read while walking.
    WalkError(PathBuf, io::Error),
}

impl Target {
    /// The text every output shows for it (the `at.text` of its events): a path escaped, an
    /// address without its secrets, `<stdin>`.
    pub fn shown(&self) -> String {
        match self {
            Target::File(p)
            | Target::Index(p, _)
            | Target::NotChecked(p, _)
            | Target::WalkError(p, _) => crate::fs::display_path(p),
            Target::Url(url) | Target::UrlNotChecked(url, _) => crate::target::shown_url(url),
            Target::Stdin => "<stdin>".to_owned(),
        }
    }
}

/// What a path named on the command line is.
enum Named {
    Stdin,
    Url(String),
    Dir(PathBuf),
    /// A regular file, or a path that cannot be stat'ed: the check reports the error in order.
    File(PathBuf),
    Special(PathBuf, FileKind),
}

// A method of the options, kept beside the targets it judges: the options module does not
// know the walk's targets (the walk depends on the options, not the other way round).
impl crate::options::RunOptions {
    /// With `--expect-sha256`, the run must check exactly one file (a path, standard input or
    /// a URL of a file; a repository of one file too, once [`crate::Gate::plan`] listed it): a hash
    /// given for several files, a directory walked or a sharded set is a usage error, as is
    /// a run with nothing else to check.
    pub fn one_file(&self, targets: &[Target]) -> Result<(), crate::options::UsageError> {
        if self.expect_sha256.is_none() {
            return Ok(());
        }
        let name = self.name(crate::options::Opt::ExpectSha256);
        match targets {
            [Target::File(_) | Target::Stdin] => Ok(()),
            [Target::Url(u)] if !crate::target::names_index(u) => Ok(()),
            [Target::Index(..)] | [Target::Url(_)] => Err(crate::options::UsageError(format!(
                "{name} gives the SHA-256 of one file, and a sharded set has several: check \
                 each shard with its own"
            ))),
            [_] => Err(crate::options::UsageError(format!(
                "{name} gives the SHA-256 of one file, and the one target is not a file to check"
            ))),
            _ => Err(crate::options::UsageError(format!(
                "{name} gives the SHA-256 of one file, and the run has {} targets (a \
                 directory's files, a repository's files and each PATH count): check one file",
                targets.len()
            ))),
        }
    }
}

/// Expand the command-line paths into targets as a run's options say: links, empty
/// directories, files of other weight formats (each face's option names in the messages).
pub fn expand_for(paths: &[OsString], options: &crate::options::RunOptions) -> Vec<Target> {
    use crate::options::Opt;
    let walker = Walker::new(options.link_policy())
        .allow_empty(options.allow_empty)
        .empty_option_name(options.name(Opt::AllowEmpty))
        .allow_other_formats(options.allow_other_formats)
        .other_formats_option_name(options.name(Opt::AllowOtherFormats))
        // Validated by RunOptions::resolve; a pattern that does not compile excludes nothing
        // (checking more, never less).
        .exclude(options.exclude_globs().unwrap_or_default());
    let targets = expand_with(paths, walker);
    if options.with_sets {
        with_sets(targets)
    } else {
        targets
    }
}

/// The targets, each named `*.safetensors` file followed (once) by the indexes of its
/// directory that are not targets already. The shards an index names are then left to it
/// by the plan ([`crate::Gate::plan`]).
fn with_sets(targets: Vec<Target>) -> Vec<Target> {
    use std::collections::HashSet;
    let mut seen: HashSet<PathBuf> = targets
        .iter()
        .filter_map(|t| match t {
            Target::Index(p, _) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let mut dirs_done: HashSet<PathBuf> = HashSet::new();
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let dir = match &t {
            Target::File(p) => Some(match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            }),
            _ => None,
        };
        let prefix_dot =
            matches!(&t, Target::File(p) if p.parent().is_some_and(|d| d.as_os_str().is_empty()));
        out.push(t);
        let Some(dir) = dir else { continue };
        if !dirs_done.insert(dir.clone()) {
            continue;
        }
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut indexes: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| checkpoint_kind(&e.file_name()) == Some(Checkpoint::Index))
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| {
                if prefix_dot {
                    PathBuf::from(e.file_name())
                } else {
                    dir.join(e.file_name())
                }
            })
            .collect();
        indexes.sort();
        for index in indexes {
            if seen.insert(index.clone()) {
                out.push(Target::Index(index, None));
            }
        }
    }
    out
}

/// Expand the command-line paths into targets: links judged by `links`, and a directory with
/// nothing to check not checked unless `allow_empty` (whose option is named `empty_option`);
/// files of other weight formats found in a directory are reported (see [`expand_for`]).
pub fn expand(
    paths: &[OsString],
    links: LinkPolicy,
    allow_empty: bool,
    empty_option: &'static str,
) -> Vec<Target> {
    let walker = Walker::new(links)
        .allow_empty(allow_empty)
        .empty_option_name(empty_option);
    expand_with(paths, walker)
}

fn expand_with(paths: &[OsString], mut walker: Walker) -> Vec<Target> {
    let named: Vec<Named> = paths
        .iter()
        .map(|p| {
            if p == "-" {
                return Named::Stdin;
            }
            if let Some(url) = p.to_str().filter(|s| crate::target::is_url(s)) {
                return Named::Url(url.to_owned());
            }
            let path = PathBuf::from(p);
            match fs::metadata(&path).map(|m| FileKind::of(m.file_type())) {
                Ok(FileKind::Directory) => Named::Dir(path),
                Ok(FileKind::Regular) | Err(_) => Named::File(path),
                Ok(kind) => Named::Special(path, kind),
            }
        })
        .collect();
    for n in &named {
        if let Named::Dir(d) = n {
            walker.declare_root(d);
        }
    }
    let mut targets = Vec::new();
    for n in named {
        match n {
            Named::Stdin => targets.push(Target::Stdin),
            Named::Url(url) => targets.push(Target::Url(url)),
            Named::File(path) => {
                let is_index = path
                    .file_name()
                    .is_some_and(|n| checkpoint_kind(n) == Some(Checkpoint::Index));
                targets.push(if is_index {
                    Target::Index(path, None)
                } else {
                    Target::File(path)
                });
            }
            Named::Special(path, kind) => {
                targets.push(Target::NotChecked(
                    path,
                    NotChecked::NotRegular(kind).into(),
                ));
            }
            Named::Dir(root) => {
                for entry in walker.walk(&root) {
                    targets.push(match entry {
                        WalkEntry::Checkpoint {
                            path,
                            kind: Checkpoint::Safetensors,
                            ..
                        } => Target::File(path),
                        WalkEntry::Checkpoint {
                            path,
                            kind: Checkpoint::Index,
                            ..
                        } => Target::Index(path, Some(root.clone())),
                        WalkEntry::NotChecked {
                            path,
                            reason: NotChecked::Io(e),
                        } => Target::WalkError(path, e),
                        WalkEntry::NotChecked { path, reason } => {
                            Target::NotChecked(path, reason.into())
                        }
                    });
                }
            }
        }
    }
    targets
}
