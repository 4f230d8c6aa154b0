//! Items for the fuzz targets and the tests, not for users: no stability promise.

pub use crate::deep::PROGRESS_STEP;
pub use crate::header::fast::{header_fast_vs_slow, FastVsSlow};
pub use crate::magic::sniff;
pub use crate::names::{is_control, is_invisible, is_path_like};
pub use crate::size::{byte_length, element_count, fmt_shape};
