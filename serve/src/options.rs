//! The check options of the service, from the gate's one table of run options
//! ([`stcheck_gate::options::OPTIONS`]): a flag of `stcheck serve` by its command-line name, a
//! configuration key and a query parameter by the service's key ([`Face::Service`], `-` or
//! `_` alike). What the table says of an option (its kind, how its text is read, its
//! conflicts at resolution) holds here unchanged; the service only leaves out the options that
//! say where files come from and how they are read, which a stream has no use for.

use stcheck_gate::options::{Face, Kind, Opt, RunOptions, Spec, Value};

/// The run options a stream cannot use: how files are found and read, and what URLs cost.
const NOT_FOR_A_STREAM: &[Opt] = &[
    Opt::Mode,
    Opt::FollowLinks,
    Opt::AllowEmpty,
    Opt::AllowOtherFormats,
    Opt::Exclude,
    Opt::WithSets,
    Opt::UrlJobs,
    Opt::MaxRequests,
    Opt::Timeout,
    Opt::Header,
    Opt::CaFile,
];

/// The options of one request only: the SHA-256 of the one file a request sends
/// (`expected-sha256`), never the whole service's.
const ONE_REQUEST: &[Opt] = &[Opt::ExpectSha256];

/// The check option `key` names on `face` (`--deep` for the command line; `deep` or
/// `deny-nonfinite` for a configuration key), if the whole service takes it.
pub fn find(face: Face, key: &str) -> Option<&'static Spec> {
    find_for_request(face, key).filter(|spec| !ONE_REQUEST.contains(&spec.opt))
}

/// [`find`] for an HTTP query: the service's options and those of one request.
pub fn find_for_request(face: Face, key: &str) -> Option<&'static Spec> {
    let spec = match face {
        // The table's keys are written one way (`deny-nonfinite`); either spelling is taken.
        Face::Service => Spec::find(face, &key.replace('_', "-"))
            .or_else(|| Spec::find(face, &key.replace('-', "_"))),
        _ => Spec::find(face, key),
    }?;
    (!NOT_FOR_A_STREAM.contains(&spec.opt)).then_some(spec)
}

/// Whether the option takes a value (a flag does not).
pub fn takes_value(spec: &Spec) -> bool {
    spec.kind != Kind::Flag
}

/// Set `spec`'s option of `run` from text (`None`: a flag given bare, on).
pub fn set_text(run: &mut RunOptions, spec: &Spec, text: Option<&str>) -> Result<(), String> {
    let text = match (text, takes_value(spec)) {
        (Some(t), _) => t,
        (None, false) => "true",
        (None, true) => return Err(format!("{}: needs a value", spec.key)),
    };
    run.set_text(spec.opt, text).map_err(|e| e.0)
}

/// Set `spec`'s option of `run` from a typed value (a configuration file's).
pub fn set(run: &mut RunOptions, spec: &Spec, value: Value) -> Result<(), String> {
    run.set(spec.opt, value).map_err(|e| e.0)
}
