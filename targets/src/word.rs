//! [`Word`]: values that travel through shuffles as one or two 32-bit registers.

/// A plain value that warp operations move between lanes, as `WORDS` 32-bit halves.
pub trait Word: Copy {
    /// Number of 32-bit registers a value occupies (1 or 2).
    const WORDS: u32;
    /// The value's bits, zero-extended to 64.
    fn to_bits64(self) -> u64;
    /// The value back from the low bits of `bits` (the inverse of [`Word::to_bits64`]).
    fn from_bits64(bits: u64) -> Self;
}

macro_rules! word_via_cast {
    ($($t:ty => $u:ty, $words:literal;)*) => {$(
        impl Word for $t {
            const WORDS: u32 = $words;
            #[inline(always)]
            fn to_bits64(self) -> u64 { self as $u as u64 }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self { bits as $u as $t }
        }
    )*};
}
word_via_cast! {
    u8 => u8, 1; u16 => u16, 1; u32 => u32, 1; u64 => u64, 2; usize => u64, 2;
    i8 => u8, 1; i16 => u16, 1; i32 => u32, 1; i64 => u64, 2;
}

impl Word for f32 {
    const WORDS: u32 = 1;
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self.to_bits() as u64
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl Word for f64 {
    const WORDS: u32 = 2;
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl Word for bool {
    const WORDS: u32 = 1;
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        bits & 1 != 0
    }
}
