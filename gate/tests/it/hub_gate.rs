//! The gate's face of a whole repository, as the Python package reaches it: `Gate::targets`
//! lists `hf://org/repo` at one commit (through `HF_ENDPOINT`), `Gate::check` checks each
//! target; and what the events carry (the gate's status, each shard's shown text). It sets the process environment, under
//! `env_lock`.
#![cfg(feature = "remote")]

use std::ffi::OsString;
use std::io;

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, ReadError};
use stcheck_gate::options::RunOptions;
use stcheck_gate::{target_of, Gate, Place, Shown, Sink, Status, Target, Unchecked, Via};
use stcheck_testkit::http::{serve_file, zeros_file, Reply, Server};

#[derive(Default)]
struct Collect(Vec<String>);

impl Sink for Collect {
    fn file(&mut self, at: &Shown<'_>, _: &Checked<'_>, via: &Via, s: Status) -> io::Result<()> {
        let commit = match via {
            Via::Remote { hub, .. } => hub.commit.clone().unwrap_or_default(),
            Via::Local(_) | Via::Memory => String::new(),
        };
        self.0
            .push(format!("file {} {} {commit}", at.text, s == Status::Valid));
        Ok(())
    }
    fn index_start(&mut self, _: &Shown<'_>, _: Option<stcheck::ReadMode>) -> io::Result<()> {
        Ok(())
    }
    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        _: ShardOutcome<'_, '_>,
        _: Option<&Via>,
        s: Status,
    ) -> io::Result<()> {
        let Place::Path(p) = at.place else {
            return Err(io::Error::other("a shard on disk without its path"));
        };
        assert!(p.ends_with(name), "{p:?} {name}");
        self.0
            .push(format!("shard {name} {} {}", at.text, s.as_str()));
        Ok(())
    }
    fn index_end(
        &mut self,
        at: &Shown<'_>,
        _: Result<&IndexReport, &ReadError>,
        _: &Via,
        s: Status,
    ) -> io::Result<()> {
        self.0.push(format!("index {} {}", at.text, s.as_str()));
        Ok(())
    }
    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, _: Unchecked) -> io::Result<()> {
        self.0
            .push(format!("not_checked {} {}", at.text, why.code()));
        Ok(())
    }
}

#[test]
fn gate_targets_list_a_repository_at_one_commit() {
    let _env = crate::env_lock();
    let commit = "ab".repeat(20);
    let model = zeros_file(2);
    let (c, m) = (commit.clone(), model.clone());
    let server = Server::start(move |req| match req.path() {
        "/api/models/org/repo/revision/main" => Reply::new(200).body(format!(r#"{{"sha":"{c}"}}"#)),
        p if p == format!("/api/models/org/repo/tree/{c}") => Reply::new(200).body(
            r#"[{"type":"file","path":"model.safetensors","size":1},
                {"type":"file","path":"pytorch_model.bin","size":1},
                {"type":"file","path":"README.md","size":1}]"#,
        ),
        p if p == format!("/org/repo/resolve/{c}/model.safetensors") => {
            serve_file(req, &m, true).header("X-Repo-Commit", c.as_str())
        }
        _ => Reply::new(404),
    });
    std::env::set_var("HF_ENDPOINT", server.url(""));
    std::env::remove_var("HF_TOKEN");
    let gate = Gate::new(RunOptions::default()).expect("options");
    let targets = gate.targets(&[OsString::from("hf://org/repo")]);
    let shown: Vec<String> = targets
        .iter()
        .map(|t| match t {
            Target::Url(u) => format!("url {u}"),
            Target::UrlNotChecked(u, e) => format!("not_checked {u} {}", e.code()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        shown,
        [
            format!("url hf://org/repo@{commit}/model.safetensors"),
            format!("not_checked hf://org/repo@{commit}/pytorch_model.bin other_format"),
        ]
    );
    let mut sink = Collect::default();
    let statuses: Vec<Status> = targets
        .iter()
        .map(|t| gate.check(t, 1, &|_: u64| {}, &mut sink).status)
        .collect();
    assert_eq!(statuses, [Status::Valid, Status::NotChecked]);
    assert_eq!(
        sink.0[0],
        format!("file hf://org/repo@{commit}/model.safetensors true {commit}")
    );
    assert!(sink.0[1].ends_with("pytorch_model.bin other_format"));

    // allow_other_formats=True: only the weights.
    let mut options = RunOptions::default();
    options.allow_other_formats = true;
    let gate = Gate::new(options).expect("options");
    assert_eq!(gate.targets(&[OsString::from("hf://org/repo")]).len(), 1);

    // Issue 29: the events carry what the gate decided, a shard's shown text included (its
    // set's directory as shown, then its escaped name), so that no sink builds either again.
    let dir = std::env::temp_dir().join(format!("stcheck-gate-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("good.safetensors"), &model).expect("write");
    std::fs::write(dir.join("b\tad.safetensors"), [1u8, 2, 3]).expect("write");
    let index = dir.join("m.safetensors.index.json");
    let map =
        r#"{"weight_map":{"w":"good.safetensors","x":"b\tad.safetensors","y":"gone.safetensors"}}"#;
    std::fs::write(&index, map).expect("write");
    let mut sink = Collect::default();
    let done = gate.check(&target_of(index), 1, &|_: u64| {}, &mut sink);
    assert_eq!(done.status, Status::Invalid);
    let d = stcheck_gate::shown_path(&dir);
    assert_eq!(
        sink.0,
        [
            format!("shard good.safetensors {d}/good.safetensors valid"),
            format!("shard b\tad.safetensors {d}/b\\tad.safetensors invalid"),
            format!("shard gone.safetensors {d}/gone.safetensors invalid"),
            format!("index {d}/m.safetensors.index.json invalid"),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 34: the repositories of a run are listed at once, up to the URL jobs (`--url-jobs`)
/// and no more, each at the commit its revision names, in the order given. Each revision
/// request is held until as many have arrived as jobs may list at once (a hang guard only
/// bounds the wait): listed one after another, the most listing requests in flight is 1.
#[test]
fn gate_targets_list_the_repositories_of_a_run_at_once_up_to_the_url_jobs() {
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};
    const JOBS: usize = 2;
    const REPOSITORIES: usize = 5;
    let _env = crate::env_lock();
    let commit = |i: usize| format!("{:040x}", i + 1);
    let arrived = Arc::new((Mutex::new(0usize), Condvar::new()));
    let model = zeros_file(2);
    let server = {
        let arrived = Arc::clone(&arrived);
        Server::start_counting(
            |req| req.path().starts_with("/api/"),
            move |req| {
                let path = req.path();
                for i in 0..REPOSITORIES {
                    let c = commit(i);
                    if path == format!("/api/models/org/r{i}/revision/main") {
                        let (count, changed) = &*arrived;
                        let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
                        *n += 1;
                        changed.notify_all();
                        let guard = Instant::now() + Duration::from_secs(20);
                        while *n < JOBS && Instant::now() < guard {
                            let left = guard.saturating_duration_since(Instant::now());
                            n = changed
                                .wait_timeout(n, left)
                                .map_or_else(|e| e.into_inner().0, |r| r.0);
                        }
                        return Reply::new(200).body(format!(r#"{{"sha":"{c}"}}"#));
                    }
                    if path == format!("/api/models/org/r{i}/tree/{c}") {
                        return Reply::new(200)
                            .body(r#"[{"type":"file","path":"model.safetensors","size":1}]"#);
                    }
                    if path == format!("/org/r{i}/resolve/{c}/model.safetensors") {
                        return serve_file(req, &model, true).header("X-Repo-Commit", c.as_str());
                    }
                }
                Reply::new(404)
            },
        )
    };
    std::env::set_var("HF_ENDPOINT", server.url(""));
    std::env::remove_var("HF_TOKEN");
    let mut options = RunOptions::default();
    options.url_jobs = Some(JOBS);
    let gate = Gate::new(options).expect("options");
    let args: Vec<OsString> = (0..REPOSITORIES)
        .map(|i| OsString::from(format!("hf://org/r{i}")))
        .collect();
    let targets = gate.targets(&args);
    let shown: Vec<String> = targets
        .iter()
        .map(|t| match t {
            Target::Url(u) => u.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    let expected: Vec<String> = (0..REPOSITORIES)
        .map(|i| format!("hf://org/r{i}@{}/model.safetensors", commit(i)))
        .collect();
    assert_eq!(shown, expected);
    assert_eq!(server.most_in_flight(), JOBS, "listing requests at once");
    let listed = server
        .requests()
        .iter()
        .filter(|r| r.path().starts_with("/api/"))
        .count();
    assert_eq!(
        listed,
        2 * REPOSITORIES,
        "a revision and a listing page each"
    );
    let mut sink = Collect::default();
    for t in &targets {
        assert_eq!(
            gate.check(t, 1, &|_: u64| {}, &mut sink).status,
            Status::Valid
        );
    }
}
