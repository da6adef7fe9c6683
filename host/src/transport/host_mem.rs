//! Host memory that simulated kernels (and the NET proxies) read and write through raw
//! pointers: FIFOs, staging buffers, status records and abort words of the simulator backend.
//!
//! | type          | holds                                              | used by                          |
//! |---------------|----------------------------------------------------|----------------------------------|
//! | [`HostBytes`] | zeroed 16-byte-aligned bytes                       | slots, staging buffers, buffers  |
//! | [`HostFifo`]  | `NSLOTS` slots + `head` + `tail`                   | one connection's FIFO            |
//! | [`HostWords`] | zeroed `u32` atomics                               | status records, abort words      |
//!
//! The memory is only ever touched through the pointers these types hand out, by the FIFO
//! protocol (`zipcoll_primitives::conn`): that is what makes sharing it between threads sound.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use zipcoll_primitives::conn::{ConnDesc, NSLOTS};

/// Zeroed, 16-byte-aligned bytes written through raw pointers.
pub struct HostBytes {
    words: Box<[UnsafeCell<u128>]>,
    len: usize,
}

// SAFETY: the bytes are accessed only through `ptr()`, by kernels and proxies that follow the
// FIFO protocol (no two threads touch the same bytes without an acquire/release pair between).
unsafe impl Sync for HostBytes {}
// SAFETY: as above; the type owns plain memory.
unsafe impl Send for HostBytes {}

impl HostBytes {
    /// `len` zeroed bytes.
    pub fn zeroed(len: usize) -> HostBytes {
        HostBytes {
            words: (0..len.div_ceil(16)).map(|_| UnsafeCell::new(0)).collect(),
            len,
        }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte, for kernels to read and write through.
    pub fn ptr(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.words.as_ptr()).cast()
    }

    /// A copy of the bytes.
    ///
    /// # Safety
    /// Nothing writes the bytes meanwhile (no kernel or proxy that uses them is running).
    pub unsafe fn read(&self) -> Vec<u8> {
        // SAFETY: `len` bytes from `ptr()` lie in `words`; no writer (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }.to_vec()
    }

    /// Overwrites the first `data.len()` bytes (at most `len`).
    ///
    /// # Safety
    /// Nothing reads or writes the bytes meanwhile.
    pub unsafe fn write(&self, data: &[u8]) {
        let n = data.len().min(self.len);
        // SAFETY: `n <= len` bytes from `ptr()` lie in `words`; no other access (the caller's
        // contract).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr(), n) };
    }
}

/// One FIFO in host memory: `NSLOTS` slots of `slot_bytes` and the two counters.
pub struct HostFifo {
    slots: HostBytes,
    head: AtomicU64,
    tail: AtomicU64,
    slot_bytes: u64,
}

impl HostFifo {
    /// An empty FIFO (counters at 0) with slots of `slot_bytes` (a multiple of 16).
    pub fn new(slot_bytes: u64) -> HostFifo {
        HostFifo {
            slots: HostBytes::zeroed((NSLOTS * slot_bytes) as usize),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            slot_bytes,
        }
    }

    /// Its descriptor for kernels (and proxies).
    pub fn desc(&self) -> ConnDesc {
        ConnDesc {
            slots: self.slots.ptr(),
            head: self.head.as_ptr(),
            tail: self.tail.as_ptr(),
            slot_bytes: self.slot_bytes,
        }
    }

    /// Frames published and consumed so far: `(tail, head)`.
    pub fn counters(&self) -> (u64, u64) {
        (self.tail.load(Ordering::Acquire), self.head.load(Ordering::Acquire))
    }
}

/// Zeroed `u32` words shared with kernels: status records and abort words.
pub struct HostWords(Box<[AtomicU32]>);

impl HostWords {
    /// `n` zeroed words.
    pub fn zeroed(n: usize) -> HostWords {
        HostWords((0..n).map(|_| AtomicU32::new(0)).collect())
    }

    /// Word `i`'s address (`i < n`), for kernels.
    pub fn ptr(&self, i: usize) -> *mut u32 {
        self.0[i].as_ptr()
    }

    /// The words' current values.
    pub fn load(&self) -> Vec<u32> {
        self.0.iter().map(|w| w.load(Ordering::Acquire)).collect()
    }

    /// Word `i`.
    pub fn word(&self, i: usize) -> &AtomicU32 {
        &self.0[i]
    }
}
