//! Lossless codecs. Every frame is a [`crate::frame::FrameHeader`] and a payload; all codecs
//! but RAW split each value into an exponent symbol and raw bits ([`crate::dtype::Split`]),
//! store the raw bits as a packed plane first (so it can be sent before the coded part is
//! finished) and code the symbols with a [`SymbolCoder`]:
//!
//! | [`CodecId`]  | payload                                                          |
//! |--------------|------------------------------------------------------------------|
//! | `Raw`        | the data as is                                                   |
//! | `FixedLen`   | raw plane, then symbols bit-packed per 32-symbol sub-block       |
//! | `ExpWindow`  | raw plane, then k-bit codes for a window of exponents + escapes  |
//! | `ExpAns`     | raw plane, then rANS-coded symbols with a per-frame table        |
//! | `Huffman`    | raw plane, then canonical Huffman codes (<= 16 bits)             |
//!
//! A frame is encoded and decoded by one warp, with no grid-wide synchronization, so it can
//! run inside a communication primitive ([`frame_codec`], format version 1), or by a whole
//! thread block with its tables in shared memory ([`block_frame`], version 2; RAW and ExpAns). All lanes of the warp call the same function with
//! the same arguments; each lane reads the whole input and writes only its own parts of the
//! output through a [`LaneOut`].
//!
//! Adding a codec: implement [`SymbolCoder`] in one file of this module and add its line to
//! [`for_each_symbol_coder!`], which makes its [`CodecId`] and every dispatch
//! ([`with_symbol_coder!`]).

use crate::frame::FrameError;
use core::marker::PhantomData;
use zipcoll_targets::Warp;

pub mod block_frame;
pub mod exp_ans;
pub mod exp_window;
pub mod fixed_len;
pub mod frame_codec;
pub mod huffman;

pub use block_frame::BlockCoder;
pub use exp_ans::ExpAns;
pub use exp_window::ExpWindow;
pub use fixed_len::FixedLen;
pub use frame_codec::{decode_frame, decode_raw_frame, encode_frame, encode_raw_frame, max_encoded_len};
pub use huffman::Huffman;

/// The codecs with a symbol coder, in id order: **the one list of them.** Each entry is
/// `[type, id, name]`: the [`SymbolCoder`] under this module (also the [`CodecId`] variant),
/// its id in frame headers, its name in the CLI and reports. `for_each_symbol_coder!((m) {
/// args })` expands to `m! { args [FixedLen, 1, "fixedlen"] .. }`, so the list drives [`CodecId`],
/// [`CodecId::ALL`], [`CodecId::name`] and every dispatch ([`with_symbol_coder!`]). Adding a
/// codec: its file in this module, its line here, and its row in codegen's codec table (the
/// kernels' `codec = [...]` names; a proc-macro cannot read this list).
#[macro_export]
macro_rules! for_each_symbol_coder {
    (($($m:tt)+) { $($args:tt)* }) => {
        $($m)+! { $($args)*
            [FixedLen, 1, "fixedlen"]
            [ExpWindow, 2, "expwindow"]
            [ExpAns, 3, "expans"]
            [Huffman, 4, "huffman"]
        }
    };
}

/// Evaluates `$body` with the type alias `$C` naming the [`SymbolCoder`] of `$codec` (a
/// [`CodecId`]), or `$raw` for [`CodecId::Raw`], which has none: the dispatch from a codec id
/// to its coder, made from [`for_each_symbol_coder!`].
///
/// ```
/// use zipcoll_device::codec::{CodecId, SymbolCoder};
/// let bound = |c: CodecId| zipcoll_device::with_symbol_coder!(c, |C| C::max_coded_len(100, 8), raw => 0);
/// assert_eq!(bound(CodecId::Raw), 0);
/// assert!(bound(CodecId::Huffman) > 0);
/// ```
#[macro_export]
macro_rules! with_symbol_coder {
    ($codec:expr, |$C:ident| $body:expr, raw => $raw:expr) => {
        $crate::for_each_symbol_coder!(($crate::__symbol_coder_match) { ($codec) $C ($body) ($raw) })
    };
}

/// [`with_symbol_coder!`]'s match over the list.
#[doc(hidden)]
#[macro_export]
macro_rules! __symbol_coder_match {
    (($codec:expr) $C:ident ($body:expr) ($raw:expr) $([$coder:ident, $id:literal, $name:literal])*) => {
        match $codec {
            $crate::codec::CodecId::Raw => $raw,
            $($crate::codec::CodecId::$coder => {
                type $C = $crate::codec::$coder;
                $body
            })*
        }
    };
}

/// Defines [`CodecId`] from the list.
macro_rules! codec_ids {
    ($([$coder:ident, $id:literal, $name:literal])*) => {
        /// The codecs, as stored in frame headers: RAW (no coder) and those of
        /// [`for_each_symbol_coder!`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum CodecId {
            /// The data as is.
            Raw = 0,
            $(
                #[doc = concat!("The symbols coded by [`", stringify!($coder), "`].")]
                $coder = $id,
            )*
        }

        impl CodecId {
            /// Every codec, in id order.
            pub const ALL: [CodecId; 1 + [$($id),*].len()] = [CodecId::Raw, $(CodecId::$coder),*];
            /// The name used by the CLI and in reports (`raw`, `fixedlen`, `expwindow`, `expans`, `huffman`).
            pub fn name(self) -> &'static str {
                match self {
                    CodecId::Raw => "raw",
                    $(CodecId::$coder => $name,)*
                }
            }
        }
    };
}

for_each_symbol_coder!((codec_ids) {});

impl CodecId {
    /// The codec whose id is `v`, if any.
    pub fn from_u8(v: u8) -> Option<CodecId> {
        CodecId::ALL.into_iter().find(|c| *c as u8 == v)
    }
    /// A [`FrameError::Corrupt`] of this codec at byte `offset` of its coded section.
    #[inline(always)]
    pub const fn corrupt(self, offset: usize, reason: &'static str) -> FrameError {
        FrameError::Corrupt {
            codec: self,
            offset,
            reason,
        }
    }
}

/// A write went past the end of a [`LaneOut`] (the output does not fit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfSpace {
    /// Byte offset of the write.
    pub offset: usize,
}

/// A byte buffer that all lanes of a warp write into at once, each lane at its own offsets
/// (a slice would give every lane a `&mut` to the same memory). Writes are bounds-checked and
/// `unsafe`: only the caller knows that no other lane writes the same bytes at the same time
/// (two lanes writing one byte concurrently is a data race), so safe code cannot misuse it.
#[derive(Clone, Copy, Debug)]
pub struct LaneOut<'a> {
    ptr: *mut u8,
    len: usize,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> LaneOut<'a> {
    /// All of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
            _buf: PhantomData,
        }
    }
    /// `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for writes of `len` bytes for `'a`, and nothing else accesses them meanwhile
    /// except through copies of this `LaneOut`. Copies held by several lanes are used as one
    /// warp's output: the lanes call this crate's coders ([`SymbolCoder::encode`],
    /// [`encode_frame`], ..) with it converged and with the same arguments, which is what makes
    /// their lanes' writes disjoint.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Self {
        Self {
            ptr,
            len,
            _buf: PhantomData,
        }
    }
    /// The buffer's first byte.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The bytes from `offset` on, as a buffer of their own.
    pub fn tail(self, offset: usize) -> Result<LaneOut<'a>, OutOfSpace> {
        if offset > self.len {
            return Err(OutOfSpace { offset });
        }
        // SAFETY: in bounds of the buffer this one covers.
        Ok(unsafe { LaneOut::from_raw(self.ptr.add(offset), self.len - offset) })
    }
    /// Writes `bytes` at `offset`; past the end is `Err(OutOfSpace)` and writes nothing.
    ///
    /// # Safety
    /// No other lane (or any other thread) reads or writes any byte of `offset .. offset +
    /// bytes.len()` of this buffer concurrently: between two synchronizations of the warp, the
    /// lanes' writes through copies of one `LaneOut` are to disjoint bytes, and nobody reads
    /// the bytes written.
    #[inline(always)]
    pub unsafe fn put(&self, offset: usize, bytes: &[u8]) -> Result<(), OutOfSpace> {
        match offset.checked_add(bytes.len()) {
            Some(end) if end <= self.len => {
                // SAFETY: in bounds (checked); no concurrent access to these bytes (the caller).
                unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) };
                Ok(())
            }
            _ => Err(OutOfSpace { offset }),
        }
    }
    /// Writes the low `len` (`1..=4`) bytes of `v` little-endian at `offset`: one aligned
    /// store when `len` is 2 or 4 and the address is aligned for it, single bytes otherwise.
    /// Past the end is `Err(OutOfSpace)` and writes nothing.
    ///
    /// # Safety
    /// As [`LaneOut::put`] for the `len` bytes at `offset`.
    #[inline(always)]
    pub unsafe fn put_le(&self, offset: usize, v: u32, len: usize) -> Result<(), OutOfSpace> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len && len <= 4 => {
                // SAFETY: in bounds (checked); no concurrent access to these bytes (the caller);
                // the wide stores only where the address is aligned for them (checked).
                unsafe {
                    let p = self.ptr.add(offset);
                    if len == 4 && (p as usize).is_multiple_of(4) {
                        p.cast::<u32>().write(v);
                    } else if len == 2 && (p as usize).is_multiple_of(2) {
                        p.cast::<u16>().write(v as u16);
                    } else {
                        for k in 0..len {
                            p.add(k).write((v >> (8 * k)) as u8);
                        }
                    }
                }
                Ok(())
            }
            _ => Err(OutOfSpace { offset }),
        }
    }
    /// Writes one byte at `offset`.
    ///
    /// # Safety
    /// As [`LaneOut::put`] for the byte at `offset`.
    #[inline(always)]
    pub unsafe fn put_u8(&self, offset: usize, v: u8) -> Result<(), OutOfSpace> {
        if offset < self.len {
            // SAFETY: in bounds (checked); no concurrent access to the byte (the caller).
            unsafe { self.ptr.add(offset).write(v) };
            Ok(())
        } else {
            Err(OutOfSpace { offset })
        }
    }
    /// Writes `v` little-endian at `offset` (any alignment).
    ///
    /// # Safety
    /// As [`LaneOut::put`] for the 2 bytes at `offset`.
    #[inline(always)]
    pub unsafe fn put_u16(&self, offset: usize, v: u16) -> Result<(), OutOfSpace> {
        // SAFETY: the caller's promise for these bytes.
        unsafe { self.put(offset, &v.to_le_bytes()) }
    }
    /// Writes `v` little-endian at `offset` (any alignment).
    ///
    /// # Safety
    /// As [`LaneOut::put`] for the 4 bytes at `offset`.
    #[inline(always)]
    pub unsafe fn put_u32(&self, offset: usize, v: u32) -> Result<(), OutOfSpace> {
        // SAFETY: the caller's promise for these bytes.
        unsafe { self.put(offset, &v.to_le_bytes()) }
    }
}

/// Reads a little-endian u32 at `offset` of `buf`, or `None` past its end.
#[inline(always)]
pub fn get_u32(buf: &[u8], offset: usize) -> Option<u32> {
    let b = buf.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// What a [`SymbolCoder`] wrote: the coded section's length and the header parameters the
/// decoder needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Coded {
    /// Bytes of the coded section.
    pub len: usize,
    /// Goes to `FrameHeader::params`.
    pub params: u16,
    /// Goes to `FrameHeader::params2`.
    pub params2: u32,
}

/// Codes a frame's exponent symbols (one byte each, `< 2^symbol_bits`).
///
/// Called by all lanes of a warp with the same arguments. `encode` reads symbol `i` as
/// `sym(i)` (any lane may read any `i`); `decode` hands symbol `i` to `put(i, s)` exactly once,
/// on any one lane.
pub trait SymbolCoder {
    /// This coder's id in frame headers.
    const ID: CodecId;
    /// A true upper bound of the coded section's bytes for `n` symbols of `symbol_bits` bits.
    fn max_coded_len(n: usize, symbol_bits: u32) -> usize;
    /// Codes `n` symbols into `out` (from its start). `Err(OutOfSpace)` if `out` is too small:
    /// the frame then falls back to RAW.
    fn encode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        sym: impl Fn(usize) -> u8,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace>;
    /// Decodes `n` symbols from exactly the coded section `coded`. Any inconsistency is a
    /// [`FrameError::Corrupt`] naming this codec and the byte offset within `coded`; reads never
    /// leave `coded`.
    fn decode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        params: u16,
        params2: u32,
        coded: &[u8],
        put: impl FnMut(usize, u8),
    ) -> Result<(), FrameError>;
}
