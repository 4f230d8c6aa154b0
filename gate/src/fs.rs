//! The file system as a gate sees it: opening only regular files without ever blocking, the
//! symbolic-link policy, and a directory walker that reports every path it could not check.
//!
//! The policy (SPEC.md, "Paths, links, special files and empty runs"): a path that looks like
//! a checkpoint ([`checkpoint_kind`]) is either checked or reported with a [`NotChecked`]
//! reason, which a caller must count as a failure. Nothing is dropped silently.
//!
//! - **Regular files only.** The file type is decided with `stat` before anything is opened,
//!   and the open itself is non-blocking (`O_NONBLOCK`) and confirmed with `fstat`, so a FIFO,
//!   socket or device, even one swapped in between, is reported as
//!   [`NotChecked::NotRegular`] at once instead of blocking in `open` ([`open_regular`]).
//! - **Links stay inside the root.** A symbolic link met under a [`Root`] (a directory named by
//!   the user) is followed when its fully resolved target stays below the root. A link to a
//!   regular file outside it is [`NotChecked::LinkLeavesRoot`] unless the [`LinkPolicy`]
//!   follows outside links (`--follow-links`); it is never followed to anything but a regular
//!   file. Links to directories are never walked: a directory below the root is walked under
//!   its own path anyway, and one outside every root is [`NotChecked::DirLinkLeavesRoot`]
//!   whatever the policy, so a walk never leaves the roots and a link cannot make it loop.
//! - **Names are bytes.** Paths are `OsString`s; a name that is not UTF-8 is matched on its
//!   bytes, checked like any other, and shown with its bad bytes escaped ([`display_path`]).
//! - **Nothing found is a failure**: a root whose walk finds no checkpoint path is
//!   [`NotChecked::Empty`] unless empty roots are allowed ([`Walker::allow_empty`]).
//! - **Identity.** [`FileId`] (device, inode) names a file whatever path reached it, so a file
//!   met twice (as a shard and in a walk, through a link and directly) can be read once, and a
//!   file replaced between the decision and the open is caught ([`NotChecked::Changed`]).
//!
//! **Why not `walkdir`.** The walker is hand-written on `std::fs::read_dir`, on purpose. What
//! `walkdir` adds is loop detection and `same_file_system` for walks that follow links to
//! directories, which this walker never does (above). What the gate needs is per entry: the
//! root-confined resolution of a file link, the `NotChecked` reason for each path it does not
//! check, the empty-root rule, and the non-blocking open; `walkdir` provides none of them, so
//! with it the policy code would stay and only the `read_dir` recursion (a few dozen lines)
//! would go, at the cost of a dependency and its own error type in every report.
//!
//! ```
//! use stcheck_gate::fs::{checkpoint_kind, Checkpoint};
//! use std::ffi::OsStr;
//!
//! assert_eq!(checkpoint_kind(OsStr::new("m.safetensors")), Some(Checkpoint::Safetensors));
//! assert_eq!(checkpoint_kind(OsStr::new("m.safetensors.index.json")), Some(Checkpoint::Index));
//! assert_eq!(checkpoint_kind(OsStr::new("pytorch_model.bin")), None);
//! ```

use std::borrow::Cow;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fmt::{self, Write as _};
use std::fs::{self, File, FileType, Metadata, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use stcheck::index::INDEX_SUFFIX;
use stcheck::{ReadError, ReadErrorKind};

/// The file name suffix of a safetensors file.
pub const SAFETENSORS_SUFFIX: &str = ".safetensors";

/// The command-line option that follows links leaving the root (the default name in messages;
/// the CLI row of the option table, [`crate::options::OPTIONS`]).
pub const FOLLOW_LINKS_OPTION: &str = "--follow-links";

/// The command-line option that accepts a root with nothing to check (the default name in
/// messages).
pub const ALLOW_EMPTY_OPTION: &str = "--allow-empty";

/// What a file name says a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Checkpoint {
    /// `*.safetensors`.
    Safetensors,
    /// `*.safetensors.index.json`, a sharded checkpoint.
    Index,
}

/// Whether `b` ends with `suffix`, ASCII letters in any case.
fn ends_with_any_case(b: &[u8], suffix: &str) -> bool {
    b.len() >= suffix.len() && b[b.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

/// Whether a file name looks like a checkpoint, matched on its bytes with ASCII letters in any
/// case (`Model.SAFETENSORS` is checked: a gate that skipped it would pass it unseen), so a
/// name that is not UTF-8 is matched like any other.
pub fn checkpoint_kind(name: &OsStr) -> Option<Checkpoint> {
    let b = name.as_encoded_bytes();
    if ends_with_any_case(b, INDEX_SUFFIX) {
        Some(Checkpoint::Index)
    } else if ends_with_any_case(b, SAFETENSORS_SUFFIX) {
        Some(Checkpoint::Safetensors)
    } else {
        None
    }
}

/// The weight formats other than safetensors that a gate names rather than passes silently:
/// (file name suffix, any case; what it is).
pub const OTHER_FORMATS: &[(&str, &str)] = &[
    (".bin", "PyTorch pickle (.bin)"),
    (".pt", "PyTorch pickle (.pt)"),
    (".pth", "PyTorch pickle (.pth)"),
    (".ckpt", "checkpoint, usually a pickle (.ckpt)"),
    (".pkl", "pickle (.pkl)"),
    (".pickle", "pickle (.pickle)"),
    (".joblib", "joblib pickle (.joblib)"),
    (".gguf", "GGUF (.gguf)"),
    (".ggml", "GGML (.ggml)"),
    (".h5", "HDF5, Keras or TensorFlow (.h5)"),
    (".hdf5", "HDF5 (.hdf5)"),
    (".keras", "Keras archive (.keras)"),
    (".msgpack", "Flax msgpack (.msgpack)"),
    (".onnx", "ONNX (.onnx)"),
    (".tflite", "TensorFlow Lite (.tflite)"),
    (".npz", "NumPy archive, may hold pickles (.npz)"),
    (".npy", "NumPy array, may hold a pickle (.npy)"),
];

/// The weight format a file name says a file is in, if it is one of [`OTHER_FORMATS`] (the
/// one classification of local walks and of a hub repository's listing).
pub fn other_format(name: &OsStr) -> Option<&'static str> {
    other_format_entry(name).map(|&(_, what)| what)
}

fn other_format_entry(name: &OsStr) -> Option<&'static (&'static str, &'static str)> {
    let b = name.as_encoded_bytes();
    OTHER_FORMATS
        .iter()
        .find(|(suffix, _)| b.len() > suffix.len() && ends_with_any_case(b, suffix))
}

/// What a file that [`other_format`] names is, for [`NotChecked::OtherFormat`]: named by its
/// first bytes ([`stcheck::format_of`]: a pickle by its opcodes, torch's ZIP, GGUF, HDF5,
/// ONNX...), its name's suffix only a hint. `head` is what the file's first bytes were, or
/// why they could not be read; `None` where they were not read (a hub's listing).
/// `None` when `name` is not one of [`OTHER_FORMATS`].
pub fn describe_other_format(
    name: &OsStr,
    head: Option<Result<&[u8], &io::Error>>,
) -> Option<String> {
    let &(suffix, hint) = other_format_entry(name)?;
    let suffix = suffix.trim_start_matches('.');
    Some(match head {
        None => format!("a .{suffix} file, by its name a {hint} (its bytes were not read)"),
        Some(Ok(bytes)) => match stcheck::format_of(bytes) {
            Some(stcheck::FileFormat::Safetensors) => format!(
                "a .{suffix} file whose bytes are a safetensors file (named *.safetensors, it \
                 would be checked)"
            ),
            Some(f) => format!("a .{suffix} file whose bytes are {f}"),
            None => format!(
                "a .{suffix} file whose first bytes match no format stcheck knows (by its name \
                 a {hint})"
            ),
        },
        Some(Err(e)) => format!(
            "a .{suffix} file whose first bytes could not be read ({e}; by its name a {hint})"
        ),
    })
}

/// The first [`HEAD_BYTES`] bytes of the regular file at `path`, opened as
/// [`open_regular`] opens a file to check (no device, FIFO or file swapped in between).
fn read_head(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path).map_err(|e| match e {
        NotChecked::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    file.file().take(HEAD_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// How many first bytes of a file of another format are read to name it.
const HEAD_BYTES: usize = 512;

/// The command-line option that accepts files of other weight formats (the default name in
/// messages).
pub const ALLOW_OTHER_FORMATS_OPTION: &str = "--allow-other-formats";

/// A path for people: bytes that are not UTF-8 as `\xNN`, the rest escaped exactly as tensor
/// names are ([`stcheck::escape`]: control and line-separator characters, bidi controls and
/// other invisible characters, quotes and backslashes), so a file name can neither be lost
/// nor forge or hide a line of output.
pub fn display_path(path: &Path) -> String {
    display_os(path.as_os_str())
}

/// [`display_path`] for one name.
pub fn display_os(name: &OsStr) -> String {
    let bytes = name.as_encoded_bytes();
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&stcheck::escape(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// A file's identity: device and inode number. Two paths with the same identity are the same
/// file. `None` where the platform gives no such number (not Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of the file `meta` describes.
    #[cfg(unix)]
    pub fn of(meta: &Metadata) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        Some(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// The identity of the file `meta` describes.
    #[cfg(not(unix))]
    pub fn of(_meta: &Metadata) -> Option<FileId> {
        None
    }

    /// The device number.
    pub fn device(&self) -> u64 {
        self.dev
    }

    /// The inode number.
    pub fn inode(&self) -> u64 {
        self.ino
    }
}

/// The type of a file, as `lstat` or `stat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: the only kind that is read.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (from `lstat`).
    Symlink,
    /// A FIFO (named pipe): opening it for reading blocks until a writer comes.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device (a terminal, `/dev/zero`, ...).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else.
    Other,
}

impl FileKind {
    /// The kind of a file type.
    pub fn of(t: FileType) -> FileKind {
        #[cfg(unix)]
        use std::os::unix::fs::FileTypeExt;
        type Test = fn(&FileType) -> bool;
        let kinds: &[(Test, FileKind)] = &[
            (FileType::is_file, FileKind::Regular),
            (FileType::is_dir, FileKind::Directory),
            (FileType::is_symlink, FileKind::Symlink),
            #[cfg(unix)]
            (FileType::is_fifo, FileKind::Fifo),
            #[cfg(unix)]
            (FileType::is_socket, FileKind::Socket),
            #[cfg(unix)]
            (FileType::is_char_device, FileKind::CharDevice),
            #[cfg(unix)]
            (FileType::is_block_device, FileKind::BlockDevice),
        ];
        kinds
            .iter()
            .find(|(is, _)| is(&t))
            .map_or(FileKind::Other, |&(_, kind)| kind)
    }

    /// `"a FIFO (named pipe)"`, `"a directory"`, ...
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        }
    }
}

/// Why a path that looks like a checkpoint (or could hold one) was not checked. Every one of
/// these fails a run: what could not be checked is never valid.
#[derive(Debug)]
#[non_exhaustive]
pub enum NotChecked {
    /// Not a regular file (a directory where a file was expected, a FIFO, socket, device).
    NotRegular(FileKind),
    /// A symbolic link to a regular file outside the root, not followed under the policy.
    LinkLeavesRoot {
        /// The fully resolved target.
        target: PathBuf,
        /// The root, as the user named it.
        root: PathBuf,
        /// The option that follows such links.
        option: &'static str,
    },
    /// A symbolic link to a directory outside the root, never walked.
    DirLinkLeavesRoot {
        /// The fully resolved target.
        target: PathBuf,
        /// The root, as the user named it.
        root: PathBuf,
        /// The option that accepts a link into another root named by the user.
        option: &'static str,
    },
    /// A symbolic link whose target does not exist.
    DanglingLink {
        /// The link's text (`readlink`), where it could be read.
        target: PathBuf,
    },
    /// A chain of symbolic links that never ends (`ELOOP`).
    LinkLoop,
    /// A directory that is its own ancestor (a bind mount of a parent, say): not walked again.
    DirectoryLoop {
        /// The ancestor it is the same directory as.
        ancestor: PathBuf,
    },
    /// The file changed between the decision to read it and the open: another file (or kind
    /// of file) is now at the path.
    Changed,
    /// A file of another weight format than safetensors ([`other_format`]): a gate cannot
    /// vouch for it.
    OtherFormat {
        /// What it is ([`describe_other_format`]).
        format: String,
        /// The option that accepts it.
        option: &'static str,
    },
    /// A directory named by the user in which the walk found nothing to check.
    Empty {
        /// The option that accepts it.
        option: &'static str,
    },
    /// The path could not be read.
    Io(io::Error),
}

impl NotChecked {
    /// A stable code for machines: `"not_regular_file"`, `"link_leaves_root"`,
    /// `"dir_link_leaves_root"`, `"dangling_link"`, `"link_loop"`, `"directory_loop"`,
    /// `"changed"`, `"empty"`, `"other_format"` or `"io_error"`.
    pub fn code(&self) -> &'static str {
        match self {
            NotChecked::NotRegular(_) => "not_regular_file",
            NotChecked::LinkLeavesRoot { .. } => "link_leaves_root",
            NotChecked::DirLinkLeavesRoot { .. } => "dir_link_leaves_root",
            NotChecked::DanglingLink { .. } => "dangling_link",
            NotChecked::LinkLoop => "link_loop",
            NotChecked::DirectoryLoop { .. } => "directory_loop",
            NotChecked::Changed => "changed",
            NotChecked::Empty { .. } => "empty",
            NotChecked::OtherFormat { .. } => "other_format",
            NotChecked::Io(_) => "io_error",
        }
    }

    fn from_io(e: io::Error) -> NotChecked {
        if is_link_loop(&e) {
            NotChecked::LinkLoop
        } else {
            NotChecked::Io(e)
        }
    }
}

impl fmt::Display for NotChecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotChecked::NotRegular(FileKind::Directory) => f.write_str("is a directory"),
            NotChecked::NotRegular(k) => write!(
                f,
                "not a regular file but {}; only regular files are read",
                k.describe()
            ),
            NotChecked::LinkLeavesRoot {
                target,
                root,
                option,
            } => write!(
                f,
                "a symbolic link to {}, outside {}: not followed ({option} follows links to \
                 regular files outside it)",
                display_path(target),
                display_path(root)
            ),
            NotChecked::DirLinkLeavesRoot {
                target,
                root,
                option,
            } => write!(
                f,
                "a symbolic link to the directory {}, outside {}: not walked (directories are \
                 walked only below the paths named on the command line; name it there, and \
                 {option} accepts links into it)",
                display_path(target),
                display_path(root)
            ),
            NotChecked::DanglingLink { target } => write!(
                f,
                "a symbolic link to {}, which does not exist",
                display_path(target)
            ),
            NotChecked::LinkLoop => f.write_str("a symbolic link that loops (ELOOP)"),
            NotChecked::DirectoryLoop { ancestor } => write!(
                f,
                "a directory loop: the same directory as {}, which contains it; not walked again",
                display_path(ancestor)
            ),
            NotChecked::Changed => {
                f.write_str("the file changed between the check of its type and the open")
            }
            NotChecked::Empty { option } => write!(
                f,
                "no *{SAFETENSORS_SUFFIX} or *{INDEX_SUFFIX} file found ({option} accepts a \
                 directory with nothing to check)"
            ),
            NotChecked::OtherFormat { format, option } => write!(
                f,
                "another format than safetensors: {format}; stcheck checks only safetensors, \
                 so it cannot vouch for it ({option} accepts such files)"
            ),
            NotChecked::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NotChecked {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NotChecked::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<NotChecked> for ReadError {
    fn from(n: NotChecked) -> Self {
        use NotChecked as N;
        let kind = match &n {
            N::NotRegular(_) => ReadErrorKind::NotRegular,
            N::LinkLeavesRoot { .. } | N::DirLinkLeavesRoot { .. } => {
                ReadErrorKind::LinkNotFollowed
            }
            N::DanglingLink { .. } => ReadErrorKind::NotFound,
            N::LinkLoop | N::DirectoryLoop { .. } => ReadErrorKind::Loop,
            N::Changed => ReadErrorKind::Changed,
            N::Empty { .. } => ReadErrorKind::Empty,
            N::OtherFormat { .. } => ReadErrorKind::OtherFormat,
            N::Io(_) => ReadErrorKind::Io,
        };
        let code = n.code();
        match n {
            N::Io(e) => ReadError::io(e),
            other => ReadError::new(kind, other.to_string()).with_code(code),
        }
    }
}

impl From<NotChecked> for io::Error {
    /// [`NotChecked::Io`] gives its error back; the others become an error of kind `Other`
    /// that holds the [`NotChecked`] (find it with `get_ref` and `downcast_ref`).
    fn from(n: NotChecked) -> io::Error {
        match n {
            NotChecked::Io(e) => e,
            other => io::Error::other(other),
        }
    }
}

#[cfg(unix)]
fn is_link_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_link_loop(_e: &io::Error) -> bool {
    false
}

/// A regular file, opened for reading.
#[derive(Debug)]
pub struct RegularFile {
    file: File,
    stamp: stcheck::FileStamp,
    id: Option<FileId>,
}

impl RegularFile {
    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open file, and its length.
    pub fn into_parts(self) -> (File, u64) {
        let len = self.stamp.len();
        (self.file, len)
    }

    /// The length when it was opened.
    pub fn len(&self) -> u64 {
        self.stamp.len()
    }

    /// Whether the length was 0 when it was opened.
    pub fn is_empty(&self) -> bool {
        self.stamp.is_empty()
    }

    /// What it was when it was opened (from the `fstat` that confirmed it is a regular file),
    /// for [`stcheck::check_opened`]: a check starts from it, so a change since the open is
    /// caught too.
    pub fn stamp(&self) -> &stcheck::FileStamp {
        &self.stamp
    }

    /// Its identity, from `fstat` on the open file.
    pub fn id(&self) -> Option<FileId> {
        self.id
    }
}

/// Open `path` for reading, only if it is a regular file, without ever blocking: `stat`
/// first (links followed: a path the caller decided to read), then a non-blocking open
/// (`O_NONBLOCK | O_NOCTTY`), then `fstat` on the open file to confirm it is a regular file
/// and the same one `stat` saw. A FIFO, socket or device is [`NotChecked::NotRegular`] at
/// once, even if swapped in between. `O_NONBLOCK` has no effect on reading a regular file.
pub fn open_regular(path: &Path) -> Result<RegularFile, NotChecked> {
    let before = fs::metadata(path).map_err(NotChecked::from_io)?;
    let kind = FileKind::of(before.file_type());
    if kind != FileKind::Regular {
        return Err(NotChecked::NotRegular(kind));
    }
    let file = open_nonblocking(path).map_err(NotChecked::from_io)?;
    let meta = file.metadata().map_err(NotChecked::Io)?;
    let kind = FileKind::of(meta.file_type());
    if kind != FileKind::Regular {
        return Err(NotChecked::NotRegular(kind));
    }
    let id = FileId::of(&meta);
    if id != FileId::of(&before) {
        return Err(NotChecked::Changed);
    }
    Ok(RegularFile {
        file,
        stamp: stcheck::FileStamp::from_metadata(&meta),
        id,
    })
}

fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// Which symbolic links are followed. Default: only links whose target stays below the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkPolicy {
    follow_outside: bool,
    option: &'static str,
}

impl Default for LinkPolicy {
    fn default() -> Self {
        LinkPolicy::confined()
    }
}

impl LinkPolicy {
    /// Links are followed only when their resolved target stays below the root.
    pub fn confined() -> Self {
        LinkPolicy {
            follow_outside: false,
            option: FOLLOW_LINKS_OPTION,
        }
    }

    /// Also follow links to regular files outside the root (never to directories, devices or
    /// FIFOs): `--follow-links`, for the Hugging Face cache whose snapshots link to `../../blobs/`.
    pub fn follow_outside(mut self, yes: bool) -> Self {
        self.follow_outside = yes;
        self
    }

    /// The option named in messages about links not followed (default `--follow-links`).
    pub fn option_name(mut self, name: &'static str) -> Self {
        self.option = name;
        self
    }

    /// Whether links to regular files outside the root are followed.
    pub fn follows_outside(&self) -> bool {
        self.follow_outside
    }

    /// The option named in messages.
    pub fn option(&self) -> &'static str {
        self.option
    }
}

/// A directory named by the user: links are judged against its fully resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    named: PathBuf,
    real: PathBuf,
}

impl Root {
    /// The root `path` (resolved with `realpath`).
    pub fn new(path: &Path) -> io::Result<Root> {
        Ok(Root {
            named: path.to_path_buf(),
            real: fs::canonicalize(path)?,
        })
    }

    /// The path as named.
    pub fn named(&self) -> &Path {
        &self.named
    }

    /// The resolved path.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// Whether a resolved path is the root or below it.
    pub fn contains(&self, resolved: &Path) -> bool {
        resolved.starts_with(&self.real)
    }
}

/// Where a symbolic link leads, when the policy does not refuse it.
#[derive(Debug)]
pub enum LinkTarget {
    /// A regular file that may be read through the link.
    File {
        /// The fully resolved target.
        target: PathBuf,
        /// Its identity (from `stat`), to compare with the file opened.
        id: Option<FileId>,
    },
    /// A directory. Never walked through the link.
    Dir {
        /// The fully resolved target.
        target: PathBuf,
        /// Whether it is below the root (and so walked under its own path).
        inside: bool,
    },
}

/// Resolve the symbolic link `link` met below `root` and apply the policy. Never opens
/// anything. `Err` says why it is not followed: dangling, looping, not a regular file, or a
/// link to a file outside the root that the policy does not follow.
pub fn follow_link(
    link: &Path,
    root: &Root,
    policy: &LinkPolicy,
) -> Result<LinkTarget, NotChecked> {
    let meta = match fs::metadata(link) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(NotChecked::DanglingLink {
                target: fs::read_link(link).unwrap_or_default(),
            })
        }
        Err(e) => return Err(NotChecked::from_io(e)),
    };
    let target = fs::canonicalize(link).map_err(NotChecked::from_io)?;
    let inside = root.contains(&target);
    match FileKind::of(meta.file_type()) {
        FileKind::Directory => Ok(LinkTarget::Dir { target, inside }),
        FileKind::Regular if inside || policy.follow_outside => Ok(LinkTarget::File {
            target,
            id: FileId::of(&meta),
        }),
        FileKind::Regular => Err(NotChecked::LinkLeavesRoot {
            target,
            root: root.named.clone(),
            option: policy.option,
        }),
        other => Err(NotChecked::NotRegular(other)),
    }
}

/// One result of a walk, in walk order (names sorted bytewise, depth first).
#[derive(Debug)]
pub enum WalkEntry {
    /// A path to check: a regular file, or a link to one that the policy follows.
    Checkpoint {
        /// The path as reached from the root (through the link, for a link).
        path: PathBuf,
        /// What its name says it is.
        kind: Checkpoint,
    },
    /// A path that could not be checked: a failure of the run.
    NotChecked {
        /// The path as reached from the root.
        path: PathBuf,
        /// Why.
        reason: NotChecked,
    },
}

/// A directory walker for a gate. Reports every path that looks like a checkpoint (by its
/// name, [`checkpoint_kind`]) as a [`WalkEntry::Checkpoint`] or a [`WalkEntry::NotChecked`];
/// reports every directory link leaving the root, every unreadable directory and, unless
/// allowed, a root with nothing to check. Never follows a link into a directory, never walks
/// a directory twice (across all roots), and reports a directory that is its own ancestor
/// instead of looping.
#[derive(Debug, Default)]
pub struct Walker {
    links: LinkPolicy,
    allow_empty: bool,
    empty_option: Option<&'static str>,
    allow_other_formats: bool,
    other_formats_option: Option<&'static str>,
    exclude: Vec<crate::glob::Glob>,
    roots: Vec<Root>,
    walked: HashSet<FileId>,
}

/// A directory being read, in the walker's stack.
struct Frame {
    dir: PathBuf,
    id: Option<FileId>,
    entries: std::vec::IntoIter<(OsString, io::Result<FileType>)>,
}

impl Walker {
    /// A walker under the link policy `links`.
    pub fn new(links: LinkPolicy) -> Self {
        Walker {
            links,
            ..Walker::default()
        }
    }

    /// Accept a root where nothing is found (`--allow-empty`). Default: reported as
    /// [`NotChecked::Empty`].
    pub fn allow_empty(mut self, yes: bool) -> Self {
        self.allow_empty = yes;
        self
    }

    /// Accept files of other weight formats ([`other_format`]: pickle `.bin`, GGUF, ...)
    /// unseen (`--allow-other-formats`). Default: each is reported as
    /// [`NotChecked::OtherFormat`].
    pub fn allow_other_formats(mut self, yes: bool) -> Self {
        self.allow_other_formats = yes;
        self
    }

    /// The option named in the message about a file of another format (default
    /// `--allow-other-formats`).
    pub fn other_formats_option_name(mut self, name: &'static str) -> Self {
        self.other_formats_option = Some(name);
        self
    }

    /// Leave out the paths below a root that match one of `globs` (`--exclude`): an
    /// excluded directory is not walked, an excluded file not reported.
    pub fn exclude(mut self, globs: Vec<crate::glob::Glob>) -> Self {
        self.exclude = globs;
        self
    }

    /// Whether `path` (below the root `root`) is excluded.
    fn excluded(&self, root: &Path, path: &Path, is_dir: bool) -> bool {
        if self.exclude.is_empty() {
            return false;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            return false;
        };
        let segments: Vec<&[u8]> = rel
            .components()
            .map(|c| c.as_os_str().as_encoded_bytes())
            .collect();
        self.exclude.iter().any(|g| g.matches(&segments, is_dir))
    }

    /// The option named in the message about an empty root (default `--allow-empty`).
    pub fn empty_option_name(mut self, name: &'static str) -> Self {
        self.empty_option = Some(name);
        self
    }

    /// Declare a directory the user named, before walking any: with a policy that follows
    /// outside links, a link into another declared root is accepted (its directory is walked
    /// there). [`Walker::walk`] declares its own root.
    pub fn declare_root(&mut self, dir: &Path) {
        if let Ok(root) = Root::new(dir) {
            if !self.roots.contains(&root) {
                self.roots.push(root);
            }
        }
    }

    /// Walk the directory `dir` (named by the user; followed if it is a link).
    pub fn walk(&mut self, dir: &Path) -> Vec<WalkEntry> {
        let mut out = Vec::new();
        let root = match Root::new(dir) {
            Ok(r) => r,
            Err(e) => {
                out.push(WalkEntry::NotChecked {
                    path: dir.to_path_buf(),
                    reason: NotChecked::from_io(e),
                });
                return out;
            }
        };
        self.declare_root(dir);
        let id = match fs::metadata(dir) {
            Ok(m) => FileId::of(&m),
            Err(e) => {
                out.push(WalkEntry::NotChecked {
                    path: dir.to_path_buf(),
                    reason: NotChecked::from_io(e),
                });
                return out;
            }
        };
        if let Some(id) = id {
            if !self.walked.insert(id) {
                // Named twice, or inside a root walked before: its files were checked there.
                return out;
            }
        }
        let mut stack = Vec::new();
        self.enter(dir.to_path_buf(), id, &mut stack, &mut out);
        while let Some(top) = stack.last_mut() {
            let Some((name, ty)) = top.entries.next() else {
                stack.pop();
                continue;
            };
            let path = top.dir.join(&name);
            let ty = match ty {
                Ok(t) => t,
                Err(e) => {
                    out.push(WalkEntry::NotChecked {
                        path,
                        reason: NotChecked::from_io(e),
                    });
                    continue;
                }
            };
            let kind = checkpoint_kind(&name);
            if self.excluded(dir, &path, ty.is_dir()) {
                continue;
            }
            match FileKind::of(ty) {
                FileKind::Directory => self.subdirectory(path, &mut stack, &mut out),
                FileKind::Regular if kind.is_none() => {
                    if other_format(&name).is_some() && !self.allow_other_formats {
                        let head = read_head(&path);
                        let format =
                            describe_other_format(&name, Some(head.as_deref())).unwrap_or_default();
                        out.push(WalkEntry::NotChecked {
                            path,
                            reason: NotChecked::OtherFormat {
                                format,
                                option: self
                                    .other_formats_option
                                    .unwrap_or(ALLOW_OTHER_FORMATS_OPTION),
                            },
                        });
                    }
                }
                FileKind::Regular => {
                    if let Some(kind) = kind {
                        out.push(WalkEntry::Checkpoint { path, kind });
                    }
                }
                FileKind::Symlink => {
                    if let Some(e) = self.link(path, kind, &root) {
                        out.push(e);
                    }
                }
                special => {
                    if kind.is_some() {
                        out.push(WalkEntry::NotChecked {
                            path,
                            reason: NotChecked::NotRegular(special),
                        });
                    }
                }
            }
        }
        if out.is_empty() && !self.allow_empty {
            out.push(WalkEntry::NotChecked {
                path: dir.to_path_buf(),
                reason: NotChecked::Empty {
                    option: self.empty_option.unwrap_or(ALLOW_EMPTY_OPTION),
                },
            });
        }
        out
    }

    /// A subdirectory (not a link): walked unless it is an ancestor (a loop) or was walked.
    fn subdirectory(&mut self, path: PathBuf, stack: &mut Vec<Frame>, out: &mut Vec<WalkEntry>) {
        let id = match fs::symlink_metadata(&path) {
            Ok(m) => FileId::of(&m),
            Err(e) => {
                out.push(WalkEntry::NotChecked {
                    path,
                    reason: NotChecked::from_io(e),
                });
                return;
            }
        };
        if let Some(id) = id {
            if let Some(f) = stack.iter().find(|f| f.id == Some(id)) {
                let ancestor = f.dir.clone();
                out.push(WalkEntry::NotChecked {
                    path,
                    reason: NotChecked::DirectoryLoop { ancestor },
                });
                return;
            }
            if !self.walked.insert(id) {
                return;
            }
        }
        self.enter(path, id, stack, out);
    }

    /// Read a directory's names, sorted, onto the stack.
    fn enter(
        &mut self,
        dir: PathBuf,
        id: Option<FileId>,
        stack: &mut Vec<Frame>,
        out: &mut Vec<WalkEntry>,
    ) {
        let mut entries = Vec::new();
        let mut failed = None;
        match fs::read_dir(&dir) {
            Ok(rd) => {
                for e in rd {
                    match e {
                        Ok(e) => entries.push((e.file_name(), e.file_type())),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
            Err(e) => failed = Some(e),
        }
        if let Some(e) = failed {
            // What was read is still walked; the directory itself fails the run.
            out.push(WalkEntry::NotChecked {
                path: dir.clone(),
                reason: NotChecked::from_io(e),
            });
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        stack.push(Frame {
            dir,
            id,
            entries: entries.into_iter(),
        });
    }

    /// A symbolic link met in the walk: the entry to report, if any.
    fn link(&self, path: PathBuf, kind: Option<Checkpoint>, root: &Root) -> Option<WalkEntry> {
        let not_checked = |path, reason| Some(WalkEntry::NotChecked { path, reason });
        match follow_link(&path, root, &self.links) {
            Ok(LinkTarget::File { .. }) => kind.map(|kind| WalkEntry::Checkpoint { path, kind }),
            Ok(LinkTarget::Dir { target, inside }) => {
                // Below the root: walked under its own path. Into another named root, with
                // outside links followed: walked there.
                let covered = inside
                    || (self.links.follow_outside
                        && self.roots.iter().any(|r| r.contains(&target)));
                if covered {
                    return None;
                }
                not_checked(
                    path,
                    NotChecked::DirLinkLeavesRoot {
                        target,
                        root: root.named.clone(),
                        option: self.links.option,
                    },
                )
            }
            // Whatever its name, a link that cannot be resolved might have been a directory.
            Err(reason @ NotChecked::Io(_)) => not_checked(path, reason),
            Err(reason) if kind.is_some() => not_checked(path, reason),
            // Not a checkpoint's name and not a directory: nothing to check.
            Err(_) => None,
        }
    }
}

/// A name for a listing compared with names read from JSON: the UTF-8 name as it is, or the
/// escaped form ([`display_os`]) of one that is not UTF-8, which holds a `\\` and so can never
/// equal a valid shard name.
pub(crate) fn name_for_listing(name: &OsStr) -> Cow<'_, str> {
    match name.to_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(display_os(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_on_bytes() {
        assert_eq!(
            checkpoint_kind(OsStr::new("a.safetensors")),
            Some(Checkpoint::Safetensors)
        );
        // Any case: a gate must not pass `Model.SAFETENSORS` unseen.
        assert_eq!(
            checkpoint_kind(OsStr::new("a.SAFETENSORS")),
            Some(Checkpoint::Safetensors)
        );
        assert_eq!(
            checkpoint_kind(OsStr::new("M.SafeTensors.Index.JSON")),
            Some(Checkpoint::Index)
        );
        assert_eq!(
            other_format(OsStr::new("pytorch_model.BIN")),
            Some("PyTorch pickle (.bin)")
        );
        assert_eq!(other_format(OsStr::new(".bin")), None);
        assert_eq!(other_format(OsStr::new("model.safetensors")), None);
        assert_eq!(checkpoint_kind(OsStr::new("a.safetensors.bak")), None);
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let name = OsStr::from_bytes(b"m\xff.safetensors");
            assert_eq!(checkpoint_kind(name), Some(Checkpoint::Safetensors));
            assert_eq!(display_os(name), "m\\xff.safetensors");
            assert_eq!(name_for_listing(name), "m\\xff.safetensors");
        }
        assert_eq!(display_os(OsStr::new("a\nb\u{1b}")), "a\\nb\\u{1b}");
    }
}
