//! [`Thread`]: what one thread does on its own that a vendor may do in one instruction:
//! multiply-high, byte permute, and 16-byte vector loads and stores.
//!
//! | call                  | result                                             | nvptx            | others            |
//! |-----------------------|----------------------------------------------------|------------------|-------------------|
//! | `mul_hi(a, b)`        | the high 32 bits of `a * b` (u64 product)          | `mul.hi.u32`     | u64 multiply      |
//! | `byte_perm(a, b, s)`  | byte `k` = byte `s >> 4k & 7` of `b:a` (CUDA `__byte_perm`, no sign mode) | `prmt.b32` | shifts |
//! | `load_v4(p)`          | the 16 bytes at `p` as four little-endian u32      | one aligned read (`ld.v4.u32` when the value is used whole) | one aligned read |
//! | `store_v4(p, v)`      | writes them                                        | one aligned write (`st.v4.u32`) | one aligned write |
//!
//! Every method has a portable default; a backend overrides those its hardware does better.

/// Sixteen bytes as four little-endian u32 words, 16-byte aligned: one vector access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct V4(pub [u32; 4]);

/// Single-thread operations (see the module table).
pub trait Thread: Copy {
    /// The high 32 bits of the 64-bit product `a * b`.
    #[inline(always)]
    fn mul_hi(self, a: u32, b: u32) -> u32 {
        ((a as u64 * b as u64) >> 32) as u32
    }
    /// Byte `k` (0..4) of the result is byte `(sel >> 4k) & 7` of the 8 bytes `b:a` (`a` is bytes
    /// 0..4): CUDA's `__byte_perm` without its sign-replicate mode.
    #[inline(always)]
    fn byte_perm(self, a: u32, b: u32, sel: u32) -> u32 {
        let both = (b as u64) << 32 | a as u64;
        let mut r = 0u32;
        let mut k = 0;
        while k < 4 {
            let pick = (sel >> (4 * k)) & 7;
            r |= (((both >> (8 * pick)) & 0xFF) as u32) << (8 * k);
            k += 1;
        }
        r
    }
    /// The 16 bytes at `p`.
    ///
    /// # Safety
    /// `p` is valid for a 16-byte read and 16-byte aligned; nobody writes those bytes meanwhile.
    #[inline(always)]
    unsafe fn load_v4(self, p: *const V4) -> V4 {
        // SAFETY: the caller's contract.
        unsafe { p.read() }
    }
    /// Writes `v` to the 16 bytes at `p`.
    ///
    /// # Safety
    /// `p` is valid for a 16-byte write and 16-byte aligned; nobody else accesses those bytes
    /// meanwhile.
    #[inline(always)]
    unsafe fn store_v4(self, p: *mut V4, v: V4) {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) }
    }
}

#[cfg(test)]
mod tests {
    use super::Thread;

    /// The portable defaults (what the simulator and AMD run).
    #[derive(Clone, Copy)]
    struct Portable;
    impl Thread for Portable {}

    #[test]
    fn portable_defaults_match_their_definitions() {
        let t = Portable;
        assert_eq!(t.mul_hi(0xFFFF_FFFF, 0xFFFF_FFFF), 0xFFFF_FFFE);
        assert_eq!(t.mul_hi(1 << 31, 4), 2);
        // CUDA's __byte_perm examples: identity, swap of the words' bytes, a reversal
        let (a, b) = (0x4433_2211, 0x8877_6655);
        assert_eq!(t.byte_perm(a, b, 0x3210), a);
        assert_eq!(t.byte_perm(a, b, 0x7654), b);
        assert_eq!(t.byte_perm(a, b, 0x0123), 0x1122_3344);
        assert_eq!(t.byte_perm(a, b, 0x5140), 0x6622_5511);
    }
}
