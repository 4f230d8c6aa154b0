//! `stcorpus`: generate the golden corpus from its recipes.
//!
//! ```text
//! stcorpus generate [--out DIR] [--recipes DIR]   committed cases + manifest.json (default corpus/)
//! stcorpus --large DIR [--recipes DIR] [--corpus DIR|FILE.tar.gz]
//!                                                 the large on-demand cases into DIR
//! stcorpus --version
//! stcorpus pack [--corpus DIR] --out FILE.tar.gz  a versioned release archive (reproducible)
//! stcorpus export [--corpus DIR] --out DIR        the same release, unpacked (for a wheel)
//! stcorpus verify DIR|FILE.tar.gz                 check a release against its RELEASE.json
//! ```
//!
//! Exit status: 0 on success, 2 on an error (a bad recipe, an I/O error, a bad argument).

use std::path::PathBuf;
use std::process::ExitCode;

use stcheck_conformance::corpus;
use stcheck_conformance::harness::main::version_line;
use stcheck_conformance::harness::paths::find_corpus;

const USAGE: &str = "usage: stcorpus generate [--out DIR] [--recipes DIR]
       stcorpus --large DIR [--recipes DIR] [--corpus DIR|FILE.tar.gz]
       stcorpus pack [--corpus DIR] --out FILE.tar.gz
       stcorpus export [--corpus DIR] --out DIR
       stcorpus verify DIR|FILE.tar.gz

generate writes corpus/ from its recipes (a dev-profile build in the checkout); --large the
large cases, from the recipes of --recipes, else of the corpus a run would use (--corpus,
$STCONFORM_CORPUS, ./corpus, the bundled release, the checkout's: see stconform --help). pack writes a release
archive of corpus/ (the reader cases, the writer tasks, the recipes and documents) under
stcheck-corpus-VERSION/ with a RELEASE.json (corpus and manifest versions, case counts, a
checksum of the contents), the same bytes every time; export writes the release unpacked;
verify checks one. Exit status: 0 on success, 2 on an error.";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stcorpus: {e}");
            ExitCode::from(2)
        }
    }
}

fn release(command: &str, args: &[String]) -> Result<(), String> {
    let mut corpus_dir = corpus::default_corpus_dir();
    let mut out: Option<PathBuf> = None;
    let mut it = args.iter();
    let mut target = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--corpus" => corpus_dir = it.next().ok_or("--corpus needs a directory")?.into(),
            "--out" => out = Some(it.next().ok_or("--out needs a path")?.into()),
            other if command == "verify" && target.is_none() => target = Some(PathBuf::from(other)),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let show = |r: &corpus::archive::Release| {
        format!(
            "corpus {} (manifest {}): {} cases, {} large, {} writer tasks, {} files, content \
             sha256 {}",
            r.corpus_version,
            r.manifest_version,
            r.cases,
            r.large_cases,
            r.writer_tasks,
            r.files,
            r.content_sha256
        )
    };
    match command {
        "pack" => {
            let out = out.ok_or("pack needs --out FILE.tar.gz")?;
            let r = corpus::archive::pack(&corpus_dir, &out)?;
            println!("{}: {}", out.display(), show(&r));
        }
        "export" => {
            let out = out.ok_or("export needs --out DIR")?;
            let r = corpus::archive::export(&corpus_dir, &out)?;
            println!("{}: {}", out.display(), show(&r));
        }
        _ => {
            let target = target.ok_or("verify needs a directory or an archive")?;
            // An archive is checked in memory: no directory another user could plant.
            let r = if target.is_dir() {
                corpus::archive::verify(&target)?
            } else {
                corpus::archive::verify_archive(&target)?
            };
            println!("{}: intact, {}", target.display(), show(&r));
        }
    }
    Ok(())
}

/// `--large DIR`: the files of the large cases, built from the recipes (the bytes only; the
/// manifest already lists them), so it works in any build and with no toolchain.
fn large(args: Vec<String>) -> Result<(), String> {
    let mut dir: Option<PathBuf> = None;
    let mut recipes: Option<PathBuf> = None;
    let mut corpus_arg: Option<PathBuf> = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--large" => dir = Some(it.next().ok_or("--large needs a directory")?.into()),
            "--recipes" => recipes = Some(it.next().ok_or("--recipes needs a directory")?.into()),
            "--corpus" => corpus_arg = Some(it.next().ok_or("--corpus needs a path")?.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let dir = dir.ok_or("--large needs a directory")?;
    let recipes = match recipes {
        Some(r) => r,
        None => find_corpus(corpus_arg.as_deref())?.root.join("recipes"),
    };
    let all = corpus::load_recipes(&recipes)?;
    let written = corpus::write_large(&all, &dir)?;
    for p in &written {
        println!("{}", dir.join(p).display());
    }
    println!("{} large cases written to {}", written.len(), dir.display());
    Ok(())
}

fn run(args: Vec<String>) -> Result<(), String> {
    if let Some(command @ ("pack" | "export" | "verify")) = args.first().map(String::as_str) {
        return release(command, &args[1..]);
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    if args.iter().any(|a| a == "--version") {
        println!("{}", version_line("stcorpus"));
        return Ok(());
    }
    if args.iter().any(|a| a == "--large") {
        return large(args);
    }
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
    let mut recipes: Option<PathBuf> = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "generate" => generate = true,
            "--out" => out = Some(it.next().ok_or("--out needs a directory")?.into()),
            "--recipes" => recipes = Some(it.next().ok_or("--recipes needs a directory")?.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let recipes = recipes.unwrap_or_else(|| corpus::default_corpus_dir().join("recipes"));
    // The reference profile catches the reference crate's panics; keep them off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
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
