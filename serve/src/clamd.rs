//! The clamd protocol's two grammars as pure functions (no I/O, for the service and for fuzz
//! targets): [`split_command`] takes one command off the front of what a client sent, and
//! [`Framing`] takes `INSTREAM`'s chunks apart (a 4-byte big-endian length, that many bytes,
//! a zero length at the end), refusing a stream past its limit at the length that would pass
//! it, before its bytes arrive.
//!
//! A command is `zCOMMAND\0` (replies end in `\0`), `nCOMMAND\n` (replies end in `\n`), or, as
//! clamd still accepts, a bare `COMMAND\n` (replies end in `\n`).

/// The longest command line accepted, its prefix and delimiter included (clamd's own commands
/// are short; a path command is not served).
pub const MAX_COMMAND_LEN: usize = 1024;

/// How a command was delimited, which is how its replies end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// `z` prefix: replies end in NUL.
    Nul,
    /// `n` prefix, or none: replies end in a newline.
    Newline,
}

impl Delimiter {
    /// The byte a reply ends with.
    pub fn byte(self) -> u8 {
        match self {
            Delimiter::Nul => 0,
            Delimiter::Newline => b'\n',
        }
    }
}

/// A clamd command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `PING`: answered `PONG`.
    Ping,
    /// `VERSION`.
    Version,
    /// `VERSIONCOMMANDS`: the version and the commands served.
    VersionCommands,
    /// `STATS`: the state and the limits.
    Stats,
    /// `INSTREAM`: chunks follow ([`Framing`]).
    Instream,
    /// `IDSESSION`: replies carry the number of their command until `END`.
    IdSession,
    /// `END`: the end of a session.
    End,
    /// `SCAN`, `CONTSCAN`, `MULTISCAN`, `ALLMATCHSCAN` with a path: not served (no root).
    Path(&'static str),
    /// A command clamd knows that this service does not serve (`FILDES`, `SHUTDOWN`, ...).
    Unsupported(&'static str),
    /// Anything else, as sent (lossy UTF-8, at most 64 characters).
    Unknown(String),
}

/// What is wrong with a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// No delimiter within [`MAX_COMMAND_LEN`] bytes.
    TooLong,
    /// An empty command (`z\0`, `\n`).
    Empty,
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::TooLong => {
                write!(f, "command longer than {MAX_COMMAND_LEN} bytes")
            }
            CommandError::Empty => f.write_str("empty command"),
        }
    }
}

/// One command off the front of `input`: `Ok(None)` when its delimiter has not arrived yet;
/// else the command, how it was delimited, and the bytes it took (the rest, an `INSTREAM`'s
/// first chunks for instance, is left to the caller).
pub fn split_command(input: &[u8]) -> Result<Option<(Command, Delimiter, usize)>, CommandError> {
    let Some(&first) = input.first() else {
        return Ok(None);
    };
    let (delimiter, start, end_byte) = match first {
        b'z' => (Delimiter::Nul, 1, 0u8),
        b'n' => (Delimiter::Newline, 1, b'\n'),
        _ => (Delimiter::Newline, 0, b'\n'),
    };
    let window = &input[..input.len().min(MAX_COMMAND_LEN)];
    let Some(end) = window[start..].iter().position(|&b| b == end_byte) else {
        return if input.len() >= MAX_COMMAND_LEN {
            Err(CommandError::TooLong)
        } else {
            Ok(None)
        };
    };
    let mut line = &input[start..start + end];
    // A bare command may end in CRLF (typed by hand over telnet).
    if delimiter == Delimiter::Newline {
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
    }
    if line.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(Some((parse_command(line), delimiter, start + end + 1)))
}

/// The command named by `line` (without prefix or delimiter).
pub fn parse_command(line: &[u8]) -> Command {
    let (word, has_argument) = match line.iter().position(|&b| b == b' ') {
        Some(at) => (&line[..at], true),
        None => (line, false),
    };
    match (word, has_argument) {
        (b"PING", false) => Command::Ping,
        (b"VERSION", false) => Command::Version,
        (b"VERSIONCOMMANDS", false) => Command::VersionCommands,
        (b"STATS", false) => Command::Stats,
        (b"INSTREAM", false) => Command::Instream,
        (b"IDSESSION", false) => Command::IdSession,
        (b"END", false) => Command::End,
        (b"SCAN", _) => Command::Path("SCAN"),
        (b"CONTSCAN", _) => Command::Path("CONTSCAN"),
        (b"MULTISCAN", _) => Command::Path("MULTISCAN"),
        (b"ALLMATCHSCAN", _) => Command::Path("ALLMATCHSCAN"),
        (b"FILDES", _) => Command::Unsupported("FILDES"),
        (b"SHUTDOWN", _) => Command::Unsupported("SHUTDOWN"),
        (b"RELOAD", _) => Command::Unsupported("RELOAD"),
        (b"DETSTATS", _) => Command::Unsupported("DETSTATS"),
        (b"DETSTATSCLEAR", _) => Command::Unsupported("DETSTATSCLEAR"),
        (b"QUIT", _) => Command::Unsupported("QUIT"),
        _ => Command::Unknown(
            String::from_utf8_lossy(line)
                .chars()
                .take(64)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect(),
        ),
    }
}

/// What [`Framing::next`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Bytes of the stream (part of a chunk).
    Data(&'a [u8]),
    /// The zero-length chunk: the stream is whole.
    End,
}

/// A stream that cannot be taken: its chunks would pass the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The limit, in bytes.
    pub limit: u64,
}

/// The state of `INSTREAM`'s chunk framing.
#[derive(Debug, Clone)]
pub struct Framing {
    /// Bytes of the length field read so far (`got` of 4), when between chunks.
    length: [u8; 4],
    got: usize,
    /// Bytes of the current chunk still to come.
    left: u32,
    /// Stream bytes announced so far (chunk lengths summed).
    total: u64,
    limit: u64,
    ended: bool,
}

impl Framing {
    /// The framing of a stream of at most `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Framing {
            length: [0; 4],
            got: 0,
            left: 0,
            total: 0,
            limit,
            ended: false,
        }
    }

    /// The next frame in `input` and the bytes it took: `(n, None)` when all `n` bytes of
    /// `input` went into a length field not yet whole (or `input` is empty). After
    /// [`Frame::End`] nothing more is taken. A length that would take the stream past the
    /// limit is an error at once.
    pub fn next<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<Frame<'a>>), TooLong> {
        if self.ended {
            return Ok((0, None));
        }
        let mut used = 0;
        while self.left == 0 {
            let Some(&b) = input.get(used) else {
                return Ok((used, None));
            };
            self.length[self.got] = b;
            self.got += 1;
            used += 1;
            if self.got < 4 {
                continue;
            }
            self.got = 0;
            let n = u32::from_be_bytes(self.length);
            if n == 0 {
                self.ended = true;
                return Ok((used, Some(Frame::End)));
            }
            let total = self.total.saturating_add(u64::from(n));
            if total > self.limit {
                return Err(TooLong { limit: self.limit });
            }
            self.total = total;
            self.left = n;
        }
        let rest = &input[used..];
        if rest.is_empty() {
            return Ok((used, None));
        }
        let take = rest.len().min(self.left as usize);
        self.left -= take as u32;
        Ok((used + take, Some(Frame::Data(&rest[..take]))))
    }

    /// Whether the zero-length chunk was read.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The stream bytes announced so far.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(limit: u64, input: &[u8], step: usize) -> Result<(Vec<u8>, bool), TooLong> {
        let mut f = Framing::new(limit);
        let mut out = Vec::new();
        let mut ended = false;
        for piece in input.chunks(step) {
            let mut at = 0;
            loop {
                let (n, frame) = f.next(&piece[at..])?;
                at += n;
                match frame {
                    Some(Frame::Data(d)) => out.extend_from_slice(d),
                    Some(Frame::End) => ended = true,
                    None => break,
                }
                if at == piece.len() {
                    break;
                }
            }
        }
        Ok((out, ended))
    }

    #[test]
    fn commands_and_their_delimiters() {
        assert_eq!(
            split_command(b"zPING\0rest"),
            Ok(Some((Command::Ping, Delimiter::Nul, 6)))
        );
        assert_eq!(
            split_command(b"nVERSION\n"),
            Ok(Some((Command::Version, Delimiter::Newline, 9)))
        );
        assert_eq!(
            split_command(b"PING\r\n"),
            Ok(Some((Command::Ping, Delimiter::Newline, 6)))
        );
        assert_eq!(split_command(b"zINSTRE"), Ok(None));
        assert_eq!(split_command(b"z\0"), Err(CommandError::Empty));
        assert_eq!(
            split_command(&[b'z'; MAX_COMMAND_LEN]),
            Err(CommandError::TooLong)
        );
        assert_eq!(parse_command(b"SCAN /etc/passwd"), Command::Path("SCAN"));
        assert_eq!(parse_command(b"PING x"), Command::Unknown("PING x".into()));
    }

    #[test]
    fn chunks_in_any_split() {
        let mut input = Vec::new();
        for chunk in [&b"abc"[..], b"", b"defgh"] {
            if chunk.is_empty() {
                continue;
            }
            input.extend_from_slice(&(chunk.len() as u32).to_be_bytes());
            input.extend_from_slice(chunk);
        }
        input.extend_from_slice(&[0, 0, 0, 0]);
        for step in 1..=input.len() {
            assert_eq!(
                frames(100, &input, step),
                Ok((b"abcdefgh".to_vec(), true)),
                "{step}"
            );
        }
        // The limit is checked at the length that passes it, before the bytes.
        assert_eq!(frames(7, &input, 3), Err(TooLong { limit: 7 }));
        assert_eq!(
            frames(u64::MAX, &[0xff, 0xff, 0xff, 0xff, 1], 5),
            Ok((vec![1], false))
        );
    }
}
