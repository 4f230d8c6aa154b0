//! Real clients, unchanged: Debian's `clamdscan --stream`, PyPI's `clamd` with `requests`
//! streaming HTTP bodies, and `promtool check metrics`. A client that is not installed is
//! skipped with the reason printed, unless `STCHECK_SERVE_CLIENTS=required` (the CI stage
//! installs them and sets it, so CI never skips).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stcheck_gate::options::RunOptions;
use stcheck_gate::{Gate, Target};
use stcheck_print::JsonLines;

use crate::support;

/// The client's program, or `None` (the test skips) when it is absent and not required.
pub(crate) fn client(program: &Path, what: &str) -> Option<PathBuf> {
    if program.is_file() {
        return Some(program.to_path_buf());
    }
    let required = std::env::var("STCHECK_SERVE_CLIENTS").is_ok_and(|v| v == "required");
    assert!(
        !required,
        "{what}: {} is not installed (STCHECK_SERVE_CLIENTS=required)",
        program.display()
    );
    eprintln!(
        "skipped: {what}: {} is not installed (see docs/serve.md)",
        program.display()
    );
    None
}

/// The expected clamd answer for each corpus file: `OK` or the rule.
fn expected(files: &[PathBuf]) -> Vec<Option<String>> {
    let gate = Gate::new(RunOptions::default()).expect("options");
    files
        .iter()
        .map(|p| {
            let mut sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(gate.profile()));
            gate.check(&Target::File(p.clone()), 1, &|_: u64| {}, &mut sink);
            let v: serde_json::Value =
                serde_json::from_slice(&sink.into_inner()).expect("one JSON line");
            v["data"]["error"]["rule"].as_str().map(str::to_owned)
        })
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = support::root().join("target").join("serve-test-clients");
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(format!("{}-{name}", std::process::id()))
}

#[test]
fn clamdscan_stream_over_the_corpus() {
    let Some(clamdscan) = client(
        Path::new("/usr/bin/clamdscan"),
        "clamdscan (Debian clamdscan)",
    ) else {
        return;
    };
    let run = support::start(support::settings());
    let conf = scratch("clamd.conf");
    std::fs::write(
        &conf,
        format!("TCPSocket {}\nTCPAddr 127.0.0.1\n", run.clamd().port()),
    )
    .expect("config");
    let files = support::corpus_files();
    let out = Command::new(clamdscan)
        .arg("--stream")
        .arg("--no-summary")
        .arg(format!("--config-file={}", conf.display()))
        .args(&files)
        .stdin(Stdio::null())
        .output()
        .expect("clamdscan runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let want = expected(&files);
    for (file, rule) in files.iter().zip(&want) {
        let line = match rule {
            None => format!("{}: OK", file.display()),
            Some(rule) => format!("{}: SAFETENSORS.{rule} FOUND", file.display()),
        };
        assert!(
            stdout.lines().any(|l| l == line),
            "no line {line:?} in clamdscan's output:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // clamdscan's exit status: 1 when something was found.
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        run.server.verdicts().0 + run.server.verdicts().1,
        files.len() as u64
    );
    let _ = std::fs::remove_file(conf);
}

/// The Python of a venv with `clamd` and `requests` (`STCHECK_CLAMD_PYTHON`, else the one
/// the CI stage makes under target/).
fn python() -> Option<PathBuf> {
    let p = std::env::var_os("STCHECK_CLAMD_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::root().join("target/clamd-venv/bin/python"));
    client(&p, "PyPI clamd and requests in a venv")
}

const PYTHON_CLIENT: &str = r#"
import io, json, sys
import clamd, requests
port, http_port, listing = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cd = clamd.ClamdNetworkSocket(host="127.0.0.1", port=port)
assert cd.ping() == "PONG"
out = {}
for path in open(listing).read().splitlines():
    data = open(path, "rb").read()
    status, signature = cd.instream(io.BytesIO(data))["stream"]
    def body(data=data):
        for i in range(0, len(data), 1000):
            yield data[i:i + 1000]
    r = requests.post(f"http://127.0.0.1:{http_port}/v1/check", data=body())
    out[path] = [status, signature, r.status_code, r.json()["data"]["status"]]
print(json.dumps(out))
"#;

#[test]
fn python_clamd_and_requests_over_the_corpus() {
    let Some(python) = python() else {
        return;
    };
    let run = support::start(support::settings());
    let files = support::corpus_files();
    let listing = scratch("files.txt");
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(&listing, names.join("\n")).expect("listing");
    let out = Command::new(python)
        .arg("-c")
        .arg(PYTHON_CLIENT)
        .arg(run.clamd().port().to_string())
        .arg(run.http().port().to_string())
        .arg(&listing)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for (name, rule) in names.iter().zip(expected(&files)) {
        let want = match &rule {
            None => serde_json::json!(["OK", null, 200, "valid"]),
            Some(rule) => {
                serde_json::json!(["FOUND", format!("SAFETENSORS.{rule}"), 422, "invalid"])
            }
        };
        assert_eq!(got[name], want, "{name}");
    }
    let _ = std::fs::remove_file(listing);
}

#[test]
fn promtool_accepts_the_metrics() {
    let Some(promtool) = client(
        Path::new("/usr/bin/promtool"),
        "promtool (Debian prometheus)",
    ) else {
        return;
    };
    let run = support::start(support::settings());
    // Something in every series: verdicts of each kind, a rule, a busy-free histogram.
    let model = std::fs::read(support::root().join("examples/model.safetensors")).expect("m");
    let dup =
        std::fs::read(support::root().join("examples/duplicate-name.safetensors")).expect("d");
    support::post(run.http(), "", &model);
    support::post(run.http(), "", &dup);
    let text = support::http(run.http(), "GET", "/metrics", "", b"").body;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&text).expect("write");
    }
    let out = child.wait_with_output().expect("promtool ends");
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn curl_uploads_a_file_and_a_pipe() {
    let Some(curl) = client(Path::new("/usr/bin/curl"), "curl") else {
        return;
    };
    let run = support::start(support::settings());
    let url = format!("http://{}/v1/check", run.http());
    let dup = support::root().join("examples/duplicate-name.safetensors");
    let model = support::root().join("examples/model.safetensors");
    // docs/serve.md: `curl -T FILE -X POST URL` (a length), `curl -T - -X POST URL` (chunked).
    let by_file = Command::new(&curl)
        .args(["-sS", "-X", "POST", "-T"])
        .arg(&dup)
        .args(["-w", "\\n%{http_code}", &url])
        .output()
        .expect("curl runs");
    let out = String::from_utf8_lossy(&by_file.stdout);
    assert!(out.ends_with("\n422"), "{out}");
    assert!(out.contains("\"rule\":\"JSON-DUPLICATE-KEY\""), "{out}");
    let by_pipe = Command::new(&curl)
        .args([
            "-sS",
            "-X",
            "POST",
            "-T",
            "-",
            "-w",
            "\\n%{http_code}",
            &url,
        ])
        .stdin(std::fs::File::open(&model).expect("model"))
        .output()
        .expect("curl runs");
    let out = String::from_utf8_lossy(&by_pipe.stdout);
    assert!(out.ends_with("\n200"), "{out}");
    assert!(out.contains("\"status\":\"valid\""), "{out}");
}

/// A Prometheus process, ended when dropped.
struct Prometheus(std::process::Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_a_counter_and_its_query_api_reads_it_back() {
    let Some(prometheus) = client(Path::new("/usr/bin/prometheus"), "prometheus (Debian)") else {
        return;
    };
    let run = support::start(support::settings());
    let dup = std::fs::read(support::root().join("examples/duplicate-name.safetensors"))
        .expect("example");
    for _ in 0..3 {
        assert_eq!(support::post(run.http(), "", &dup).status, 422);
    }
    let dir = scratch("prometheus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: stcheck\n    \
             static_configs:\n      - targets: ['{}']\n",
            run.http()
        ),
    )
    .expect("config");
    // A loopback port for its web API: one the system gave and that was let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let web: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let _prometheus = Prometheus(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("log")).expect("log"))
            .spawn()
            .expect("prometheus runs"),
    );
    // Poll its query API (a hang guard, not a timing assertion) until the scrape is in.
    let query = "/api/v1/query?query=stcheck_invalid_total%7Brule%3D%22JSON-DUPLICATE-KEY%22%7D";
    let start = std::time::Instant::now();
    loop {
        if let Ok(s) = std::net::TcpStream::connect(web) {
            drop(s);
            let r = support::http(web, "GET", query, "", b"");
            if r.status == 200 {
                let v = r.json();
                if let Some(value) = v["data"]["result"][0]["value"][1].as_str() {
                    assert_eq!(value, "3", "{v}");
                    break;
                }
            }
        }
        assert!(
            start.elapsed() < support::HANG_GUARD,
            "hang guard: no scrape read back; see {}",
            dir.join("log").display()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
