//! The reader side of the conformance protocol (one case a process, `conformance/PROTOCOL.md`)
//! for the adapters of this crate: each gives `reader_main` one function from a file path to
//! an answer.

use std::process::ExitCode;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// What the implementation did with the file.
pub enum Answer {
    /// Loaded: the protocol's accepting JSON.
    Accept(Value),
    /// Refused, for this reason: exit 1.
    Reject(String),
    /// The file needs what the implementation lacks: exit 4.
    Unsupported(String),
}

/// The lower-case hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A decoded value as the protocol writes it: `nan`, `inf`, `-inf`, or the shortest decimal.
pub fn value(v: f64) -> Value {
    json!(if v.is_nan() {
        "nan".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else if v == 0.0 && v.is_sign_negative() {
        "-0".to_owned()
    } else {
        format!("{v}")
    })
}

/// Run a one-shot reader adapter: `NAME FILE`. Sharded sets (`STCONFORM_KIND=index`) are
/// unsupported. A panic in `read` ends the process (exit 101): a crash.
pub fn reader_main(name: &str, read: impl FnOnce(&str) -> Answer) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: {name} FILE");
        return ExitCode::from(2);
    };
    let answer = if std::env::var("STCONFORM_KIND").is_ok_and(|k| k == "index") {
        Answer::Unsupported(format!("{name} reads one file, not a sharded set"))
    } else {
        read(path)
    };
    match answer {
        Answer::Accept(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Answer::Reject(m) => {
            println!("{}", json!({ "message": m }));
            eprintln!("{m}");
            ExitCode::from(1)
        }
        Answer::Unsupported(m) => {
            println!("{}", json!({ "message": m }));
            eprintln!("{m}");
            ExitCode::from(4)
        }
    }
}
