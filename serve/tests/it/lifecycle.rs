//! The service's lifecycle: SIGHUP reads the configuration again (the limits, the options and
//! the token file; the sockets kept; a bad configuration refused and the one in force kept);
//! sockets passed by systemd's socket activation, named.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;

use stcheck_serve::settings::Parsed;
use stcheck_serve::Settings;

use crate::support::{self, command, http, instream};

fn model() -> Vec<u8> {
    std::fs::read(support::root().join("examples/model.safetensors")).expect("example")
}

pub(crate) fn from_args(args: &[&str]) -> Settings {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    match Settings::from_args(&args).expect("settings") {
        Parsed::Run(s) => *s,
        Parsed::Help => panic!("help"),
    }
}

#[test]
fn a_reload_reads_the_file_again_and_keeps_the_old_settings_when_the_new_are_bad() {
    let model = model();
    let config = support::scratch("reload.toml", "max-stream = 100\n");
    let token = support::scratch("reload-token", "t0ken\n");
    let path = config.to_str().expect("UTF-8");
    let run = support::start(from_args(&[
        "--config",
        path,
        "--clamd",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
    ]));
    let (clamd, web) = (run.clamd(), run.http());
    assert!(command(clamd, b"zSTATS\0").contains("LIMIT: StreamMaxLength 100\n"));
    assert_eq!(
        instream(clamd, &model, 64),
        "INSTREAM size limit exceeded. ERROR"
    );
    assert_eq!(http(web, "GET", "/metrics", "", b"").status, 200);

    // New limits, a token, an option, and another address (which waits for a restart).
    std::fs::write(
        &config,
        format!(
            "max-stream = \"1M\"\ntoken-file = {:?}\ndeny = [\"LAYOUT-ALIGN\"]\nclamd-socket = \"/nonexistent/clamd.sock\"\n",
            token.to_str().expect("UTF-8")
        ),
    )
    .expect("config");
    let said = run.server.reload().expect("reloaded");
    assert!(
        said.iter().any(|l| l.contains("sockets are kept")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|l| l.contains("StreamMaxLength=1048576")),
        "{said:?}"
    );
    assert_eq!(run.http(), web);
    assert!(!std::path::Path::new("/nonexistent/clamd.sock").exists());
    assert!(command(clamd, b"zSTATS\0").contains("LIMIT: StreamMaxLength 1048576\n"));
    assert_eq!(instream(clamd, &model, 64), "stream: OK");
    assert_eq!(http(web, "GET", "/metrics", "", b"").status, 401);
    let metrics = http(
        web,
        "GET",
        "/metrics",
        "authorization: Bearer t0ken\r\n",
        b"",
    );
    assert_eq!(metrics.status, 200);
    assert!(metrics
        .text()
        .contains("stcheck_limit{limit=\"StreamMaxLength\"} 1048576"));

    // Refused, each: not TOML, a bad limit, an unknown rule, a token file that is not there.
    for bad in [
        "max-stream = \n".to_owned(),
        "max-stream = \"0\"\n".to_owned(),
        "deny = [\"NO-SUCH-RULE\"]\n".to_owned(),
        "token-file = \"/nonexistent/token\"\n".to_owned(),
    ] {
        std::fs::write(&config, &bad).expect("config");
        let e = run.server.reload().expect_err(&bad);
        assert!(!e.is_empty());
        assert!(command(clamd, b"zSTATS\0").contains("LIMIT: StreamMaxLength 1048576\n"));
        assert_eq!(http(web, "GET", "/metrics", "", b"").status, 401, "{bad}");
    }
    // A check option applies to the next stream.
    std::fs::write(&config, "max-stream = \"1M\"\nmax-header-size = 16\n").expect("config");
    run.server.reload().expect("reloaded");
    let bounded = instream(clamd, &model, 64);
    assert!(
        bounded.starts_with("stream: SAFETENSORS.FRAME-HEADER-"),
        "{bounded}"
    );
    std::fs::remove_file(&config).expect("rm");
    assert!(run.server.reload().is_err(), "the file is gone");
    let still = instream(clamd, &model, 64);
    assert_eq!(still, bounded, "the settings in force are kept");
    run.stop();
    let _ = std::fs::remove_file(&token);
}

#[test]
fn sighup_reloads_the_process() {
    let _turn = support::start_with(|s| {
        s.clamd = None;
        s.http = None;
    });
    let config = support::scratch("sighup.toml", "max-stream = 100\n");
    let mut p = support::Process::spawn(&[
        "--config",
        config.to_str().expect("UTF-8"),
        "--clamd",
        "127.0.0.1:0",
    ]);
    let clamd = p.clamd();
    p.line("stcheck serve: limits: StreamMaxLength=100 ");
    std::fs::write(&config, "max-stream = 200\n").expect("config");
    p.signal("-HUP");
    p.line("stcheck serve: SIGHUP: the configuration is read again");
    p.line("stcheck serve: limits: StreamMaxLength=200 ");
    assert!(command(clamd, b"zSTATS\0").contains("LIMIT: StreamMaxLength 200\n"));
    std::fs::write(&config, "workers = \"many\"\n").expect("config");
    p.signal("-HUP");
    let why = p.line("stcheck serve: SIGHUP: the new configuration is refused");
    assert!(why.contains("workers"), "{why}");
    assert!(command(clamd, b"zSTATS\0").contains("LIMIT: StreamMaxLength 200\n"));
    p.signal("-TERM");
    assert_eq!(p.child.wait().expect("exit").code(), Some(0));
    let _ = std::fs::remove_file(&config);
}

/// `systemd-socket-activate` (at `activate`) with `args(tcp)`, where `tcp` are `ports`
/// loopback addresses: it cannot be told port 0, so each is a port the system picked and let
/// go, which another process may take before the activator binds it. Then the activator says
/// `Failed to listen on ...` and ends, and the ports are picked again (at most 20 times).
/// Returns once it has bound every socket (its line for the last TCP address), with the
/// addresses.
fn activated(
    activate: &Path,
    ports: usize,
    args: impl Fn(&[String]) -> Vec<String>,
) -> (support::Process, Vec<String>) {
    for _ in 0..20 {
        let tcp: Vec<String> = (0..ports)
            .map(|_| {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .expect("port")
                    .port();
                format!("127.0.0.1:{port}")
            })
            .collect();
        let args = args(&tcp);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut p = support::Process::spawn_program(activate, &args);
        let last = format!("Listening on {} as ", tcp[ports - 1]);
        match p.line_of(&[&last, "Failed to listen on "]) {
            (0, _) => return (p, tcp),
            _ => {
                let _ = p.child.wait();
            }
        }
    }
    panic!("systemd-socket-activate could not bind free ports 20 times");
}

#[test]
fn systemd_socket_activation_gives_both_sockets_by_name() {
    let Some(activate) = crate::clients::client(
        Path::new("/usr/bin/systemd-socket-activate"),
        "socket activation",
    ) else {
        return;
    };
    let _turn = support::start_with(|s| {
        s.clamd = None;
        s.http = None;
    });
    let sock = support::scratch("activated.sock", "");
    std::fs::remove_file(&sock).expect("rm");
    let sock_text = sock.to_str().expect("UTF-8").to_owned();
    // The manager binds the three sockets; the service starts at the first connection.
    let (mut p, tcp) = activated(&activate, 2, |tcp| {
        let l = |a: &str| ["-l".to_owned(), a.to_owned()];
        [l(&tcp[0]), l(&sock_text), l(&tcp[1])]
            .concat()
            .into_iter()
            .chain([
                "--fdname=clamd:clamd:http".to_owned(),
                env!("CARGO_BIN_EXE_stcheck-serve").to_owned(),
                "--listen".to_owned(),
            ])
            .collect()
    });
    let (clamd_at, http_at) = (tcp[0].clone(), tcp[1].clone());
    let clamd: SocketAddr = clamd_at.parse().expect("address");
    assert_eq!(command(clamd, b"zPING\0"), "PONG");
    assert_eq!(p.clamd(), clamd);
    p.line(&format!("stcheck serve: clamd on unix:{sock_text}"));
    p.line(&format!("stcheck serve: http on {http_at} "));
    let mut unix = std::os::unix::net::UnixStream::connect(&sock).expect("unix");
    unix.write_all(b"zPING\0").expect("send");
    assert_eq!(support::read_reply(&mut unix), "PONG");
    let web: SocketAddr = http_at.parse().expect("address");
    assert_eq!(http(web, "GET", "/healthz", "", b"").status, 200);
    assert_eq!(support::post(web, "", &model()).status, 200);
    assert_eq!(instream(clamd, &model(), 100), "stream: OK");
    p.signal("-TERM");
    assert_eq!(p.child.wait().expect("exit").code(), Some(0));
    // The socket's file is the manager's: left where it is.
    assert!(sock.exists());
    let _ = std::fs::remove_file(&sock);
}

#[test]
fn passed_sockets_without_names_or_none_under_listen_refuse_to_start() {
    let _turn = support::start_with(|s| {
        s.clamd = None;
        s.http = None;
    });
    let mut p = support::Process::spawn(&["--listen"]);
    let why = p.line("stcheck serve: --listen: ");
    assert!(why.contains("no sockets were passed"), "{why}");
    assert_eq!(p.child.wait().expect("exit").code(), Some(2));
    let Some(activate) = crate::clients::client(
        Path::new("/usr/bin/systemd-socket-activate"),
        "socket activation",
    ) else {
        return;
    };
    let (mut p, tcp) = activated(&activate, 1, |tcp| {
        vec![
            "-l".to_owned(),
            tcp[0].clone(),
            env!("CARGO_BIN_EXE_stcheck-serve").to_owned(),
        ]
    });
    let at = &tcp[0];
    // The first connection starts it; it refuses the unnamed socket and exits.
    let _ = std::net::TcpStream::connect(at);
    let why = p.line("stcheck serve: the sockets passed cannot be used: ");
    assert!(why.contains("LISTEN_FDNAMES"), "{why}");
    assert_eq!(p.child.wait().expect("exit").code(), Some(2));
}

/// A clamd connection whose `INSTREAM` was admitted (its bytes are still to come).
fn opened(clamd: SocketAddr) -> std::net::TcpStream {
    let mut s = support::connect(clamd);
    s.write_all(b"zINSTREAM\0").expect("send");
    s
}

/// The rest of an opened stream, `bytes` whole, and its answer.
fn ended(mut s: std::net::TcpStream, bytes: &[u8]) -> String {
    s.write_all(&support::chunks(bytes, 1 << 16)).expect("send");
    support::read_reply(&mut s)
}

#[test]
fn a_reload_resizes_the_workers_and_streams_in_flight_keep_theirs() {
    let model = model();
    let config = support::scratch("workers.toml", "workers = 1\nqueue = 8\n");
    let run = support::start(from_args(&[
        "--config",
        config.to_str().expect("UTF-8"),
        "--clamd",
        "127.0.0.1:0",
    ]));
    let clamd = run.clamd();
    let a = opened(clamd);
    run.until("a in flight", |s| s.streams() == (1, 0));
    let b = opened(clamd);
    run.until("b queued", |s| s.streams() == (1, 1));
    // More workers: the stream waiting is admitted at once.
    std::fs::write(&config, "workers = 2\nqueue = 8\n").expect("config");
    run.server.reload().expect("reloaded");
    run.until("b admitted", |s| s.streams() == (2, 0));
    assert!(command(clamd, b"zSTATS\0").contains("LIMIT: MaxThreads 2\n"));
    // Fewer: the two in flight keep their workers; a new stream waits until fewer than one
    // is in flight.
    std::fs::write(&config, "workers = 1\nqueue = 8\n").expect("config");
    run.server.reload().expect("reloaded");
    let c = opened(clamd);
    run.until("c queued", |s| s.streams() == (2, 1));
    assert_eq!(ended(a, &model), "stream: OK");
    // a's worker went to the reload (the pool is one smaller now), not to c.
    assert_eq!(run.server.streams(), (1, 1));
    assert_eq!(ended(b, &model), "stream: OK");
    run.until("c admitted", |s| s.streams() == (1, 0));
    assert_eq!(ended(c, &model), "stream: OK");
    assert_eq!(run.server.verdicts(), (3, 0, 0));
    run.stop();
    let _ = std::fs::remove_file(&config);
}
