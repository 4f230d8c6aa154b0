//! The progress bar under a pseudo-terminal: drawn on a terminal standard error, by bytes for
//! a deep scan and by files otherwise; never on standard output; absent when standard error is
//! piped (unless forced); and in a 30-column terminal every redraw leaves nothing behind (what
//! the terminal shows at the end, replayed by a terminal emulator, is exactly the output).
//!
//! Each run is bounded: one that does not finish within `HANG_LIMIT` is killed (by its own
//! id) and the test fails. Nothing here measures time: the bar is drawn at least once per
//! run whatever the speed (at the first file), and the assertions are about what was drawn.
#![cfg(unix)]

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcsetwinsize, Winsize};
use stcheck::write::{serialize, TensorSpec};
use stcheck::Dtype;

use crate::BIN;
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// A fresh directory with three valid files of 4 MiB under a long directory name (so the path
/// on the bar has to be cut to fit a narrow terminal).
fn files(name: &str) -> (PathBuf, Vec<String>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("progress-{name}"));
    let _ = fs::remove_dir_all(&dir);
    let sub = "a-directory-with-a-rather-long-name-for-a-narrow-terminal";
    fs::create_dir_all(dir.join(sub)).expect("mkdir");
    let data = vec![0u8; 4 << 20];
    let file =
        serialize(&[TensorSpec::new("w", Dtype::F32, &[1 << 20], &data)], &[]).expect("serialize");
    let mut paths = Vec::new();
    for i in 0..3 {
        let p = format!("{sub}/m{i}.safetensors");
        fs::write(dir.join(&p), &file).expect("write");
        paths.push(p);
    }
    (dir, paths)
}

/// A pseudo-terminal of `cols` columns: the controlling side and the terminal side.
fn pty(cols: u16) -> (File, File) {
    let master =
        openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let terminal = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(name.to_str().expect("a UTF-8 tty name"))
        .expect("open the terminal side");
    tcsetwinsize(
        &terminal,
        Winsize {
            ws_row: 40,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .expect("set the window size");
    (File::from(master), terminal)
}

/// Where standard output and standard error go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Terminal,
    Pipe,
}

struct Run {
    code: i32,
    /// What the terminal received (empty when neither stream went there).
    terminal: Vec<u8>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn reader(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let mut buf = [0u8; 4096];
        // The terminal side closes when the child exits: then reading fails (EIO) or ends.
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            v.extend_from_slice(&buf[..n]);
        }
        v
    })
}

fn wait_bounded(child: &mut Child) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s.code().expect("exited normally, not by a signal");
        }
        if start.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stcheck did not finish within {HANG_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Run stcheck in `dir` with its standard output and error sent `stdout` and `stderr`, on a
/// terminal of `cols` columns.
fn run(dir: &Path, args: &[&str], stdout: To, stderr: To, cols: u16) -> Run {
    let (master, terminal) = pty(cols);
    let stdio = |to: To| match to {
        To::Terminal => Stdio::from(terminal.try_clone().expect("dup")),
        To::Pipe => Stdio::piped(),
    };
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("TERM", "xterm-256color")
        .env_remove("COLUMNS")
        .stdin(Stdio::null())
        .stdout(stdio(stdout))
        .stderr(stdio(stderr))
        .spawn()
        .expect("spawn stcheck");
    // Only the child holds the terminal side now: its exit ends the reader.
    drop(terminal);
    let term = reader(master);
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let code = wait_bounded(&mut child);
    let join = |h: Option<thread::JoinHandle<Vec<u8>>>| {
        h.map(|h| h.join().expect("reader")).unwrap_or_default()
    };
    Run {
        code,
        stdout: join(out),
        stderr: join(err),
        terminal: term.join().expect("terminal reader"),
    }
}

/// The plain output of the same run without any terminal.
fn plain(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run stcheck");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Output lines with the summary's elapsed time blanked.
fn without_elapsed(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind(" (") {
            Some(i) if l.starts_with("summary: ") => format!("{} (ELAPSED s)\n", &l[..i]),
            _ => format!("{l}\n"),
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn by_bytes_on_a_terminal_and_never_on_piped_stdout() {
    let (dir, paths) = files("bytes");
    let mut args = vec!["--deep", "--sha256", "-j", "1"];
    args.extend(paths.iter().map(String::as_str));
    let r = run(&dir, &args, To::Pipe, To::Terminal, 100);
    assert_eq!(r.code, 0);
    let drawn = text(&r.terminal);
    // The bar by bytes: done of total, the rate and the time left, then the file.
    assert!(drawn.contains("/12.00 MiB "), "{drawn:?}");
    assert!(drawn.contains("/s ETA "), "{drawn:?}");
    assert!(
        drawn.contains(" a-directory-with-a-rather-long-name"),
        "{drawn:?}"
    );
    // Standard output is the plain report, byte for byte.
    let stdout = text(&r.stdout);
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\r'),
        "{stdout:?}"
    );
    assert_eq!(
        without_elapsed(&stdout),
        without_elapsed(&plain(&dir, &args))
    );
}

#[test]
fn by_files_without_the_deep_scan() {
    let (dir, paths) = files("files");
    let mut args = vec!["-j", "1"];
    args.extend(paths.iter().map(String::as_str));
    let r = run(&dir, &args, To::Pipe, To::Terminal, 100);
    assert_eq!(r.code, 0);
    let drawn = text(&r.terminal);
    assert!(drawn.contains("/3 files "), "{drawn:?}");
    assert!(!drawn.contains("ETA"), "{drawn:?}");
}

#[test]
fn absent_when_stderr_is_piped_unless_forced_and_hidden_on_request() {
    let (dir, paths) = files("piped");
    let mut args = vec!["--deep"];
    args.extend(paths.iter().map(String::as_str));
    // Both streams piped: nothing is drawn anywhere.
    let r = run(&dir, &args, To::Pipe, To::Pipe, 100);
    assert_eq!(r.code, 0);
    assert_eq!(text(&r.stderr), "");
    assert!(r.terminal.is_empty());
    assert!(!r.stdout.contains(&b'\x1b'));
    // --no-progress on a terminal: nothing on it.
    let mut hidden = vec!["--no-progress"];
    hidden.extend_from_slice(&args);
    let r = run(&dir, &hidden, To::Pipe, To::Terminal, 100);
    assert!(r.terminal.is_empty(), "{:?}", text(&r.terminal));
    // --progress draws it even into a pipe (a CI log), and still never on stdout.
    let mut forced = vec!["--progress"];
    forced.extend_from_slice(&args);
    let r = run(&dir, &forced, To::Pipe, To::Pipe, 100);
    assert_eq!(r.code, 0);
    assert!(text(&r.stderr).contains("ETA"), "{:?}", text(&r.stderr));
    assert!(!r.stdout.contains(&b'\x1b'));
}

/// Both streams on one terminal of 30 columns, as a person runs it: the bar is redrawn around
/// every output line, and at the end the screen holds the output and nothing else.
#[test]
fn narrow_terminal_keeps_no_stale_lines() {
    let (dir, paths) = files("narrow");
    for deep in [true, false] {
        let mut args = vec!["-j", "1"];
        if deep {
            args.push("--deep");
        }
        args.extend(paths.iter().map(String::as_str));
        let r = run(&dir, &args, To::Terminal, To::Terminal, 30);
        assert_eq!(r.code, 0);
        let drawn = text(&r.terminal);
        let bar = if deep { "ETA" } else { "/3 " };
        assert!(drawn.contains(bar), "no bar was drawn: {drawn:?}");
        let mut screen = vt100::Parser::new(40, 30, 0);
        screen.process(&r.terminal);
        let shown = screen.screen().contents();
        let expected = plain(&dir, &args);
        assert_eq!(
            without_elapsed(&shown),
            without_elapsed(&expected),
            "the terminal shows more than the output (deep: {deep}):\n{shown}"
        );
    }
}
