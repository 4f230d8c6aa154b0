//! The service's tests: verdicts over the corpus through both protocols, the protocols'
//! commands, the limits and the faults (counted, never timed), and real clients.

mod clients;
mod faults;
mod lifecycle;
mod protocols;
mod support;
mod tls;
mod verdicts;
