//! What the CLI's integration tests share: running the binary and reading its JSON Lines.
#![allow(dead_code, unreachable_pub)]

use std::process::Command;

use serde_json::Value;

/// The `stcheck` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_stcheck");

/// What a run of `stcheck` gave.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A command for the binary, with `HF_TOKEN` and `HF_ENDPOINT` of the environment left out (a
/// test sets what it needs).
pub fn stcheck() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("HF_TOKEN").env_remove("HF_ENDPOINT");
    cmd
}

/// Run `cmd` to its end: its exit code and its output as text.
pub fn output(cmd: &mut Command) -> Out {
    let out = cmd.output().expect("run stcheck");
    Out {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every line of `s` parsed as JSON.
pub fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}
