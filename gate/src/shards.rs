//! Shards of an index on the file system: [`FsSource`], a [`ShardSource`] that opens each
//! shard with the gate's file-system policy ([`crate::fs`]) and reads it as the run says.

use std::path::{Path, PathBuf};

use stcheck::index::ShardSource;
use stcheck::{Checked, Config, ReadError, ReadErrorKind, ReadMode};

use crate::fs::{Checkpoint, FileId, FileKind, LinkPolicy, LinkTarget, NotChecked, Root};

/// Shards in a directory of the file system, opened with the policy of [`crate::fs`]: regular
/// files only, never blocking on a FIFO or device, links followed only inside the root (or,
/// with [`FsSource::allow_outside_links`], to regular files outside it), and read as
/// [`ReadMode`] says.
#[derive(Debug, Clone)]
pub struct FsSource {
    dir: PathBuf,
    root: Option<PathBuf>,
    links: LinkPolicy,
    mode: ReadMode,
}

impl FsSource {
    /// The shards next to the index at `index_path`.
    pub fn for_index(index_path: &Path) -> Self {
        let dir = match index_path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        FsSource {
            dir,
            root: None,
            links: LinkPolicy::confined(),
            mode: ReadMode::Read,
        }
    }

    /// Accept shards that are symbolic links to regular files outside the root (as in the
    /// Hub's download cache, where snapshot files link to `../../blobs/`). Default: refused
    /// with `INDEX-SHARD-LINK`, whose message names the option that accepts them.
    pub fn allow_outside_links(mut self, yes: bool) -> Self {
        self.links = self.links.follow_outside(yes);
        self
    }

    /// The link policy (which option messages name, whether outside links are followed).
    pub fn link_policy(mut self, links: LinkPolicy) -> Self {
        self.links = links;
        self
    }

    /// The directory within which shard links must resolve: the directory the user named,
    /// when the index was found by walking it. Default: the index's directory.
    pub fn confine_to(mut self, root: &Path) -> Self {
        self.root = Some(root.to_path_buf());
        self
    }

    /// How shards are read. Default: [`ReadMode::Read`].
    pub fn read_mode(mut self, mode: ReadMode) -> Self {
        self.mode = mode;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of the shard `name` if the link policy lets it be opened, with the identity
    /// of the file it leads to.
    pub fn resolve(&self, name: &str) -> Result<(PathBuf, Option<FileId>), ReadError> {
        let path = self.dir.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ReadError::new(ReadErrorKind::NotFound, "no such file")
            } else {
                ReadError::from(e)
            }
        })?;
        if !meta.file_type().is_symlink() {
            return Ok((path, FileId::of(&meta)));
        }
        let root = Root::new(self.root.as_deref().unwrap_or(&self.dir))?;
        match crate::fs::follow_link(&path, &root, &self.links)? {
            LinkTarget::File { id, .. } => Ok((path, id)),
            LinkTarget::Dir { .. } => Err(NotChecked::NotRegular(FileKind::Directory).into()),
        }
    }

    /// Open the shard `name` (a plain file name) under the link policy, as a regular file
    /// that is still the one [`FsSource::resolve`] judged.
    pub fn open(&self, name: &str) -> Result<crate::fs::RegularFile, ReadError> {
        let (path, expected) = self.resolve(name)?;
        let file = crate::fs::open_regular(&path)?;
        if file.id() != expected {
            return Err(NotChecked::Changed.into());
        }
        Ok(file)
    }

    /// [`ShardSource::check`], telling `progress` how far the shard's check got (see
    /// [`stcheck::Progress`]).
    pub fn check_with(
        &self,
        name: &str,
        config: &Config,
        progress: &dyn stcheck::Progress,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        let file = self.open(name)?;
        stcheck::check_opened(file.file(), file.stamp(), config, self.mode, progress, f)
    }
}

impl ShardSource for FsSource {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            if crate::fs::checkpoint_kind(&name) == Some(Checkpoint::Safetensors) {
                out.push(crate::fs::name_for_listing(&name).into_owned());
            }
        }
        Ok(out)
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        self.check_with(name, config, &|_: u64| {}, f)
    }
}
