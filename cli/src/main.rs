//! `stcheck [OPTIONS] PATH...`: validate safetensors files, directories, sharded checkpoints
//! and URLs under the strict profile. See `run.rs` and `stcheck --help`.
//!
//! `stcheck serve [OPTIONS]`: the service (`stcheck-serve`, docs/serve.md). A file named
//! `serve` is checked as `./serve`.

mod args;
mod progress;
mod run;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == "serve") {
        return stcheck_serve::main(&args.collect::<Vec<_>>());
    }
    run::main()
}
