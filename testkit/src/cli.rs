//! Running a command-line binary under test and reading its JSON Lines.

use std::process::Command;

use serde_json::Value;

/// What a run gave: its exit code and its output as text.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A command for the binary at `bin`, with `HF_TOKEN` and `HF_ENDPOINT` of the environment
/// left out (a test sets what it needs).
pub fn command(bin: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("HF_TOKEN").env_remove("HF_ENDPOINT");
    cmd
}

/// Run `cmd` to its end: its exit code and its output as text. A run ended by a signal (no
/// exit code) fails the test.
pub fn output(cmd: &mut Command) -> Out {
    let out = cmd.output().expect("run the binary");
    Out {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every line of `s` parsed as JSON (a line that is not fails the test, naming it).
pub fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}
