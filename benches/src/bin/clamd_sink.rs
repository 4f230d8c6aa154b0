//! The baseline of `benches/serve-load.py`: a clamd `INSTREAM` server that reads every chunk
//! of every stream, discards it and answers `stream: OK`, one thread per connection, with
//! sessions (`IDSESSION`/`END`) as the service has them. What the service does beyond this
//! (checking) is what the load script measures.
//!
//! Usage: `clamd_sink [ADDR]` (prints `listening ADDR` when bound; `--help` says more).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut input = BufReader::with_capacity(1 << 16, stream);
    let mut session: Option<u64> = None;
    let mut command = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        command.clear();
        if input.read_until(0, &mut command)? == 0 {
            return Ok(());
        }
        let reply = match command.as_slice() {
            b"zIDSESSION\0" => {
                session = Some(0);
                continue;
            }
            b"zEND\0" => return Ok(()),
            b"zPING\0" => "PONG",
            b"zINSTREAM\0" => {
                loop {
                    let mut len = [0u8; 4];
                    input.read_exact(&mut len)?;
                    let mut left = u32::from_be_bytes(len) as usize;
                    if left == 0 {
                        break;
                    }
                    while left > 0 {
                        let n = left.min(chunk.len());
                        input.read_exact(&mut chunk[..n])?;
                        left -= n;
                    }
                }
                "stream: OK"
            }
            _ => "UNKNOWN COMMAND",
        };
        let line = match &mut session {
            Some(n) => {
                *n += 1;
                format!("{n}: {reply}\0")
            }
            None => format!("{reply}\0"),
        };
        out.write_all(line.as_bytes())?;
        if session.is_none() {
            return Ok(());
        }
    }
}

/// What `clamd_sink --help` prints.
const USAGE: &str = "usage: clamd_sink [--] [ADDR]   (default 127.0.0.1:0)
A clamd INSTREAM server that reads and discards every stream and answers `stream: OK`: the
baseline of benches/serve-load.py. Prints `listening ADDR` once bound.
";

fn main() -> std::io::Result<()> {
    let args = stcheck_benches::positional_args(std::env::args().skip(1), USAGE, 1);
    let addr = args.first().map_or("127.0.0.1:0", String::as_str);
    let listener = TcpListener::bind(addr)?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || serve(stream));
    }
    Ok(())
}
