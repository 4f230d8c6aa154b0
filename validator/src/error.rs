//! The one error type, and the warning type that shares its shape.
//!
//! Every finding carries a rule ID, a byte offset into the file and, where one applies, the
//! tensor's name. There is no constructor without an offset. Dependencies' error types never
//! appear here: serde_json's errors are turned into a rule and a message at the point where
//! they arise.

use std::fmt;

use crate::rules::{Kind, Rule, Severity};

/// A finding: the rule it breaks, where, and a human message.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    rule: Rule,
    offset: u64,
    tensor: Option<Box<str>>,
    message: Box<str>,
}

impl Finding {
    pub(crate) fn new(rule: Rule, offset: u64, message: impl Into<String>) -> Self {
        Finding {
            rule,
            offset,
            tensor: None,
            message: message.into().into_boxed_str(),
        }
    }

    pub(crate) fn with_tensor(mut self, name: &str) -> Self {
        self.tensor = Some(name.into());
        self
    }

    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// Malformed or invalid: the rule's kind.
    pub fn kind(&self) -> Kind {
        self.rule.kind()
    }

    /// Byte offset into the file, as close to the fault as the parser allows.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The tensor the finding is about, where one applies.
    pub fn tensor(&self) -> Option<&str> {
        self.tensor.as_deref()
    }

    /// The human message, without the rule ID, the tensor name or the offset.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Finding {
    /// `RULE-ID: tensor "name": message (at offset 0x1a)`. The tensor name is escaped with
    /// [`crate::names::escape`], so a hostile name cannot forge a line of output or hide text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule.id())?;
        if let Some(name) = &self.tensor {
            write!(f, "tensor \"{}\": ", crate::names::escape(name))?;
        }
        write!(f, "{} (at offset {:#x})", self.message, self.offset)
    }
}

impl fmt::Debug for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Why a file is rejected. One boxed word; see [`Finding`] for the accessors.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Error(Box<Finding>);

impl Error {
    /// The finding behind the error.
    pub fn finding(&self) -> &Finding {
        &self.0
    }
    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.0.rule
    }
    /// Malformed or invalid.
    pub fn kind(&self) -> Kind {
        self.0.kind()
    }
    /// Byte offset into the file.
    pub fn offset(&self) -> u64 {
        self.0.offset
    }
    /// The tensor the error is about, where one applies.
    pub fn tensor(&self) -> Option<&str> {
        self.0.tensor()
    }
    /// The human message.
    pub fn message(&self) -> &str {
        self.0.message()
    }
    /// Whether a warning was promoted to this error by `deny_warnings` / `deny_nonfinite`.
    pub fn is_promoted_warning(&self) -> bool {
        self.0.rule.severity() == Severity::Warning
    }
}

impl From<Finding> for Error {
    fn from(f: Finding) -> Self {
        Error(Box::new(f))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {}

/// A warning: a finding that does not reject the file in the strict profile.
pub type Warning = Finding;
