//! What the service counts, shown as Prometheus text at `/metrics` and as clamd's `STATS`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::face::{Outcome, Verdict};
use crate::settings::Limits;

/// The upper bounds of the time-to-verdict histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0, 3600.0,
];

/// The service's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    valid: AtomicU64,
    invalid: AtomicU64,
    not_checked: AtomicU64,
    /// Invalid verdicts by rule.
    rules: Mutex<BTreeMap<&'static str, u64>>,
    /// Stream bytes read (chunk payloads and request bodies).
    pub(crate) bytes_read: AtomicU64,
    /// Streams being read, each with a worker.
    pub(crate) in_flight: AtomicUsize,
    /// Streams waiting for a worker.
    pub(crate) queued: AtomicUsize,
    /// Connections open.
    pub(crate) connections: AtomicUsize,
    /// Streams and connections turned away busy.
    pub(crate) busy: AtomicU64,
    /// Clients that went away in the middle of a stream.
    pub(crate) cut_off: AtomicU64,
    /// TLS handshakes that failed (no client certificate, an unknown one, not TLS, too slow).
    pub(crate) tls_refused: AtomicU64,
    /// Time to verdict: per bucket, then the count and the sum in microseconds.
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Metrics {
    /// Count a verdict that took `took`.
    pub(crate) fn verdict(&self, outcome: &Outcome, took: Duration) {
        match outcome.verdict {
            Verdict::Valid => &self.valid,
            Verdict::Invalid => &self.invalid,
            Verdict::NotChecked => &self.not_checked,
        }
        .fetch_add(1, Relaxed);
        if outcome.verdict == Verdict::Invalid {
            if let Ok(mut rules) = self.rules.lock() {
                *rules.entry(outcome.signature()).or_default() += 1;
            }
        }
        let s = took.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            if s <= *bound {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros
            .fetch_add(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Relaxed);
    }

    /// Verdicts given so far: valid, invalid, not checked.
    pub(crate) fn verdicts(&self) -> (u64, u64, u64) {
        (
            self.valid.load(Relaxed),
            self.invalid.load(Relaxed),
            self.not_checked.load(Relaxed),
        )
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub(crate) fn prometheus(&self, limits: &Limits) -> String {
        let mut o = String::with_capacity(4096);
        let (valid, invalid, not_checked) = self.verdicts();
        let _ = writeln!(
            o,
            "# HELP stcheck_verdicts_total Streams checked, by verdict.\n\
             # TYPE stcheck_verdicts_total counter\n\
             stcheck_verdicts_total{{status=\"valid\"}} {valid}\n\
             stcheck_verdicts_total{{status=\"invalid\"}} {invalid}\n\
             stcheck_verdicts_total{{status=\"not_checked\"}} {not_checked}"
        );
        let _ = writeln!(
            o,
            "# HELP stcheck_invalid_total Invalid streams, by the rule of their error.\n\
             # TYPE stcheck_invalid_total counter"
        );
        if let Ok(rules) = self.rules.lock() {
            for (rule, n) in rules.iter() {
                let _ = writeln!(o, "stcheck_invalid_total{{rule=\"{rule}\"}} {n}");
            }
        }
        let counters = [
            (
                "stcheck_read_bytes_total",
                "Stream bytes read.",
                self.bytes_read.load(Relaxed),
            ),
            (
                "stcheck_busy_total",
                "Streams and connections turned away busy.",
                self.busy.load(Relaxed),
            ),
            (
                "stcheck_cut_off_total",
                "Streams whose client went away before their end.",
                self.cut_off.load(Relaxed),
            ),
            (
                "stcheck_tls_refused_total",
                "HTTP connections whose TLS handshake failed (no client certificate, an unknown one, not TLS, too slow).",
                self.tls_refused.load(Relaxed),
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        let gauges = [
            (
                "stcheck_streams_in_flight",
                "Streams being read, each with a worker.",
                self.in_flight.load(Relaxed) as u64,
            ),
            (
                "stcheck_queue_length",
                "Streams waiting for a worker.",
                self.queued.load(Relaxed) as u64,
            ),
            (
                "stcheck_connections",
                "Connections open.",
                self.connections.load(Relaxed) as u64,
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let name = "stcheck_verdict_seconds";
        let _ = writeln!(
            o,
            "# HELP {name} Time from a stream's command or request to its verdict.\n\
             # TYPE {name} histogram"
        );
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            let _ = writeln!(
                o,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Relaxed)
            );
        }
        let count = self.count.load(Relaxed);
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(
            o,
            "{name}_bucket{{le=\"+Inf\"}} {count}\n{name}_sum {sum}\n{name}_count {count}"
        );
        let _ = writeln!(
            o,
            "# HELP stcheck_limit The service's limits (seconds for timeouts).\n\
             # TYPE stcheck_limit gauge"
        );
        for (limit, v) in limit_values(limits) {
            let _ = writeln!(o, "stcheck_limit{{limit=\"{limit}\"}} {v}");
        }
        o
    }

    /// clamd's `STATS` reply (without its delimiter): the state, the queue and the limits.
    pub(crate) fn stats(&self, limits: &Limits) -> String {
        let (valid, invalid, not_checked) = self.verdicts();
        let mut o = String::new();
        let _ = write!(
            o,
            "POOLS: 1\n\nSTATE: VALID PRIMARY\nTHREADS: live {} idle {} max {}\n\
             QUEUE: {} items\nVERDICTS: valid {valid} invalid {invalid} not-checked {not_checked}\n\
             BYTES: {}\nCONNECTIONS: {}\nCUT-OFF: {}\nBUSY: {}\n",
            self.in_flight.load(Relaxed),
            limits.workers.saturating_sub(self.in_flight.load(Relaxed)),
            limits.workers,
            self.queued.load(Relaxed),
            self.bytes_read.load(Relaxed),
            self.connections.load(Relaxed),
            self.cut_off.load(Relaxed),
            self.busy.load(Relaxed),
        );
        for (limit, v) in limit_values(limits) {
            let _ = writeln!(o, "LIMIT: {limit} {v}");
        }
        o.push_str("END");
        o
    }
}

/// The limits by their clamd-style names, timeouts in seconds.
pub(crate) fn limit_values(l: &Limits) -> [(&'static str, String); 9] {
    let s = |d: Duration| d.as_secs_f64().to_string();
    [
        ("StreamMaxLength", l.max_stream.to_string()),
        ("MaxThreads", l.workers.to_string()),
        ("MaxQueue", l.queue.to_string()),
        ("MaxConnections", l.max_connections.to_string()),
        ("ReadTimeout", s(l.read_timeout)),
        ("CommandReadTimeout", s(l.command_timeout)),
        ("IdleTimeout", s(l.idle_timeout)),
        ("StreamDeadline", s(l.stream_deadline)),
        ("ShutdownGrace", s(l.grace)),
    ]
}
