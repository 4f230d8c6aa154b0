//! Running one job: a file, standard input, or a sharded checkpoint with its shards. Every
//! file goes through the library's one checker (`stcheck::check_file`, `check_reader`, or the
//! index's shard source, which calls `check_file` too), with the same `Config`; the job only
//! chooses where the bytes come from and hands the result to the output.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use stcheck::index::{self, FsSource, IndexReport, ShardOutcome};
use stcheck::{Checked, Config, ReadError};

use super::args::Options;
use super::input::Job;

/// Check the file at `path`, handing the result to `f` while its bytes are still mapped.
pub(crate) fn file<T>(
    path: &Path,
    config: &Config,
    o: &Options,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<T, ReadError> {
    let file = stcheck::fs::open_regular(path).map_err(|e| ReadError::from(e).with_path(path))?;
    stcheck::check_file(file.file(), config, o.mode, f)
}

/// Check standard input (always one forward pass; a copy to a temporary file when the
/// reference verdict needs the whole file).
pub(crate) fn stdin(config: &Config) -> Result<Checked<'static>, ReadError> {
    stcheck::check_reader(std::io::stdin().lock(), config)
}

/// Read an index file: at most one byte past the limit (a longer index is rejected without
/// reading it).
fn read_index(path: &Path, config: &Config) -> Result<Vec<u8>, ReadError> {
    let (file, _) = stcheck::fs::open_regular(path)
        .map_err(|e| ReadError::from(e).with_path(path))?
        .into_parts();
    let mut bytes = Vec::new();
    file.take(config.header_limit().saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::from(e).with_path(path))?;
    Ok(bytes)
}

/// The shard source of an index at `path`, reading shards as the options say; shard links
/// must stay inside `root` (the directory named on the command line that the index was found
/// under), by default the index's directory.
fn source(path: &Path, root: Option<&Path>, o: &Options) -> FsSource {
    let s = FsSource::for_index(path)
        .allow_outside_links(o.follow_links)
        .read_mode(o.mode);
    match root {
        Some(r) => s.confine_to(r),
        None => s,
    }
}

/// Check a sharded checkpoint, handing each shard's outcome to `on_shard` as it comes.
pub(crate) fn index(
    path: &Path,
    root: Option<&Path>,
    config: &Config,
    o: &Options,
    on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>),
) -> Result<IndexReport, ReadError> {
    let bytes = read_index(path, config)?;
    index::check_index_with(&bytes, &source(path, root, o), config, on_shard)
}

/// The (device, inode) of a path's file, following links.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// A file met both as a shard of an index and on its own is read once: as part of the index.
/// Drops the file jobs whose file an index job names as a shard.
pub(crate) fn fold_shards(jobs: Vec<Job>, o: &Options) -> Vec<Job> {
    if !jobs.iter().any(|j| matches!(j, Job::File(_))) {
        return jobs;
    }
    let mut shards: HashSet<(u64, u64)> = HashSet::new();
    for job in &jobs {
        let Job::Index(path, root) = job else {
            continue;
        };
        let Ok(bytes) = read_index(path, &o.config) else {
            continue;
        };
        let src = source(path, root.as_deref(), o);
        for name in index::shard_names(&bytes, &o.config) {
            // A shard the index cannot open is reported there; a file of the walk that the
            // index cannot reach stays a job of its own.
            if let Ok((shard, _)) = src.resolve(&name) {
                if let Some(id) = identity(&shard) {
                    shards.insert(id);
                }
            }
        }
    }
    if shards.is_empty() {
        return jobs;
    }
    jobs.into_iter()
        .filter(|job| match job {
            Job::File(path) => identity(path).is_none_or(|id| !shards.contains(&id)),
            _ => true,
        })
        .collect()
}
