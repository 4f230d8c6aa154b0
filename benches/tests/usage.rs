//! Every helper binary of `benches/` answers `--help` with its usage (exit 0) and refuses an
//! option it does not know or one argument too many with its usage on standard error (exit 2),
//! before doing anything: `memgen --help` once wrote 588 MB into a directory named `--help`
//! (issue 34), and `clamd_sink -x` tried to listen on the address `-x`.

use std::process::Command;

/// Each binary, with the most positional arguments it takes (`None`: any number).
const BINARIES: [(&str, &str, Option<usize>); 5] = [
    ("clamd_sink", env!("CARGO_BIN_EXE_clamd_sink"), Some(1)),
    ("hub_rtt", env!("CARGO_BIN_EXE_hub_rtt"), Some(0)),
    ("memgen", env!("CARGO_BIN_EXE_memgen"), Some(2)),
    ("read_metadata", env!("CARGO_BIN_EXE_read_metadata"), None),
    ("scan_floor", env!("CARGO_BIN_EXE_scan_floor"), Some(2)),
];

#[test]
fn every_helper_binary_prints_its_usage_and_refuses_what_it_does_not_take() {
    let scratch = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("usage");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    for (name, bin, takes) in BINARIES {
        let run = |args: &[&str]| {
            Command::new(bin)
                .args(args)
                .current_dir(&scratch)
                .output()
                .expect("run the binary")
        };
        let help = run(&["--help"]);
        assert_eq!(help.status.code(), Some(0), "{name} --help");
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(
            text.starts_with(&format!("usage: {name}")),
            "{name}: {text}"
        );
        let mut refused = vec![vec!["-x"], vec!["--nope"], vec!["x", "-x"]];
        refused.extend(takes.map(|n| vec!["x"; n + 1]));
        for args in refused {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("usage: {name}")),
                "{name} {args:?}: {err}"
            );
            assert!(out.stdout.is_empty(), "{name} {args:?} printed to stdout");
        }
        // Nothing was written where it ran (memgen's output directory was its argument).
        let left: Vec<_> = std::fs::read_dir(&scratch).expect("ls").collect();
        assert!(left.is_empty(), "{name} left {left:?}");
    }
}
