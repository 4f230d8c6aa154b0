//! `stcheck-serve ARGS...`: the same as `stcheck serve ARGS...`.

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    stcheck_serve::main(&args)
}
