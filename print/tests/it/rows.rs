//! `JsonLines::with_rows`: one row per record written, each column holding what the record's
//! line says (the Python package's Parquet scan stores these rows beside the lines).

use std::path::Path;

use serde_json::Value;
use stcheck::{Checker, Config, Profile, ReadError, ReadErrorKind};
use stcheck_gate::{Place, Shown, Sink, Status, Unchecked, Via};
use stcheck_print::records::Row;
use stcheck_print::{JsonLines, Options};

fn corpus(path: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn at(text: &str) -> Shown<'_> {
    Shown {
        text,
        place: Place::Stdin,
    }
}

/// The row a line's record gives, read from the parsed line: the oracle.
fn expected(line: &str) -> (Value, [Value; 12]) {
    let record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let data = &record["data"];
    let error = match (&data["error"], &data["errors"][0]) {
        (Value::Null, first) => first.clone(),
        (e, _) => e.clone(),
    };
    let message = match &error["message"] {
        Value::Null => match &data["message"] {
            Value::Null => data["io_error"].clone(),
            m => m.clone(),
        },
        m => m.clone(),
    };
    let status = match record["type"].as_str() {
        Some("not_checked") => Value::from("not_checked"),
        _ => data["status"].clone(),
    };
    let columns = [
        record["type"].clone(),
        data["path"].clone(),
        status,
        error["rule"].clone(),
        error["offset"].clone(),
        error["tensor"].clone(),
        message,
        data["reason"].clone(),
        data["size"].clone(),
        data["tensors"].clone(),
        data["parameters"].clone(),
        data["deep"]["sha256"].clone(),
    ];
    (record, columns)
}

fn columns(row: &Row) -> [Value; 12] {
    [
        Value::from(row.kind),
        Value::from(row.path.as_str()),
        Value::from(row.status),
        row.rule.map_or(Value::Null, Value::from),
        row.offset.map_or(Value::Null, Value::from),
        row.tensor.as_deref().map_or(Value::Null, Value::from),
        row.message.as_deref().map_or(Value::Null, Value::from),
        row.reason.map_or(Value::Null, Value::from),
        row.size.map_or(Value::Null, Value::from),
        row.tensors.map_or(Value::Null, Value::from),
        row.parameters.map_or(Value::Null, Value::from),
        row.sha256.as_deref().map_or(Value::Null, Value::from),
    ]
}

#[test]
fn each_record_written_gives_the_row_its_line_says() {
    let files = [
        "valid/dtype/bf16.safetensors",
        "valid/data/arbitrary-bytes.safetensors",
        "invalid/layout/begin-after-end.safetensors",
        "invalid/layout/contained.safetensors",
    ];
    let mut printed = 0;
    for profile in [Profile::Strict, Profile::Reference] {
        for sha256 in [false, true] {
            let config = Config::default().sha256(sha256).reference(true);
            let mut sink = JsonLines::new(Vec::new(), Options::new(profile)).with_rows();
            for file in files {
                let bytes = corpus(file);
                let checked = Checker::check_slice(&config, &bytes);
                let status = Status::of_file(&checked, profile);
                sink.file(&at(file), &checked, &Via::Memory, status)
                    .expect("written");
            }
            let policy = ReadError::new(ReadErrorKind::NotRegular, "a FIFO");
            sink.not_checked(&at("pipe"), &policy, Unchecked::Policy)
                .expect("written");
            let failed = ReadError::new(ReadErrorKind::Io, "permission denied");
            sink.not_checked(&at("locked"), &failed, Unchecked::Unreadable)
                .expect("written");
            let rows = sink.take_rows();
            let text = String::from_utf8(sink.into_inner()).expect("UTF-8");
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(rows.len(), lines.len());
            assert_eq!(rows.len(), files.len() + 2);
            for (row, line) in rows.iter().zip(&lines) {
                let (_, want) = expected(line);
                assert_eq!(columns(row), want, "{line}");
                printed += 1;
            }
            let statuses: Vec<&str> = rows.iter().map(|r| r.status).collect();
            assert!(statuses.contains(&"valid") && statuses.contains(&"invalid"));
            assert_eq!(statuses[files.len()..], ["not_checked", "io_error"]);
            let hashed = rows.iter().filter(|r| r.sha256.is_some()).count();
            match (sha256, profile) {
                (true, Profile::Strict) => assert_eq!(hashed, 2),
                _ => assert_eq!(hashed, 0),
            }
        }
    }
    assert_eq!(printed, 4 * (files.len() + 2));
}

#[test]
fn no_rows_unless_asked() {
    let config = Config::default();
    let bytes = corpus("valid/dtype/bf16.safetensors");
    let checked = Checker::check_slice(&config, &bytes);
    let mut sink = JsonLines::new(Vec::new(), Options::new(Profile::Strict));
    let status = Status::of_file(&checked, Profile::Strict);
    sink.file(&at("x"), &checked, &Via::Memory, status)
        .expect("written");
    assert!(sink.take_rows().is_empty());
}

#[test]
fn rows_only_keeps_the_same_rows_and_writes_nothing() {
    let config = Config::default().reference(true);
    for profile in [Profile::Strict, Profile::Reference] {
        let mut written = JsonLines::new(Vec::new(), Options::new(profile)).with_rows();
        let mut bare = JsonLines::new(Vec::new(), Options::new(profile)).rows_only();
        for file in [
            "valid/dtype/bf16.safetensors",
            "invalid/layout/contained.safetensors",
        ] {
            let bytes = corpus(file);
            let checked = Checker::check_slice(&config, &bytes);
            let status = Status::of_file(&checked, profile);
            for sink in [&mut written, &mut bare] {
                sink.file(&at(file), &checked, &Via::Memory, status)
                    .expect("written");
            }
        }
        let failed = ReadError::new(ReadErrorKind::Io, "permission denied");
        let policy = ReadError::new(ReadErrorKind::NotRegular, "a FIFO");
        for sink in [&mut written, &mut bare] {
            sink.not_checked(&at("locked"), &failed, Unchecked::Unreadable)
                .expect("written");
            sink.not_checked(&at("pipe"), &policy, Unchecked::Policy)
                .expect("written");
        }
        let rows = bare.take_rows();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows, written.take_rows());
        assert!(bare.into_inner().is_empty());
        assert_eq!(
            String::from_utf8(written.into_inner())
                .expect("UTF-8")
                .lines()
                .count(),
            4
        );
    }
}
