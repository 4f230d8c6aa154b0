//! The check options of the service, by the names the command line gives them (without the
//! `--`): one table for the flags, the configuration file and the HTTP query, filling the
//! gate's [`RunOptions`] (which resolves them, with every conflict check, once per request).
//!
//! This table repeats the names of the command line's check options; when the gate has its
//! one table of run options, this module is where the service adopts it.

use stcheck::Profile;
use stcheck_gate::options::RunOptions;

/// A value as a face gives it: a flag (or a TOML/query boolean), or text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// `--deep`, `deep = true`, `?deep` or `?deep=1`: on; `false`/`0`: off.
    Flag(bool),
    /// `--deny LAYOUT-ALIGN`, `deny = "LAYOUT-ALIGN"`, `?deny=LAYOUT-ALIGN`.
    Text(&'a str),
}

/// Whether `key` names a check option that takes a value (not a flag).
pub fn takes_value(key: &str) -> Option<bool> {
    Some(match key {
        "deep" | "sha256" | "deny-nonfinite" | "deny-warnings" | "refusals-are-errors" => false,
        "profile"
        | "deny"
        | "allow"
        | "portable-to"
        | "max-header-size"
        | "max-warnings-per-rule" => true,
        _ => return None,
    })
}

/// Set the check option `key` of `run` to `value`. `Ok(false)`: `key` is not a check option.
pub fn set(run: &mut RunOptions, key: &str, value: Value<'_>) -> Result<bool, String> {
    let Some(wants_text) = takes_value(key) else {
        return Ok(false);
    };
    let on = match value {
        Value::Flag(on) if !wants_text => on,
        Value::Text(t) if !wants_text => match t {
            "" | "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            _ => return Err(format!("{key}: {t:?} is not true or false")),
        },
        Value::Flag(_) => return Err(format!("{key}: needs a value")),
        Value::Text(_) => false,
    };
    let text = match value {
        Value::Text(t) => t,
        Value::Flag(_) => "",
    };
    let number = |what: &str| -> Result<u64, String> {
        text.trim()
            .parse::<u64>()
            .map_err(|_| format!("{key}: {text:?} is not {what}"))
    };
    let list = || text.split(',').map(|r| r.trim().to_owned());
    match key {
        "deep" => run.deep = on,
        "sha256" => run.sha256 = on,
        "deny-nonfinite" => run.deny_nonfinite = on,
        "deny-warnings" => run.deny_warnings = on,
        "refusals-are-errors" => run.refusals_are_errors = on,
        "profile" => {
            run.profile = match text {
                "strict" => Profile::Strict,
                "reference" => Profile::Reference,
                "portable" => Profile::Portable,
                _ => return Err(format!("profile: {text:?} is not strict or portable")),
            }
        }
        "deny" => run.deny.extend(list().filter(|r| !r.is_empty())),
        "allow" => run.allow.extend(list().filter(|r| !r.is_empty())),
        "portable-to" => run.portable_to = Some(list().collect()),
        "max-header-size" => run.max_header_size = Some(number("a number of bytes")?),
        "max-warnings-per-rule" => {
            let n = number("a positive integer")?;
            run.max_warnings_per_rule = Some(usize::try_from(n).unwrap_or(usize::MAX));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// What the service cannot do with options that resolve: the reference crate's verdict needs
/// the whole header and the file's length before the stream ends, which a stream does not give.
pub fn refusal(run: &RunOptions) -> Option<String> {
    run.wants_reference().then(|| {
        "the reference profile and --compare-reference are not served: the reference crate's \
         verdict needs the file's length, which a stream does not declare (use the strict or \
         portable profile)"
            .to_owned()
    })
}
