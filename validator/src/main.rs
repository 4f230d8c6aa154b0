//! `stcheck [OPTIONS] PATH...`: validate safetensors files, directories and sharded
//! checkpoints under the strict profile. See the `cli` module and `stcheck --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
