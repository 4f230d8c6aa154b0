//! Whose verdict decides: the strict profile, the reference crate's, or the portable one.

use serde::Serialize;

use crate::check::Checked;
use crate::index::IndexReport;
use crate::portable::PortableReport;
use crate::reference::Verdict;

/// Whose verdict decides a file's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Profile {
    /// The rules of SPEC.md (the default).
    #[default]
    Strict,
    /// The verdict of the reference crate (`safetensors` 0.8.0).
    Reference,
    /// Strict, and read the same way by every reader of the reader table chosen
    /// ([`crate::Config::portable`]).
    Portable,
}

impl Profile {
    /// `"strict"`, `"reference"` or `"portable"` (read back by `str::parse`).
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Reference => "reference",
            Profile::Portable => "portable",
        }
    }
}

crate::error::from_name! {
    Profile: [Profile::Strict, Profile::Reference, Profile::Portable];
}

impl Checked<'_> {
    /// Whether the file is valid under `profile`: the strict verdict; the reference crate's
    /// (which must have been asked for, [`crate::Config::reference`]); or the strict verdict and, for a
    /// valid file, the portable profile's.
    pub fn is_valid_under(&self, profile: Profile) -> bool {
        match (profile, &self.reference) {
            (Profile::Reference, Some(v)) => v.accepts(),
            (Profile::Portable, _) => {
                self.verdict.is_ok()
                    && self
                        .portable
                        .as_ref()
                        .is_none_or(PortableReport::is_portable)
            }
            _ => self.verdict.is_ok(),
        }
    }

    /// Why the strict profile and the reference disagree on a file the reference loads (the
    /// rule's divergence, `SPEC.md` "Differences from the reference").
    pub fn reference_divergence(&self) -> Option<&'static str> {
        match (&self.verdict, &self.reference) {
            (Err(e), Some(Verdict::Accept(_))) => e.rule().reference_divergence(),
            _ => None,
        }
    }
}

impl IndexReport {
    /// Whether the set is valid under `profile` (the portable profile also asks that the
    /// set's portable answer be portable).
    pub fn is_valid_under(&self, profile: Profile) -> bool {
        let portable_ok =
            profile != Profile::Portable || self.portable().is_none_or(PortableReport::is_portable);
        self.is_valid() && portable_ok
    }
}
