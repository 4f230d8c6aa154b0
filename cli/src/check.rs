//! Running one job: a file, standard input, or a sharded checkpoint with its shards. Every
//! file goes through the library's one checker (`stcheck::check_file`, `check_reader`, or the
//! index's shard source, which calls `check_file` too), with the same `Config`; the job only
//! chooses where the bytes come from and hands the result to the output.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use stcheck::index::{self, IndexReport, ShardOutcome, ShardSource};
use stcheck::{Checked, Config, Progress, ReadError};

use super::args::Options;
use stcheck_gate::shards::FsSource;
use stcheck_gate::walk::Job;

/// Check the file at `path`, handing the result to `f` while its bytes are still mapped.
pub(crate) fn file<T>(
    path: &Path,
    config: &Config,
    o: &Options,
    progress: &dyn Progress,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<T, ReadError> {
    let file =
        stcheck_gate::fs::open_regular(path).map_err(|e| ReadError::from(e).with_path(path))?;
    stcheck::check_file_with(file.file(), config, o.mode, progress, f)
}

/// Check standard input (always one forward pass; a copy to a temporary file when the
/// reference verdict needs the whole file).
pub(crate) fn stdin(
    config: &Config,
    progress: &dyn Progress,
) -> Result<Checked<'static>, ReadError> {
    stcheck::check_reader_with(std::io::stdin().lock(), config, progress)
}

/// Read an index file: at most one byte past the limit (a longer index is rejected without
/// reading it).
fn read_index(path: &Path, config: &Config) -> Result<Vec<u8>, ReadError> {
    let (file, _) = stcheck_gate::fs::open_regular(path)
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

/// The shards of an index on the file system, each check telling the job's progress hook.
struct Watched<'p> {
    source: FsSource,
    progress: &'p dyn Progress,
}

impl ShardSource for Watched<'_> {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        self.source.list()
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        self.source.check_with(name, config, self.progress, f)
    }
}

/// Check a sharded checkpoint, handing each shard's outcome to `on_shard` as it comes.
pub(crate) fn index(
    path: &Path,
    root: Option<&Path>,
    config: &Config,
    o: &Options,
    progress: &dyn Progress,
    on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>),
) -> Result<IndexReport, ReadError> {
    let bytes = read_index(path, config)?;
    let source = Watched {
        source: source(path, root, o),
        progress,
    };
    index::check_index_with(&bytes, &source, config, on_shard)
}

/// The (device, inode) of a path's file, following links, and its length.
fn identity(path: &Path) -> Option<((u64, u64), u64)> {
    std::fs::metadata(path)
        .ok()
        .map(|m| ((m.dev(), m.ino()), m.len()))
}

/// The jobs to run, with the bytes each is expected to read (for the progress bar by bytes):
/// a file's size, the sum of an index's shards, 0 for what is not read; and `None` as the total
/// when standard input is among them.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) jobs: Vec<Job>,
    pub(crate) bytes: Vec<u64>,
    pub(crate) total_bytes: Option<u64>,
}

/// A file met both as a shard of an index and on its own is read once: as part of the index.
/// Drops the file jobs whose file an index job names as a shard, and sizes the jobs (the
/// shards of an index only when `size_shards`: the progress bar counts bytes).
pub(crate) fn plan(jobs: Vec<Job>, o: &Options, size_shards: bool) -> Plan {
    let read_indexes = size_shards || jobs.iter().any(|j| matches!(j, Job::File(_)));
    let mut shards: HashSet<(u64, u64)> = HashSet::new();
    let mut index_bytes: Vec<u64> = Vec::new();
    for job in &jobs {
        let Job::Index(path, root) = job else {
            continue;
        };
        let mut sum = 0u64;
        if !read_indexes {
            index_bytes.push(sum);
            continue;
        }
        if let Ok(bytes) = read_index(path, &o.config) {
            let src = source(path, root.as_deref(), o);
            let mut seen = HashSet::new();
            let mut last = String::new();
            index::visit_shard_names(&bytes, &o.config, &mut |name| {
                // Entries in a row usually name one shard: look it up once.
                if name == last {
                    return std::ops::ControlFlow::Continue(());
                }
                name.clone_into(&mut last);
                // A shard the index cannot open is reported there; a file of the walk that the
                // index cannot reach stays a job of its own.
                if let Ok((shard, _)) = src.resolve(name) {
                    if let Some((id, len)) = identity(&shard) {
                        shards.insert(id);
                        if seen.insert(id) {
                            sum = sum.saturating_add(len);
                        }
                    }
                }
                std::ops::ControlFlow::Continue(())
            });
        }
        index_bytes.push(sum);
    }
    let mut index_bytes = index_bytes.into_iter();
    let mut total = Some(0u64);
    let mut sized = Vec::with_capacity(jobs.len());
    let mut bytes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let n = match &job {
            Job::File(path) => match identity(path) {
                Some((id, _)) if shards.contains(&id) => continue,
                Some((_, len)) => len,
                None => 0,
            },
            Job::Index(..) => index_bytes.next().unwrap_or(0),
            Job::Stdin => {
                total = None;
                0
            }
            // A URL's length is known only once it is checked (and the remote source has no
            // progress hook yet): it adds nothing to the bar's total.
            Job::Url(_) | Job::NotChecked(..) | Job::WalkError(..) => 0,
        };
        total = total.map(|t| t.saturating_add(n));
        sized.push(job);
        bytes.push(n);
    }
    Plan {
        jobs: sized,
        bytes,
        total_bytes: total,
    }
}
