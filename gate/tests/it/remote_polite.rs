//! The client keeps its connections and waits when a server asks it to: connections counted
//! by the server (their peer ports), requests counted, waits read from the server's clock.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::test_options;
use stcheck::Config;
use stcheck_gate::remote::{Depth, Found, Remote, RemoteOptions, UrlCheck};
use stcheck_testkit::http::{serve_file, zeros_file, Reply, Server};
use stcheck_testkit::short;

fn valid(check: &UrlCheck) {
    match &check.outcome {
        Ok(Found::File(f)) => assert!(f.checked.verdict.is_ok(), "{:?}", f.checked.verdict),
        other => panic!("expected a valid file: {}", short(other, 300)),
    }
}

fn connections(server: &Server) -> usize {
    server
        .log()
        .iter()
        .map(|l| l.peer_port)
        .collect::<BTreeSet<_>>()
        .len()
}

/// `jobs` threads started together, each checking `each` files `/{job}-{i}.safetensors` of
/// `server` in turn, header-level.
fn together(remote: &Remote, server: &Server, jobs: usize, each: usize) -> Vec<UrlCheck> {
    let start = Barrier::new(jobs);
    thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    (0..each)
                        .map(|i| {
                            let url = server.url(&format!("/{j}-{i}.safetensors"));
                            remote.check(&url, &Config::default(), Depth::Header)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("job"))
            .collect()
    })
}

/// Options that let a server ask for a wait of 2 s.
fn patient() -> RemoteOptions {
    let mut o = test_options();
    o.max_retry_after = Duration::from_secs(10);
    o
}

#[test]
fn each_job_keeps_one_connection_through_redirects() {
    // Every file is reached through a redirect with a body, as the hub's resolve URLs are.
    let file = zeros_file(16);
    let f = file.clone();
    let server = Server::start(move |req| {
        let path = req.path().to_owned();
        match path.strip_prefix("/r/") {
            Some(name) => Reply::redirect(302, &format!("/f/{name}"))
                .body(format!("Found. Redirecting to /f/{name}")),
            None => serve_file(req, &f, true),
        }
    });
    let remote = Remote::new(test_options()).expect("client");
    let (jobs, each) = (12usize, 10usize);
    let start = Barrier::new(jobs);
    thread::scope(|s| {
        for j in 0..jobs {
            let (remote, server, start) = (&remote, &server, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..each {
                    let url = server.url(&format!("/r/{j}-{i}.safetensors"));
                    valid(&remote.check(&url, &Config::default(), Depth::Header));
                }
            });
        }
    });
    assert_eq!(
        server.log().len(),
        jobs * each * 2,
        "a redirect and a range per file"
    );
    let opened = connections(&server);
    assert!(
        opened <= jobs,
        "{opened} connections for {} files on {jobs} jobs",
        jobs * each
    );

    // A deep check reads the body to its end: one connection for files checked in turn.
    server.clear_log();
    let remote = Remote::new(test_options()).expect("client");
    for i in 0..5 {
        let url = server.url(&format!("/f/deep-{i}.safetensors"));
        valid(&remote.check(&url, &Config::default(), Depth::Deep { sha256: false }));
    }
    assert_eq!(connections(&server), 1);
}

#[test]
fn a_429_with_retry_after_2_is_waited_for_not_hammered() {
    // Every request within 2 s of the first one is answered 429 (a window, as a rate limit
    // is): 8 jobs of 5 files each, started together.
    let file = zeros_file(16);
    let first: Arc<Mutex<Option<Instant>>> = Arc::default();
    let (f, w) = (file.clone(), Arc::clone(&first));
    let server = Server::start(move |req| {
        let now = Instant::now();
        let t0 = *w.lock().expect("lock").get_or_insert(now);
        if now.duration_since(t0) < Duration::from_secs(2) {
            return Reply::new(429)
                .header("Retry-After", "2")
                .header("RateLimit", "\"resolvers\";r=0;t=2")
                .header(
                    "RateLimit-Policy",
                    "\"fixed window\";\"resolvers\";q=5000;w=300",
                )
                .body("Too Many Requests");
        }
        serve_file(req, &f, true)
    });
    let remote = Remote::new(patient()).expect("client");
    let (jobs, each) = (8usize, 5usize);
    let checks = together(&remote, &server, jobs, each);
    for c in &checks {
        valid(c);
        assert!(c.cost.retries <= 1, "{} retries", c.cost.retries);
    }
    // Once a 429 has arrived no job sends before the 2 s are over: only the requests already
    // on their way when it came (at most one a job) meet the window.
    let sent = server.log().len();
    eprintln!("{sent} requests for {} files", jobs * each);
    assert!(sent <= jobs * each + jobs, "{sent} requests");
    assert!(sent > jobs * each, "the window was never met");
}

#[test]
fn a_rate_limit_with_nothing_left_holds_back_the_next_request() {
    // The first file's answer says no request is left for 2 s; the next check (another job)
    // waits for that instead of meeting a 429.
    let file = zeros_file(16);
    let times: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let (f, t) = (file.clone(), Arc::clone(&times));
    let server = Server::start(move |req| {
        t.lock().expect("lock").push(Instant::now());
        let reply = serve_file(req, &f, true);
        match req.path() {
            "/last.safetensors" => reply.header("RateLimit", "\"resolvers\";r=0;t=2").header(
                "RateLimit-Policy",
                "\"fixed window\";\"resolvers\";q=5000;w=300",
            ),
            _ => reply.header("RateLimit", "\"resolvers\";r=4999;t=2"),
        }
    });
    let remote = Remote::new(patient()).expect("client");
    let cfg = Config::default();
    valid(&remote.check(&server.url("/some.safetensors"), &cfg, Depth::Header));
    valid(&remote.check(&server.url("/last.safetensors"), &cfg, Depth::Header));
    let next = thread::scope(|s| {
        s.spawn(|| remote.check(&server.url("/next.safetensors"), &cfg, Depth::Header))
            .join()
            .expect("job")
    });
    valid(&next);
    assert_eq!(next.cost.retries, 0);
    let times = times.lock().expect("lock").clone();
    assert_eq!(times.len(), 3);
    assert!(
        times[1] - times[0] < Duration::from_secs(2),
        "r=4999 is no wait"
    );
    assert!(
        times[2] - times[1] >= Duration::from_secs(2),
        "the next request came {:?} after r=0;t=2",
        times[2] - times[1]
    );

    // A wait past the deadline is "could not check" at once, never a verdict.
    let mut short_deadline = patient();
    short_deadline.total_timeout = Duration::from_secs(1);
    let remote = Remote::new(short_deadline).expect("client");
    valid(&remote.check(&server.url("/last.safetensors"), &cfg, Depth::Header));
    let late = remote.check(&server.url("/next.safetensors"), &cfg, Depth::Header);
    let e = late.outcome.expect_err("no verdict past the deadline");
    assert!(e.message().contains("past the deadline"), "{e}");
    assert_eq!(times_len(&server), 4, "the refused check sent nothing");
}

fn times_len(server: &Server) -> usize {
    server.log().len()
}

#[test]
fn fewer_requests_left_than_jobs_in_flight_are_paced_not_met_with_429s() {
    // A quota of 10 requests per fixed window of 1 s, with `RateLimit` on every answer (the
    // requests left, as the hub's draft header says); 8 jobs of 3 files each. The first 8
    // answers are held until all 8 requests have arrived (a hang guard of 10 s), so every job
    // is in flight when they learn that 2 requests are left. Acted on only at `r=0`, each job
    // then sent its next file and 6 met a 429; paced, the jobs send only what is left and
    // wait for the window to end.
    const QUOTA: u64 = 10;
    const JOBS: usize = 8;
    const EACH: usize = 3;
    #[derive(Default)]
    struct Window {
        start: Option<Instant>,
        served: u64,
        arrived: usize,
        too_many: usize,
    }
    let file = zeros_file(16);
    let state: Arc<(Mutex<Window>, std::sync::Condvar)> = Arc::default();
    let (f, st) = (file.clone(), Arc::clone(&state));
    let server = Server::start(move |req| {
        let (lock, arrived) = &*st;
        let mut w = lock.lock().expect("lock");
        let now = Instant::now();
        if w.start
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1))
        {
            w.start = Some(now);
            w.served = 0;
        }
        if w.served >= QUOTA {
            w.too_many += 1;
            return Reply::new(429)
                .header("Retry-After", "1")
                .header("RateLimit", "\"resolvers\";r=0;t=1")
                .body("Too Many Requests");
        }
        w.served += 1;
        let left = QUOTA - w.served;
        w.arrived += 1;
        arrived.notify_all();
        if w.arrived <= JOBS {
            let guard = Instant::now() + Duration::from_secs(10);
            while w.arrived < JOBS && Instant::now() < guard {
                w = arrived
                    .wait_timeout(w, Duration::from_millis(100))
                    .expect("lock")
                    .0;
            }
        }
        drop(w);
        serve_file(req, &f, true).header("RateLimit", format!("\"resolvers\";r={left};t=1"))
    });
    let remote = Remote::new(patient()).expect("client");
    let checks = together(&remote, &server, JOBS, EACH);
    for c in &checks {
        valid(c);
    }
    let w = state.0.lock().expect("lock");
    assert_eq!(w.arrived, JOBS * EACH, "one request a file");
    assert_eq!(w.too_many, 0, "429s answered");
    assert_eq!(server.log().len(), JOBS * EACH);
}
