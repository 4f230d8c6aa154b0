//! The 22 element types of the format, as named by the reference implementation.

use std::fmt;

macro_rules! dtypes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $bits:literal; )*) => {
        /// An element type. The declaration order is the reference implementation's, which
        /// its writer uses (descending) to order tensors.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        #[non_exhaustive]
        pub enum Dtype {
            $( $(#[$doc])* $variant, )*
        }

        impl Dtype {
            /// Every dtype, in the reference's order.
            pub const ALL: &'static [Dtype] = &[ $( Dtype::$variant, )* ];

            /// The name as written in a header, e.g. `"BF16"`.
            pub fn name(self) -> &'static str {
                match self { $( Dtype::$variant => $name, )* }
            }

            /// Bits per element.
            pub fn bits(self) -> u64 {
                match self { $( Dtype::$variant => $bits, )* }
            }

            /// The dtype with exactly this name (case-sensitive), if any.
            pub fn from_name(name: &str) -> Option<Dtype> {
                match name { $( $name => Some(Dtype::$variant), )* _ => None }
            }
        }
    };
}

dtypes! {
    /// Boolean, one byte per element, 0x00 or 0x01.
    BOOL = "BOOL", 8;
    /// 4-bit float (E2M1, OCP MX).
    F4 = "F4", 4;
    /// 6-bit float, E2M3 (OCP MX).
    F6_E2M3 = "F6_E2M3", 6;
    /// 6-bit float, E3M2 (OCP MX).
    F6_E3M2 = "F6_E3M2", 6;
    /// Unsigned 8-bit integer.
    U8 = "U8", 8;
    /// Signed 8-bit integer.
    I8 = "I8", 8;
    /// 8-bit float, E5M2 (IEEE-like: has infinities and NaNs).
    F8_E5M2 = "F8_E5M2", 8;
    /// 8-bit float, E4M3 "FN" (no infinities; 0x7F and 0xFF are NaN).
    F8_E4M3 = "F8_E4M3", 8;
    /// 8-bit exponent-only scale, E8M0 (0xFF is NaN).
    F8_E8M0 = "F8_E8M0", 8;
    /// 8-bit float, E4M3 FNUZ (only 0x80 is NaN).
    F8_E4M3FNUZ = "F8_E4M3FNUZ", 8;
    /// 8-bit float, E5M2 FNUZ (only 0x80 is NaN).
    F8_E5M2FNUZ = "F8_E5M2FNUZ", 8;
    /// Signed 16-bit integer.
    I16 = "I16", 16;
    /// Unsigned 16-bit integer.
    U16 = "U16", 16;
    /// IEEE 754 half precision.
    F16 = "F16", 16;
    /// bfloat16.
    BF16 = "BF16", 16;
    /// Signed 32-bit integer.
    I32 = "I32", 32;
    /// Unsigned 32-bit integer.
    U32 = "U32", 32;
    /// IEEE 754 single precision.
    F32 = "F32", 32;
    /// Complex number of two F32 (real, imaginary).
    C64 = "C64", 64;
    /// IEEE 754 double precision.
    F64 = "F64", 64;
    /// Signed 64-bit integer.
    I64 = "I64", 64;
    /// Unsigned 64-bit integer.
    U64 = "U64", 64;
}

impl Dtype {
    /// Bytes an element's begin offset should be a multiple of (`LAYOUT-ALIGN`): the element
    /// size in bytes, and 1 for the sub-byte types.
    pub fn alignment(self) -> u64 {
        (self.bits() / 8).max(1)
    }

    /// Whether the type is a floating-point format (including complex and the 8-bit floats).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Dtype::F4
                | Dtype::F6_E2M3
                | Dtype::F6_E3M2
                | Dtype::F8_E5M2
                | Dtype::F8_E4M3
                | Dtype::F8_E8M0
                | Dtype::F8_E4M3FNUZ
                | Dtype::F8_E5M2FNUZ
                | Dtype::F16
                | Dtype::BF16
                | Dtype::F32
                | Dtype::C64
                | Dtype::F64
        )
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
