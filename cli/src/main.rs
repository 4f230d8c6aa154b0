//! `stcheck [OPTIONS] PATH...`: validate safetensors files, directories, sharded checkpoints
//! and URLs under the strict profile. See `run.rs` and `stcheck --help`.

mod args;
mod check;
mod progress;
mod remote;
mod render;
mod run;

fn main() -> std::process::ExitCode {
    run::main()
}
