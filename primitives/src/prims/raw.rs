//! The RAW fast path of a step: when the frame received (if any) and the frame sent (if any)
//! are both RAW, the step needs no codec, and it runs as one pass over the team (two for a step
//! that combines into `dst`) instead of decode, combine and encode over scalar words:
//!
//! | pass                       | reads                       | writes                                        |
//! |----------------------------|-----------------------------|-----------------------------------------------|
//! | check (`REDUCE` and `COPY`, not trusted) | the received payload | nothing: its checksum, compared with the header's before `dst` is touched |
//! | main                       | the received payload, `src` | `dst` (`COPY`), the sent payload (`SEND`); both checksums |
//! | header                     |                             | the leader: the sent frame's header           |
//!
//! On a trusted channel ([`crate::conn::ChannelDesc::trusted`]: P2P) there is no check pass
//! and the main pass takes no checksum of what it received: the payload is used as delivered
//! (ARCHITECTURE.md, "RAW over P2P"). Elsewhere a received payload that does not match its
//! checksum is an error before anything is published: the frame written to the send slot is
//! not posted, and `dst` holds at most a copy of the rejected data (steps that combine into
//! `dst` check first), as the general path's contract allows. The frames written are
//! byte-identical to [`zipcoll_device::codec::encode_raw_frame`]'s, and a received frame that
//! is not exactly a RAW frame of the step's `n` elements is left to the general path (which
//! decodes it or reports why not).
//!
//! How the main pass spreads the chunk over the channel's team (a warp or a block, [`Team`]):
//! thread `r` of a team of `size` moves vectors `r, r + size, ..`, [`unroll`] of them loaded
//! before any is used, then tail word `r` (`r < 4`, the `bytes % 16` after the vectors, element
//! by element where its buffer is not 4-byte aligned). Slots are
//! [`crate::conn::SLOT_ALIGN`]-aligned and payloads start 32 bytes into them, so the received
//! and sent payloads are always moved by 16-byte loads and stores:
//!
//! | `src` and `dst` (where used)  | their accesses per vector                          |
//! |-------------------------------|----------------------------------------------------|
//! | 16-byte aligned               | one 16-byte load or store                          |
//! | not (a chunk at an odd offset: all_gather, reduce_scatter, all_to_all of counts that are not a multiple of 16 bytes) | 2-5 naturally aligned pieces of the same 16 bytes ([`unaligned`]) |

use super::unaligned;
use super::value::{with_step_value, StepFn, StepValue};
use crate::conn::{ConnError, Failure};
use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::Elem;
use zipcoll_device::frame::{checksum_term, FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Team;
use zipcoll_targets::Word;

/// Vectors each thread of a team of kind `M` loads before it uses any of them (the copies
/// [`unrolled!`] makes), in a pass that computes (`arithmetic`: combines or scales) or only moves
/// and checksums. 8 in a moving pass of a block team, so that a 256-thread channel keeps 32 KiB
/// of loads in flight; 4 elsewhere. Measured on an H200 (2 ranks, 256 threads, 1 GiB bf16;
/// `BENCHMARKS.md`, 2026-12-03): 8 in the moving passes gave all_reduce, all_gather and
/// send/recv 7% more; 8 in the computing passes too gained nothing more and made 1 MiB calls
/// about 15% slower. A warp team's kernel also holds the codecs and is at its register limit.
pub const fn unroll<M: Team>(arithmetic: bool) -> usize {
    if M::IS_WARP || arithmetic {
        4
    } else {
        MAX_UNROLL
    }
}

/// The largest [`unroll`]: the length of the arrays the unrolled copies index.
pub(super) const MAX_UNROLL: usize = 8;

/// Runs `$body` `$n` times (`$n <= MAX_UNROLL`, a constant) with `$u` a constant `0, 1, ..`:
/// arrays indexed by `$u` stay in registers whatever the compiler's unrolling heuristics decide
/// (a loop over `0..n` that LLVM left rolled kept them in local memory); the copies at or past
/// `$n` are dead code.
macro_rules! unrolled {
    ($u:ident < $n:expr => $body:block) => {
        unrolled!(@copies $u, $n, $body, 0 1 2 3 4 5 6 7)
    };
    (@copies $u:ident, $n:expr, $body:block, $($k:literal)*) => {{
        const _: () = assert!(MAX_UNROLL == 8, "unrolled! makes exactly MAX_UNROLL copies");
        $({
            const $u: usize = $k;
            if $u < $n $body
        })*
    }};
}
pub(super) use unrolled;
/// Bytes of one vector.
pub const VECTOR_BYTES: usize = 16;

/// Four little-endian u32 words, 16-byte aligned: one vector load or store.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
pub(super) struct Vector([u32; 4]);

impl Vector {
    /// The vector of the 16 little-endian bytes of `bits`.
    #[inline(always)]
    pub(super) fn from_bits(bits: u128) -> Vector {
        Vector(core::array::from_fn(|k| (bits >> (32 * k)) as u32))
    }

    /// Its 16 bytes as a little-endian number.
    #[inline(always)]
    pub(super) fn bits(self) -> u128 {
        self.0.iter().rev().fold(0, |acc, &w| acc << 32 | u128::from(w))
    }
}

/// Whether `p` may be read and written by vectors.
#[inline(always)]
pub fn aligned<P>(p: *const P) -> bool {
    (p as usize).is_multiple_of(VECTOR_BYTES)
}

/// The stored checksum of `frame` if it is exactly a RAW frame of `n` elements of `T` (a valid
/// header of dtype `T`, codec RAW, no parameters, `n` elements of payload inside `frame`);
/// `None` for anything else.
#[inline(always)]
pub fn raw_frame_checksum<T: Elem>(frame: &[u8], n: usize) -> Option<u32> {
    let h = FrameHeader::parse(frame).ok()?;
    let bytes = n * T::DTYPE.size_bytes();
    let exact = h.codec_id() == Some(CodecId::Raw)
        && h.dtype_id() == Some(T::DTYPE)
        && h.params == 0
        && h.params2 == 0
        && h.raw_bytes as usize == bytes
        && h.payload_bytes == h.raw_bytes
        && frame.len() >= HEADER_BYTES + bytes;
    exact.then_some(h.raw_checksum)
}

/// What a received frame is to the fast path ([`classify`]).
pub enum Received<B> {
    /// Not exactly a RAW frame of the step's elements: the general path decodes it (or says
    /// why not).
    General,
    /// A RAW frame of the step's elements, not yet checked against its checksum.
    Raw {
        /// Its payload, 16-byte aligned.
        payload: *const B,
        /// The header's checksum of the payload.
        stored: u32,
    },
}

/// Classifies a received `frame` for a step of `n` elements. Out of line: one copy per dtype,
/// shared by every step.
#[inline(never)]
pub fn classify<T: Elem>(frame: &[u8], n: usize) -> Received<T::Bits> {
    let Some(stored) = raw_frame_checksum::<T>(frame, n) else {
        return Received::General;
    };
    let payload = frame.as_ptr().wrapping_add(HEADER_BYTES).cast::<T::Bits>();
    if !aligned(payload) {
        return Received::General;
    }
    Received::Raw { payload, stored }
}

/// What [`combine_send`] wrote and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSums {
    /// Bytes of the frame written to the send slot (header and payload).
    pub frame_bytes: usize,
    /// The checksum of the received payload when the step verifies it (`RECV` and
    /// [`RawStep::verify`]; the checksum of nothing when it does not receive), `None` when it
    /// does not.
    pub received: Option<u32>,
}

/// The addresses one RAW step reads and writes (null where a flag leaves a side out).
pub struct RawStep<T: Elem> {
    /// The received payload (`RECV`), 16-byte aligned, `n` elements.
    pub recv: *const T::Bits,
    /// The local contribution (`REDUCE` or not `RECV`), `n` elements.
    pub src: *const T::Bits,
    /// Where the value goes (`COPY`), `n` elements.
    pub dst: *mut T::Bits,
    /// The send slot (`SEND`): the frame is written at its start.
    pub send: *mut u8,
    /// Elements in the chunk.
    pub n: usize,
    /// Whether the main pass takes the received payload's checksum (false on a trusted
    /// channel, [`crate::conn::ChannelDesc::trusted`]: no term is added, no team sum taken).
    pub verify: bool,
}

/// The check pass: the checksum of the `n` received elements at `recv` (every thread of the
/// team gets it).
///
/// # Safety
/// `recv` is 16-byte aligned and valid for reads of `n` elements.
#[inline(never)]
pub unsafe fn recv_checksum<M: Team, T: Elem>(team: M, recv: *const T::Bits, n: usize) -> u32 {
    let bytes = n * T::DTYPE.size_bytes();
    let nvec = bytes / VECTOR_BYTES;
    let vectors = recv.cast::<Vector>();
    let mut acc = 0u32;
    let mut v = team.rank() as usize;
    let (stride, unroll) = (team.size() as usize, unroll::<M>(false));
    while v < nvec {
        let mut loaded = [Vector::default(); MAX_UNROLL];
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                // SAFETY: `i < nvec`: a whole vector inside the payload (the caller's contract).
                loaded[U] = unsafe { vectors.add(i).read() };
            }
        });
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                acc = acc.wrapping_add(vector_terms(&loaded[U], i));
            }
        });
        v += unroll * stride;
    }
    // thread r: the terms of its vectors; the tail words (at most 4) go to threads 0..4
    let word = nvec * 4 + team.rank() as usize;
    if word * 4 < bytes {
        // SAFETY: the word's elements that exist are inside the payload.
        let bits = unsafe { tail_word::<T>(recv, word, n) };
        acc = acc.wrapping_add(checksum_term(bits, word as u32));
    }
    team.sum_u32(acc).wrapping_add(bytes as u32)
}

/// The main pass and the header of a step of operator `op` ([`combine_send_value`] over the
/// value the flags and `op` compute). Operators and steps that compute alike share one
/// instance of it: moving steps do not depend on the operator, and combining steps depend only
/// on how it combines unless its `pre` scales (Avg).
///
/// # Safety
/// As [`combine_send_value`], with `REDUCE` for `V::REDUCE`.
#[inline(always)]
pub unsafe fn combine_send<
    M: Team,
    T: Elem,
    O: RedOp,
    const RECV: bool,
    const REDUCE: bool,
    const SEND: bool,
    const COPY: bool,
>(
    team: M,
    op: O,
    s: &RawStep<T>,
) -> RawSums {
    // SAFETY: forwarded from the caller.
    unsafe { with_step_value::<O, RECV, REDUCE, _>(op, CombineSend::<M, T, RECV, SEND, COPY> { team, s }) }
}

/// [`combine_send_value`] as a [`StepFn`].
struct CombineSend<'a, M, T: Elem, const RECV: bool, const SEND: bool, const COPY: bool> {
    team: M,
    s: &'a RawStep<T>,
}

impl<M: Team, T: Elem, const RECV: bool, const SEND: bool, const COPY: bool> StepFn
    for CombineSend<'_, M, T, RECV, SEND, COPY>
{
    type Output = RawSums;
    /// # Safety
    /// As [`combine_send_value`].
    #[inline(always)]
    unsafe fn call<V: StepValue>(self, v: V) -> RawSums {
        // SAFETY: forwarded from the caller.
        unsafe { combine_send_value::<M, T, V, RECV, SEND, COPY>(self.team, v, self.s) }
    }
}

/// The main pass and the header: computes each element's value (`V`'s, from the received
/// element when `RECV` and the local one when `V` reduces or the step does not receive),
/// writes it to `dst` (`COPY`) and to the send slot's payload (`SEND`), then the leader writes
/// the sent frame's header. Returns the frame's bytes and the received payload's checksum
/// (every thread gets them). Ends without a team sync: the caller's `post` (or the next step)
/// orders the threads.
///
/// # Safety
/// The pointers of `s` are valid as [`RawStep`] says for the flags (`REDUCE` being
/// `V::REDUCE`); `dst` equals `src` or does not overlap it; the send slot holds at least a RAW
/// frame of `n` elements.
#[inline(never)]
pub unsafe fn combine_send_value<
    M: Team,
    T: Elem,
    V: StepValue,
    const RECV: bool,
    const SEND: bool,
    const COPY: bool,
>(
    team: M,
    step_value: V,
    s: &RawStep<T>,
) -> RawSums {
    let local = V::REDUCE || !RECV;
    let bytes = s.n * T::DTYPE.size_bytes();
    let nvec = bytes / VECTOR_BYTES;
    // the payloads are always vector-aligned; `src` and `dst` are moved by pieces where not
    // SAFETY: forwarded from the caller; `nvec` vectors are `bytes` or fewer.
    let (mut acc, mut got_acc) = unsafe {
        if (!local || aligned(s.src)) && (!COPY || aligned(s.dst)) {
            vector_pass::<M, T, V, RECV, SEND, COPY, true>(team, step_value, s, nvec)
        } else {
            vector_pass::<M, T, V, RECV, SEND, COPY, false>(team, step_value, s, nvec)
        }
    };
    let out = s.send.wrapping_add(HEADER_BYTES).cast::<T::Bits>();
    if T::DTYPE.size_bytes() == 8 {
        // the element after the vectors (a tail of 8 bytes or none): thread 0 moves it whole
        let e = nvec * 2 + team.rank() as usize;
        if e < s.n {
            // SAFETY: `e < n`: inside the payload, `src`, `dst` and the slot's payload
            // (contract); `src`'s element is read before `dst`'s is written.
            unsafe {
                let got = if RECV { s.recv.add(e).read() } else { T::Bits::default() };
                let mine = if local { s.src.add(e).read() } else { T::Bits::default() };
                let x = step_value.of::<T>(got, mine);
                if COPY {
                    s.dst.add(e).write(x);
                }
                if SEND {
                    out.add(e).write(x);
                }
                acc = acc.wrapping_add(element_terms(x.to_bits64(), e));
                if RECV && s.verify {
                    got_acc = got_acc.wrapping_add(element_terms(got.to_bits64(), e));
                }
            }
        }
    }
    // the words after the vectors (at most 4) of smaller elements: thread r moves word
    // nvec * 4 + r, + size, ..
    let words = if T::DTYPE.size_bytes() == 8 {
        0
    } else {
        bytes.div_ceil(4)
    };
    let mut w = nvec * 4 + team.rank() as usize;
    while w < words {
        // SAFETY: `w < words`: the word's elements that exist are inside the payload and `src`
        // (contract).
        let (got, mine) = unsafe {
            (
                if RECV { load_word::<T>(s.recv, w, s.n) } else { 0 },
                if local { load_word::<T>(s.src, w, s.n) } else { 0 },
            )
        };
        // as `map_vector_out_of_line`: 8- and 16-bit arithmetic goes out of line
        let x = if V::ARITHMETIC && T::DTYPE.size_bytes() < 4 {
            map_word_out_of_line::<T, V>(step_value, got, mine)
        } else {
            map_word::<T>(got, mine, |r, l| step_value.of::<T>(r, l))
        } & word_mask::<T>(w, s.n);
        // SAFETY: `w < words`: the word's elements that exist are inside `dst` and the slot's
        // payload (contract); `src`'s were read above, before this write.
        unsafe {
            if COPY {
                store_word::<T>(s.dst, w, s.n, x);
            }
            if SEND {
                store_word::<T>(out, w, s.n, x);
            }
        }
        acc = acc.wrapping_add(checksum_term(x, w as u32));
        if RECV && s.verify {
            got_acc = got_acc.wrapping_add(checksum_term(got, w as u32));
        }
        w += team.size() as usize;
    }
    // (a block team pays two barriers per sum: only the sums a step uses are taken)
    let checksum = if SEND { team.sum_u32(acc) } else { 0 }.wrapping_add(bytes as u32);
    let received = match (RECV, s.verify) {
        (true, false) => None,
        (true, true) => Some(team.sum_u32(got_acc).wrapping_add(bytes as u32)),
        (false, _) => Some(bytes as u32),
    };
    if SEND && team.rank() == 0 {
        let h = FrameHeader::new(CodecId::Raw, T::DTYPE, 0, 0, bytes as u32, bytes as u32, checksum);
        let header = h.to_bytes();
        for (k, half) in header.chunks_exact(VECTOR_BYTES).enumerate() {
            let v = Vector(core::array::from_fn(|j| {
                u32::from_le_bytes([half[4 * j], half[4 * j + 1], half[4 * j + 2], half[4 * j + 3]])
            }));
            // SAFETY: the slot holds the header's 32 bytes and is 16-byte aligned (contract).
            unsafe { s.send.cast::<Vector>().add(k).write(v) };
        }
    }
    RawSums {
        frame_bytes: HEADER_BYTES + bytes,
        received,
    }
}

/// The vectors of [`combine_send_value`]'s main pass: thread `r` of the team computes vectors
/// `r, r + size, ..` of the `nvec` whole vectors, [`unroll`] of them loaded before any is
/// used; returns its terms of the sent and of the received checksum. The payloads are moved
/// by 16-byte vectors; `src` and `dst` too where `ALIGNED` (both vector-aligned, where used),
/// by [`unaligned`]'s pieces otherwise.
///
/// # Safety
/// As [`combine_send_value`]; `nvec` whole vectors are inside every buffer the step uses.
#[inline(always)]
unsafe fn vector_pass<
    M: Team,
    T: Elem,
    V: StepValue,
    const RECV: bool,
    const SEND: bool,
    const COPY: bool,
    const ALIGNED: bool,
>(
    team: M,
    step_value: V,
    s: &RawStep<T>,
    nvec: usize,
) -> (u32, u32) {
    let local = V::REDUCE || !RECV;
    let recv = s.recv.cast::<Vector>();
    let (src, dst) = (s.src.cast::<u8>(), s.dst.cast::<u8>());
    let sent = s.send.wrapping_add(HEADER_BYTES).cast::<Vector>();
    let (mut acc, mut got_acc) = (0u32, 0u32);
    let mut v = team.rank() as usize;
    let (stride, unroll) = (team.size() as usize, unroll::<M>(V::ARITHMETIC));
    while v < nvec {
        let mut got = [Vector::default(); MAX_UNROLL];
        let mut mine = [Vector::default(); MAX_UNROLL];
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                // SAFETY: `i < nvec`: whole vectors inside the payload and `src` (contract).
                unsafe {
                    if RECV {
                        got[U] = recv.add(i).read();
                    }
                    if local {
                        let at = src.add(i * VECTOR_BYTES);
                        mine[U] = if ALIGNED { at.cast::<Vector>().read() } else { unaligned::load(at) };
                    }
                }
            }
        });
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                // 8- and 16-bit floats convert through f32 in software: their arithmetic goes
                // out of line, one call per vector, so the unrolled loop stays small
                let x = if V::ARITHMETIC && T::DTYPE.size_bytes() < 4 {
                    map_vector_out_of_line::<T, V>(step_value, got[U], mine[U])
                } else {
                    map_vector::<T, V>(step_value, got[U], mine[U])
                };
                // SAFETY: `i < nvec`: inside `dst` and the slot's payload (contract); `src[i]`
                // was read above, before this write.
                unsafe {
                    if COPY {
                        let at = dst.add(i * VECTOR_BYTES);
                        if ALIGNED {
                            at.cast::<Vector>().write(x);
                        } else {
                            unaligned::store(at, x);
                        }
                    }
                    if SEND {
                        sent.add(i).write(x);
                    }
                }
                acc = acc.wrapping_add(vector_terms(&x, i));
                if RECV && s.verify {
                    got_acc = got_acc.wrapping_add(vector_terms(&got[U], i));
                }
            }
        });
        v += unroll * stride;
    }
    (acc, got_acc)
}

/// The typed error of a received RAW frame whose data do not match its checksum.
pub fn checksum_failure(step: u64, stored: u32, computed: u32) -> Failure {
    Failure {
        step,
        error: ConnError::Frame(FrameError::RawChecksum { stored, computed }),
    }
}

/// The checksum terms of vector `i` (words `4i .. 4i + 4`).
#[inline(always)]
fn vector_terms(v: &Vector, i: usize) -> u32 {
    let base = (i * 4) as u32;
    v.0.iter()
        .enumerate()
        .fold(0u32, |acc, (k, &x)| acc.wrapping_add(checksum_term(x, base + k as u32)))
}

/// The checksum terms of 8-byte element `e` (its two little-endian words, `2e` and `2e + 1`).
#[inline(always)]
fn element_terms(bits: u64, e: usize) -> u32 {
    checksum_term(bits as u32, 2 * e as u32).wrapping_add(checksum_term((bits >> 32) as u32, 2 * e as u32 + 1))
}

/// The vector whose elements are `v`'s of the received and local vectors' elements.
#[inline(always)]
fn map_vector<T: Elem, V: StepValue>(v: V, received: Vector, mine: Vector) -> Vector {
    let (g, m) = (received.0, mine.0);
    if T::DTYPE.size_bytes() == 8 {
        // two elements, each two words (low word first)
        let of = |k: usize| {
            let r = T::Bits::from_bits64(u64::from(g[2 * k]) | u64::from(g[2 * k + 1]) << 32);
            let l = T::Bits::from_bits64(u64::from(m[2 * k]) | u64::from(m[2 * k + 1]) << 32);
            v.of::<T>(r, l).to_bits64()
        };
        let (a, b) = (of(0), of(1));
        return Vector([a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]);
    }
    let f = |r: T::Bits, l: T::Bits| v.of::<T>(r, l);
    Vector([
        map_word::<T>(g[0], m[0], f),
        map_word::<T>(g[1], m[1], f),
        map_word::<T>(g[2], m[2], f),
        map_word::<T>(g[3], m[3], f),
    ])
}

/// [`map_vector`], never inlined.
#[inline(never)]
fn map_vector_out_of_line<T: Elem, V: StepValue>(v: V, received: Vector, mine: Vector) -> Vector {
    map_vector::<T, V>(v, received, mine)
}

/// The word whose elements are `f(received element, local element)`, element by element.
#[inline(always)]
fn map_word<T: Elem>(received: u32, mine: u32, f: impl Fn(T::Bits, T::Bits) -> T::Bits) -> u32 {
    let size = T::DTYPE.size_bytes();
    let bits = 8 * size as u32;
    let mask = if size == 4 { u32::MAX } else { (1u32 << bits) - 1 };
    let mut out = 0u32;
    for k in 0..(4 / size) as u32 {
        let at = k * bits;
        let r = T::Bits::from_bits64(((received >> at) & mask) as u64);
        let m = T::Bits::from_bits64(((mine >> at) & mask) as u64);
        out |= ((f(r, m).to_bits64() as u32) & mask) << at;
    }
    out
}

/// [`map_word`] of `v`'s value, never inlined.
#[inline(never)]
fn map_word_out_of_line<T: Elem, V: StepValue>(v: V, received: u32, mine: u32) -> u32 {
    map_word::<T>(received, mine, |r, l| v.of::<T>(r, l))
}

/// The bits of word `word` that hold one of `n` elements of `T` (all of a whole word).
#[inline(always)]
fn word_mask<T: Elem>(word: usize, n: usize) -> u32 {
    let per = 4 / T::DTYPE.size_bytes();
    let have = n.saturating_sub(word * per).min(per);
    if have == per {
        u32::MAX
    } else {
        (1u32 << (8 * T::DTYPE.size_bytes() * have)) - 1
    }
}

/// Little-endian word `word` of the elements at `p` (the first `n` exist), zero where no element
/// is: one load where `p` is 4-byte aligned and the word whole, element by element otherwise.
///
/// # Safety
/// `p` is valid for reads of `n` elements.
#[inline(always)]
unsafe fn load_word<T: Elem>(p: *const T::Bits, word: usize, n: usize) -> u32 {
    let per = 4 / T::DTYPE.size_bytes();
    if (p as usize).is_multiple_of(4) && (word + 1) * per <= n {
        // SAFETY: 4-byte aligned, and the word's elements are inside the `n` (contract).
        return unsafe { p.cast::<u32>().add(word).read() };
    }
    // SAFETY: forwarded.
    unsafe { tail_word::<T>(p, word, n) }
}

/// Writes the elements of word `word` (little-endian `bits`) that exist among the first `n` at
/// `p`: one store where `p` is 4-byte aligned and the word whole, element by element otherwise.
///
/// # Safety
/// `p` is valid for writes of `n` elements.
#[inline(always)]
unsafe fn store_word<T: Elem>(p: *mut T::Bits, word: usize, n: usize, bits: u32) {
    let size = T::DTYPE.size_bytes();
    let per = 4 / size;
    if (p as usize).is_multiple_of(4) && (word + 1) * per <= n {
        // SAFETY: 4-byte aligned, and the word's elements are inside the `n` (contract).
        unsafe { p.cast::<u32>().add(word).write(bits) };
        return;
    }
    let first = word * per;
    for (k, e) in (first..(first + per).min(n)).enumerate() {
        let x = T::Bits::from_bits64(u64::from(bits >> (8 * size * k)));
        // SAFETY: `e < n` (the caller's contract).
        unsafe { p.add(e).write(x) };
    }
}

/// Little-endian word `word` of the elements at `p` (the first `n` exist), zero where no element
/// is.
///
/// # Safety
/// `p` is valid for reads of `n` elements.
#[inline(always)]
unsafe fn tail_word<T: Elem>(p: *const T::Bits, word: usize, n: usize) -> u32 {
    let size = T::DTYPE.size_bytes();
    if size == 8 {
        if word / 2 >= n {
            return 0;
        }
        // SAFETY: `word / 2 < n` (the caller's contract): half of that element.
        return (unsafe { p.add(word / 2).read() }.to_bits64() >> (32 * (word % 2))) as u32;
    }
    let per = 4 / size;
    let first = word * per;
    let mut bits = 0u32;
    for (k, e) in (first..(first + per).min(n)).enumerate() {
        // SAFETY: `e < n` (the caller's contract).
        let x = unsafe { p.add(e).read() };
        bits |= (x.to_bits64() as u32) << (8 * size * k);
    }
    bits
}
