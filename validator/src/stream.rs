//! The streaming validator: one forward pass over a reader, memory bounded by the header
//! length plus a fixed buffer. Its verdict, rule and offset equal those of [`crate::validate`]
//! on the same bytes, because both run the same framing and header functions.

use std::fmt;
use std::io::{self, Read};

use crate::error::Error;
use crate::frame;
use crate::limits::{Config, STREAM_BUFFER_SIZE};
use crate::report::Report;

/// Why a stream could not be validated: the file is rejected, or reading failed.
#[derive(Debug)]
pub enum StreamError {
    /// The bytes read so far break a rule.
    Invalid(Error),
    /// Reading failed; this says nothing about the file's validity.
    Io(io::Error),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Invalid(e) => fmt::Display::fmt(e, f),
            StreamError::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

impl std::error::Error for StreamError {}

impl From<Error> for StreamError {
    fn from(e: Error) -> Self {
        StreamError::Invalid(e)
    }
}

impl From<io::Error> for StreamError {
    fn from(e: io::Error) -> Self {
        StreamError::Io(e)
    }
}

/// Read until `buf` is full or the reader ends; returns the bytes read. Retries on
/// `Interrupted`.
pub(crate) fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Validate a file read from `reader` in one pass. A bad length field is rejected after 8
/// bytes (after at most [`crate::limits::HEAD_LEN`] when it is above the limit, to tell
/// `FRAME-NOT-SAFETENSORS`), a bad header once the header has arrived; the data region's
/// length is checked at the end of the stream.
pub fn validate_reader<R: Read>(
    mut reader: R,
    config: &Config,
) -> Result<Report<'static>, StreamError> {
    let mut prefix = [0u8; frame::LENGTH_FIELD];
    let got = read_full(&mut reader, &mut prefix)?;
    let n = match frame::header_length(&prefix[..got], config) {
        Ok(n) => n,
        Err(e) => return Err(frame::identify_from(e, &prefix[..got], &mut reader)?.into()),
    };
    // The header grows with the bytes that actually arrive, so a lying length field cannot
    // make us allocate more than was sent (and never more than the limit).
    let mut header = Vec::new();
    let got = (&mut reader).take(n).read_to_end(&mut header)? as u64;
    if got < n {
        let e = frame::bounds_error(n, frame::LENGTH_FIELD as u64 + got);
        return Err(frame::identify_from(e, &prefix, &mut header.as_slice())?.into());
    }
    let report = crate::validate_header(&header, config)?.into_owned();
    let mut buf = vec![0u8; STREAM_BUFFER_SIZE];
    let mut data_len = 0u64;
    loop {
        let k = read_full(&mut reader, &mut buf)?;
        if k == 0 {
            break;
        }
        data_len = data_len.saturating_add(k as u64);
    }
    report.check_data_len(data_len)?;
    Ok(report.finish(config)?)
}
