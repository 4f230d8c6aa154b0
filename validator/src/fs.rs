//! Opening files the way a gate must: the file type is decided before anything can block.

use std::fs::File;
use std::path::Path;

use crate::error::{ReadError, ReadErrorKind};

/// What a non-regular file is, in words.
fn describe(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ft.is_dir() {
        "is a directory"
    } else if ft.is_fifo() {
        "not a regular file (a FIFO)"
    } else if ft.is_socket() {
        "not a regular file (a socket)"
    } else if ft.is_block_device() || ft.is_char_device() {
        "not a regular file (a device)"
    } else {
        "not a regular file"
    }
}

/// Open `path` for reading only if it is a regular file, following symbolic links: the type is
/// read with `stat` first, the file is opened non-blocking (so a FIFO swapped in after the
/// `stat` cannot block the open), and the open file is checked again with `fstat`. Returns
/// the file and its length.
pub fn open_regular(path: &Path) -> Result<(File, u64), ReadError> {
    let with_path = |e: ReadError| e.with_path(path);
    let meta = std::fs::metadata(path).map_err(|e| with_path(e.into()))?;
    if !meta.is_file() {
        return Err(with_path(ReadError::new(
            ReadErrorKind::NotRegular,
            describe(&meta.file_type()),
        )));
    }
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| with_path(e.into()))?;
    let meta = file.metadata().map_err(|e| with_path(e.into()))?;
    if !meta.is_file() {
        return Err(with_path(ReadError::new(
            ReadErrorKind::NotRegular,
            describe(&meta.file_type()),
        )));
    }
    Ok((file, meta.len()))
}
