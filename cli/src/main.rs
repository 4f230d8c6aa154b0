//! `stcheck [OPTIONS] PATH...`: validate safetensors files, directories, sharded checkpoints
//! and URLs under the strict profile. See `run.rs` and `stcheck --help`.

mod args;
mod progress;
mod run;

fn main() -> std::process::ExitCode {
    run::main()
}
