//! The file's bytes as memory: a read-only map ([`map`], the crate's one `unsafe`) and the
//! unlinked temporary file the reference verdict maps a sparse copy of a header from
//! ([`temp_file`]). A leaf: it needs nothing of the checker, so the sources and the reference
//! verdict can both use it without importing each other.

use std::fs::File;
use std::io;

use crate::error::{ReadError, ReadErrorKind};

/// A read-only memory map of a file (see [`map`]); derefs to the file's bytes.
#[derive(Debug)]
pub struct Mapped(memmap2::Mmap);

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A read-only memory map of `file`: the crate's one use of `unsafe`.
pub fn map(file: &File) -> io::Result<Mapped> {
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change under us: the map
    // shows the file itself, not a copy. The map is read-only and private to this process,
    // and the validator only reads it, so it can never corrupt the file. But if another
    // process writes the file while it is mapped, the bytes we validate can change between
    // two reads of the same offset (the header we checked is not the header we report on),
    // and if it truncates the file, touching a page past the new end raises SIGBUS and
    // kills this process. Nothing here is undefined behaviour in practice for a file that
    // nobody else modifies, which is the normal case of a finished upload or a model
    // directory. For files others can still write, `ReadMode::Read` and `ReadMode::Stream`
    // read the bytes into our own memory with read(2): a concurrent writer can then only make
    // us validate a torn snapshot, never crash us or change bytes after they were checked.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Mapped(map))
}

/// A new temporary file, unlinked at once so nothing is left behind.
pub(crate) fn temp_file() -> Result<File, ReadError> {
    let dir = std::env::temp_dir();
    let mut file = None;
    for attempt in 0..16u32 {
        let name = format!(
            ".stcheck-spill-{}-{}-{attempt}",
            std::process::id(),
            crate::json::random_u64()
        );
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => {
                let _ = std::fs::remove_file(&path);
                file = Some(f);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(ReadError::io(e).with_path(&path)),
        }
    }
    file.ok_or_else(|| ReadError::new(ReadErrorKind::Io, "could not create a temporary file"))
}
