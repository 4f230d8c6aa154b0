//! `stcorpus`: generate the golden corpus from its recipes.
//!
//! ```text
//! stcorpus generate [--out DIR] [--recipes DIR]   committed cases + manifest.json (default corpus/)
//! stcorpus --large DIR [--recipes DIR]            the large on-demand cases into DIR
//! ```
//!
//! Exit status: 0 on success, 2 on an error (a bad recipe, an I/O error, a bad argument).

use std::path::PathBuf;
use std::process::ExitCode;

use stcheck_conformance::corpus;

const USAGE: &str = "usage: stcorpus generate [--out DIR] [--recipes DIR]
       stcorpus --large DIR [--recipes DIR]";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stcorpus: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    if !cfg!(debug_assertions) {
        // The manifest's `reference` verdicts are observed with overflow checks on (the dev
        // profile): there the reference's unchecked offset addition panics, where a release
        // build wraps and rejects. A release build would write a different manifest.
        return Err(
            "build stcorpus with the dev profile (no --release): see corpus/README.md".into(),
        );
    }
    let mut generate = false;
    let mut out: Option<PathBuf> = None;
    let mut large: Option<PathBuf> = None;
    let mut recipes: Option<PathBuf> = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "generate" => generate = true,
            "--out" => out = Some(it.next().ok_or("--out needs a directory")?.into()),
            "--large" => large = Some(it.next().ok_or("--large needs a directory")?.into()),
            "--recipes" => recipes = Some(it.next().ok_or("--recipes needs a directory")?.into()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let recipes = recipes.unwrap_or_else(|| corpus::default_corpus_dir().join("recipes"));
    // The reference profile catches the reference crate's panics; keep them off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    if let Some(dir) = large {
        let all = corpus::load_recipes(&recipes)?;
        let cases = corpus::large_cases(&all, Some(&dir))?;
        for c in &cases {
            println!("{}", dir.join(&c.path).display());
        }
        println!("{} large cases written to {}", cases.len(), dir.display());
        return Ok(());
    }
    if !generate {
        return Err(USAGE.to_owned());
    }
    let out = out.unwrap_or_else(corpus::default_corpus_dir);
    let s = corpus::generate(&recipes, &out)?;
    println!(
        "{} cases ({} bytes of files) and manifest.json written to {}; {} large cases listed; {} stale files removed",
        s.files,
        s.bytes,
        out.display(),
        s.large,
        s.removed
    );
    Ok(())
}
