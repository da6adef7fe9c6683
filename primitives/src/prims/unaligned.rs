//! 16 bytes at any address, moved by naturally aligned pieces: how the RAW fast path reads and
//! writes the caller's buffer when a chunk starts at an odd element of it (all_gather,
//! reduce_scatter and all_to_all of counts that are not a multiple of 16 bytes), so that the
//! slot's side of the step keeps its 16-byte vectors and the pass its vectors in flight.
//!
//! The pieces of 16 bytes at `p` are the largest of 8, 4, 2 and 1 bytes that `p + offset` is
//! aligned to and that fit what is left, in order:
//!
//! | `p % 16`     | pieces (bytes)  | accesses |
//! |--------------|-----------------|----------|
//! | 0            | one vector      | 1        |
//! | 8            | 8, 8            | 2        |
//! | 4, 12        | 4, 8, 4         | 3        |
//! | 2, 6, 10, 14 | 2, 4, 8, 2 / 2, 8, 4, 2 | 4 |
//! | odd (fp8)    | up to 1, 2, 4, 8, 1 | at most 5 |
//!
//! The accesses stay inside the 16 bytes, so a buffer's first and last vectors need no care.

use super::raw::Vector;

/// The size of the piece at `addr` with `left` bytes still to move.
#[inline(always)]
fn piece(addr: usize, left: usize) -> usize {
    let mut size = 8;
    while size > 1 && (!addr.is_multiple_of(size) || size > left) {
        size /= 2;
    }
    size
}

/// The 16 bytes at `p`, little-endian, as a vector.
///
/// # Safety
/// `p` is valid for reads of 16 bytes.
#[inline(always)]
pub unsafe fn load(p: *const u8) -> Vector {
    if p.cast::<Vector>().is_aligned() {
        // SAFETY: aligned, and valid for 16 bytes (contract).
        return unsafe { p.cast::<Vector>().read() };
    }
    let mut bits = 0u128;
    let mut offset = 0;
    while offset < 16 {
        let size = piece(p as usize + offset, 16 - offset);
        // SAFETY: `offset + size <= 16` and `p + offset` is aligned to `size`.
        let x = unsafe {
            let at = p.add(offset);
            match size {
                8 => at.cast::<u64>().read(),
                4 => u64::from(at.cast::<u32>().read()),
                2 => u64::from(at.cast::<u16>().read()),
                _ => u64::from(at.read()),
            }
        };
        bits |= u128::from(x) << (8 * offset);
        offset += size;
    }
    Vector::from_bits(bits)
}

/// Writes `v`'s 16 bytes, little-endian, at `p`.
///
/// # Safety
/// `p` is valid for writes of 16 bytes.
#[inline(always)]
pub unsafe fn store(p: *mut u8, v: Vector) {
    if p.cast::<Vector>().is_aligned() {
        // SAFETY: aligned, and valid for 16 bytes (contract).
        return unsafe { p.cast::<Vector>().write(v) };
    }
    let bits = v.bits();
    let mut offset = 0;
    while offset < 16 {
        let size = piece(p as usize + offset, 16 - offset);
        let x = (bits >> (8 * offset)) as u64;
        // SAFETY: `offset + size <= 16` and `p + offset` is aligned to `size`.
        unsafe {
            let at = p.add(offset);
            match size {
                8 => at.cast::<u64>().write(x),
                4 => at.cast::<u32>().write(x as u32),
                2 => at.cast::<u16>().write(x as u16),
                _ => at.write(x as u8),
            }
        }
        offset += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase: the pieces cover exactly the 16 bytes, load and store round-trip, and
    /// nothing outside them is touched.
    #[test]
    fn every_phase_moves_exactly_its_16_bytes() {
        #[repr(C, align(16))]
        struct Buf([u8; 48]);
        for phase in 0..16 {
            let mut buf = Buf(core::array::from_fn(|i| i as u8 ^ 0xa5));
            let expected = u128::from_le_bytes(buf.0[phase..phase + 16].try_into().unwrap());
            // SAFETY: `phase + 16 <= 48`.
            let v = unsafe { load(buf.0.as_ptr().add(phase)) };
            assert_eq!(v.bits(), expected, "load at phase {phase}");
            let new = Vector::from_bits(0x0f1e_2d3c_4b5a_6978_8796_a5b4_c3d2_e1f0 ^ phase as u128);
            let before = buf.0;
            // SAFETY: as above.
            unsafe { store(buf.0.as_mut_ptr().add(phase), new) };
            for (i, (&now, &was)) in buf.0.iter().zip(&before).enumerate() {
                let want = if (phase..phase + 16).contains(&i) {
                    new.bits().to_le_bytes()[i - phase]
                } else {
                    was
                };
                assert_eq!(now, want, "byte {i} after a store at phase {phase}");
            }
        }
    }
}
