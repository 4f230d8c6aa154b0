//! Known failures: per adapter, a data file listing every item whose result is not `PASS`
//! (failures, and the choices made where either answer conforms), and for writers the form
//! warnings of the files they write. A run is checked against it: a new failure, a changed
//! result, and a known failure that now passes are all reported, and each fails the run, so
//! the file changes together with the behaviour.
//!
//! ```json
//! {
//!   "adapter": "python-safe-open",
//!   "results": {
//!     "invalid/json/duplicate-key": "SHOULD_HAVE_REJECTED",
//!     "implementation-defined/dtype/f8-nan": {"result": "ACCEPTED", "note": "why"}
//!   }
//! }
//! ```
//!
//! A writer's file has a `form` member too: task ID -> the rule IDs of the warnings of the
//! (valid) file it writes, canonical tasks left out.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

use super::{Judged, Results, Verdict};

/// One entry: the result, with an optional note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry<V> {
    /// Just the result.
    Plain(V),
    /// The result and why.
    Noted {
        /// The result.
        result: V,
        /// Why (kept when the file is re-blessed).
        note: String,
    },
}

impl<V: Copy> Entry<V> {
    /// The recorded result.
    pub fn result(&self) -> V {
        match self {
            Entry::Plain(o) => *o,
            Entry::Noted { result, .. } => *result,
        }
    }
}

/// What a known-failures file holds beside its results: nothing for readers ([`NoForm`]),
/// the form warnings for writers ([`Form`]).
pub trait Extra: Default + Clone + PartialEq + fmt::Debug + Serialize + DeserializeOwned {
    /// Leave the member out when writing the file.
    fn skip(&self) -> bool;
    /// The IDs it lists.
    fn ids(&self) -> Vec<&str>;
    /// A recorded form that differs from what the item wrote: `(recorded, now)`.
    fn differs(&self, id: &str, form: &[String]) -> Option<(Vec<String>, Vec<String>)>;
    /// The member that records `items`, keeping the entries of existing IDs not run.
    fn bless<'a>(
        &self,
        kept: &dyn Fn(&str) -> bool,
        items: impl Iterator<Item = (&'a str, Option<&'a [String]>)>,
    ) -> Self;
    /// What the bless message adds about it (`, 3 non-canonical files`).
    fn note(&self) -> String {
        String::new()
    }
    /// Check what parsing cannot.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The readers' files have no `form` member (a file that has one is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct NoForm;

impl<'de> Deserialize<'de> for NoForm {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<NoForm, D::Error> {
        Err(serde::de::Error::custom(
            "`form` is a member of writers' known-failures files only",
        ))
    }
}

impl Extra for NoForm {
    fn skip(&self) -> bool {
        true
    }
    fn ids(&self) -> Vec<&str> {
        Vec::new()
    }
    fn differs(&self, _: &str, _: &[String]) -> Option<(Vec<String>, Vec<String>)> {
        None
    }
    fn bless<'a>(
        &self,
        _: &dyn Fn(&str) -> bool,
        _: impl Iterator<Item = (&'a str, Option<&'a [String]>)>,
    ) -> NoForm {
        NoForm
    }
}

/// A writer's form warnings: task ID -> rule IDs.
pub type Form = BTreeMap<String, Vec<String>>;

impl Extra for Form {
    fn skip(&self) -> bool {
        false
    }
    fn ids(&self) -> Vec<&str> {
        self.keys().map(String::as_str).collect()
    }
    fn differs(&self, id: &str, form: &[String]) -> Option<(Vec<String>, Vec<String>)> {
        let known = self.get(id).cloned().unwrap_or_default();
        (known != form).then(|| (known, form.to_vec()))
    }
    fn bless<'a>(
        &self,
        kept: &dyn Fn(&str) -> bool,
        items: impl Iterator<Item = (&'a str, Option<&'a [String]>)>,
    ) -> Form {
        let mut form: Form = self
            .iter()
            .filter(|(id, _)| kept(id))
            .map(|(id, w)| (id.clone(), w.clone()))
            .collect();
        for (id, f) in items {
            if let Some(f) = f.filter(|f| !f.is_empty()) {
                form.insert(id.to_owned(), f.to_vec());
            }
        }
        form
    }
    fn note(&self) -> String {
        format!(", {} non-canonical files", self.len())
    }
    fn validate(&self) -> Result<(), String> {
        match self.iter().find(|(_, w)| w.is_empty()) {
            Some((id, _)) => Err(format!(
                "{id}: an empty form list (leave canonical tasks out)"
            )),
            None => Ok(()),
        }
    }
}

/// A known-failures file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound = "V: Verdict, X: Extra")]
pub struct Known<V, X = NoForm> {
    /// The adapter the file is for.
    #[serde(default)]
    pub adapter: String,
    /// Item ID -> its non-`PASS` result.
    #[serde(default)]
    pub results: BTreeMap<String, Entry<V>>,
    /// Writers: item ID -> the form warnings of the file it writes.
    #[serde(default, skip_serializing_if = "Extra::skip")]
    pub form: X,
}

impl<V, X: Default> Default for Known<V, X> {
    fn default() -> Self {
        Known {
            adapter: String::new(),
            results: BTreeMap::new(),
            form: X::default(),
        }
    }
}

/// A difference between a run and its known-failures file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference<V> {
    /// Not listed, and not `PASS`.
    New {
        /// Item.
        id: String,
        /// Result now.
        got: V,
    },
    /// Listed with another non-`PASS` result.
    Changed {
        /// Item.
        id: String,
        /// Result in the file.
        known: V,
        /// Result now.
        got: V,
    },
    /// Listed, and now `PASS`: remove it from the file.
    NowPasses {
        /// Item.
        id: String,
        /// Result in the file.
        known: V,
    },
    /// The written file's form warnings changed (writers).
    Form {
        /// Task.
        id: String,
        /// Warnings in the file.
        known: Vec<String>,
        /// Warnings now.
        got: Vec<String>,
    },
    /// Listed, but the corpus has no such item.
    Unknown {
        /// Item.
        id: String,
        /// What is said of it, e.g. "listed case is not in the manifest".
        what: &'static str,
    },
}

impl<V: Verdict> fmt::Display for Difference<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::New { id, got } => write!(f, "new result {got}: {id}"),
            Difference::Changed { id, known, got } => {
                write!(f, "result changed from {known} to {got}: {id}")
            }
            Difference::NowPasses { id, known } => {
                write!(
                    f,
                    "known {known} now passes (remove it from the file): {id}"
                )
            }
            Difference::Form { id, known, got } => write!(
                f,
                "form warnings changed from [{}] to [{}]: {id}",
                known.join(", "),
                got.join(", ")
            ),
            Difference::Unknown { id, what } => write!(f, "{what}: {id}"),
        }
    }
}

/// What a run is checked against: which IDs exist, and what to call one that does not.
pub trait Universe {
    /// Whether the corpus has this item.
    fn has(&self, id: &str) -> bool;
    /// What is said of a listed item that it does not have.
    const UNKNOWN: &'static str;
}

impl<V: Verdict, X: Extra> Known<V, X> {
    /// Parse a known-failures file.
    pub fn parse(text: &str) -> Result<Known<V, X>, String> {
        let k: Known<V, X> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if let Some((id, _)) = k.results.iter().find(|(_, e)| e.result() == V::PASS) {
            return Err(format!("{id}: PASS is not a known failure"));
        }
        k.form.validate()?;
        Ok(k)
    }

    /// The differences between a run and this file. Listed items that the run did not select
    /// (`--run`/`--skip`) are not checked; listed items the corpus does not have are.
    pub fn check<R, U>(&self, results: &R, universe: &U) -> Vec<Difference<V>>
    where
        R: Results,
        R::Item: Judged<V = V>,
        U: Universe + ?Sized,
    {
        let mut out = Vec::new();
        for c in results.items() {
            let id = c.id().to_owned();
            match (self.results.get(c.id()).map(Entry::result), c.outcome()) {
                (None, got) if got == V::PASS => {}
                (None, got) => out.push(Difference::New {
                    id: id.clone(),
                    got,
                }),
                (Some(known), got) if got == V::PASS => out.push(Difference::NowPasses {
                    id: id.clone(),
                    known,
                }),
                (Some(known), got) if known != got => out.push(Difference::Changed {
                    id: id.clone(),
                    known,
                    got,
                }),
                (Some(_), _) => {}
            }
            if let Some((known, got)) = c.form().and_then(|f| self.form.differs(c.id(), f)) {
                out.push(Difference::Form { id, known, got });
            }
        }
        let listed: Vec<&str> = self.results.keys().map(String::as_str).collect();
        for id in listed.into_iter().chain(self.form.ids()) {
            if !universe.has(id) {
                out.push(Difference::Unknown {
                    id: id.to_owned(),
                    what: U::UNKNOWN,
                });
            }
        }
        out
    }

    /// The file that records `results`: every non-`PASS` item, keeping the notes of entries
    /// whose result is unchanged, and the entries of existing items the run did not select.
    pub fn bless<R, U>(&self, results: &R, universe: &U) -> Known<V, X>
    where
        R: Results,
        R::Item: Judged<V = V>,
        U: Universe + ?Sized,
    {
        let run = |id: &str| results.items().iter().any(|c| c.id() == id);
        let kept = |id: &str| universe.has(id) && !run(id);
        let mut map: BTreeMap<String, Entry<V>> = self
            .results
            .iter()
            .filter(|(id, _)| kept(id))
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect();
        for c in results.items() {
            if c.outcome() == V::PASS {
                continue;
            }
            let entry = match self.results.get(c.id()) {
                Some(Entry::Noted { result, note }) if *result == c.outcome() => Entry::Noted {
                    result: *result,
                    note: note.clone(),
                },
                _ => Entry::Plain(c.outcome()),
            };
            map.insert(c.id().to_owned(), entry);
        }
        Known {
            adapter: results.adapter().to_owned(),
            results: map,
            form: self
                .form
                .bless(&kept, results.items().iter().map(|c| (c.id(), c.form()))),
        }
    }
}
