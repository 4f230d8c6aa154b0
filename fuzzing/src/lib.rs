//! Fuzzing logic shared by the `fuzz/` targets and the seeded smoke tests that ordinary
//! `cargo test` runs on stable. Not a stable API.
//!
//! Every target of `fuzz/` is one line that calls a function here:
//!
//! - [`check_validate`]: any bytes; never panics, every offset lies within the input, the
//!   verdict is deterministic and `deny_warnings` promotes exactly the first warning.
//! - [`Structured::check`]: a generated, strictly valid model written by
//!   [`stcheck::write::serialize`], then at most one [`Mutation`] whose verdict is asserted.
//! - [`check_stream`]: the streaming validator, fed through arbitrary short reads, agrees with
//!   the whole-buffer validator on verdict, rule, offset, tensor and message.
//! - [`check_differential`]: the reference crate (`safetensors` 0.8.0) on the same bytes.
//!
//! The generators ([`Structured`], [`IndexCase`]) draw every choice from a [`Source`] of
//! bytes. The fuzz targets drive them from libFuzzer's input through `arbitrary::Unstructured`
//! (their `Arbitrary` impls exist with the `arbitrary` feature); the smoke tests drive them
//! from a seeded [`Rng`] (or a fixed slice, [`ByteSource`]). So the same logic runs on stable
//! without the feature, and `arbitrary` stays an optional dependency of the library.
//! The `index` target is also here ([`IndexCase::check`]): generated shard sets checked in
//! memory by [`stcheck::index::check_index`].
//!
//! The checks panic on a broken property (that is how a fuzzer sees a finding), with a message
//! that starts with `FUZZ FINDING`.

use std::collections::HashSet;
use std::io::{self, Read};
use std::sync::Mutex;

use stcheck::reference::{self, RefTensor, Verdict};
use stcheck::write::{self, TensorSpec};
use stcheck::{Config, Dtype, Error, Report, Rule};

mod conformance;
mod differential;
mod faults;
mod generate;
mod glob;
mod index;
mod mutate;
mod options;
mod range;
mod remote;
mod scan;
mod service;
mod source;
mod stream;
mod validate;

pub use conformance::*;
pub use differential::*;
pub use faults::*;
pub use generate::*;
pub use glob::*;
pub use index::*;
pub use mutate::*;
pub use options::*;
pub use range::*;
pub use remote::*;
pub(crate) use scan::*;
pub use service::*;
pub use source::*;
pub use stream::*;
pub use validate::*;
