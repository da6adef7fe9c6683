//! Auto's samples on a GPU, taken without stopping the stream. A sampled decision reads a few
//! ranges of the call's input (at most 64 KiB, [`sampled_words`]), which exist only once the
//! calls enqueued before it have run: waiting for them on every call kept the host from
//! enqueueing the next call while this one ran (2026-12-05, one H100, 2 ranks over NET: Auto
//! cost 1.02 ms a call over RAW where a sample decided RAW, 0.04 ms where the size alone did).
//! So a call decides from the latest sample of its shape that has arrived, and copies its own
//! ranges for the calls after it:
//!
//! | a call of a shape (`dtype`, `count`)                     | decides from                   | waits for the calls before it |
//! |-----------------------------------------------------------|--------------------------------|-------------------------------|
//! | the first (or the first since its shape was evicted), or one that asks for a fresh sample (`auto_plan`) | its own sample | yes |
//! | a later one                                               | the latest sample that has arrived | no                        |
//!
//! A shape has one copy in flight at most (a call whose shape's copy has not arrived starts
//! none); [`SHAPES`] shapes are kept, the least recently used evicted. The choice only picks
//! how frames are coded (a frame that does not compress is sent RAW, and every result is
//! bit-identical), so a sample one call old costs at most speed, never data.

use crate::dispatch::dispatch_dtype;
use crate::error::Result;
use zipcoll_device::arbitrate::{sampled_elems, sampled_words, Sample};
use zipcoll_device::dtype::{DType, Split};
use zipcoll_targets::Word;

/// Shapes whose latest sample is kept.
pub(crate) const SHAPES: usize = 16;

/// Copies of a call's sampled ranges into host memory, ordered after the calls before it.
pub(crate) trait SampleCopy {
    /// Enqueues copies of the byte ranges `ranges` (`(offset, len)`, ascending) of the input at
    /// device address `src`, one after the other into this copier's buffer (their total is at
    /// most [`zipcoll_device::arbitrate::SAMPLE_MAX_BYTES`]).
    fn start(&mut self, src: u64, ranges: &[(usize, usize)]) -> Result<()>;
    /// Whether the copies last started have arrived (without waiting).
    fn arrived(&self) -> Result<bool>;
    /// Waits until the copies last started have arrived.
    fn wait(&self) -> Result<()>;
    /// The first `len` bytes of the buffer, once the copies have arrived.
    fn bytes(&self, len: usize) -> &[u8];
}

/// The latest samples of the shapes seen, with a copier each (see the module docs).
pub(crate) struct Samples<C> {
    shapes: Vec<Shape<C>>,
    /// Counts lookups; a shape's `used` is the count at its last lookup.
    clock: u64,
}

struct Shape<C> {
    dtype: DType,
    n: usize,
    copy: C,
    /// Bytes of the copy in flight, if one is.
    in_flight: Option<usize>,
    latest: Option<Sample>,
    used: u64,
}

impl<C: SampleCopy> Samples<C> {
    pub fn new() -> Samples<C> {
        Samples {
            shapes: Vec::new(),
            clock: 0,
        }
    }

    /// The sample a call of `n` elements of `dtype` at device address `src` decides from (see
    /// the module docs), starting a copy of its ranges when its shape has none in flight;
    /// `fresh`: the call's own sample, waiting for it. `new_copy` makes a copier for a shape
    /// seen for the first time. Errors: a copier's (a copy that could not be enqueued or
    /// failed).
    pub fn sample(
        &mut self,
        dtype: DType,
        src: u64,
        n: usize,
        fresh: bool,
        new_copy: impl FnOnce() -> Result<C>,
    ) -> Result<Sample> {
        self.clock += 1;
        let i = match self.shapes.iter().position(|s| s.dtype == dtype && s.n == n) {
            Some(i) => i,
            None => {
                let shape = Shape {
                    dtype,
                    n,
                    copy: new_copy()?,
                    in_flight: None,
                    latest: None,
                    used: 0,
                };
                insert_evicting(&mut self.shapes, SHAPES, |s| s.used, shape)
            }
        };
        let shape = &mut self.shapes[i];
        shape.used = self.clock;
        if let Some(len) = shape.in_flight {
            if shape.copy.arrived()? {
                shape.arrive(len);
            }
        }
        let ranges = byte_ranges(dtype, n);
        let len = ranges.iter().map(|r| r.1).sum();
        if fresh || shape.latest.is_none() {
            // copied after any copy in flight (the same stream), so the buffer then holds this
            // call's ranges
            shape.copy.start(src, &ranges)?;
            shape.in_flight = Some(len);
            shape.copy.wait()?;
            shape.arrive(len);
        } else if shape.in_flight.is_none() {
            shape.copy.start(src, &ranges)?;
            shape.in_flight = Some(len);
        }
        Ok(shape.latest.clone().unwrap_or_default())
    }
}

impl<C: SampleCopy> Shape<C> {
    /// The copy in flight (`len` bytes) has arrived: its sample becomes the latest.
    fn arrive(&mut self, len: usize) {
        let bytes = self.copy.bytes(len);
        let n = self.n;
        self.latest = Some(dispatch_dtype!(self.dtype, |T| compact_sample::<T>(n, bytes)));
        self.in_flight = None;
    }
}

/// Puts `item` into `items`, which holds at most `capacity`: at the end, or in place of the
/// item whose `used` is least (the least recently used); returns its index. For the per-shape
/// state of Auto's samples and checks.
pub(crate) fn insert_evicting<T>(items: &mut Vec<T>, capacity: usize, used: impl Fn(&T) -> u64, item: T) -> usize {
    if items.len() < capacity {
        items.push(item);
        return items.len() - 1;
    }
    let lru = (0..items.len()).min_by_key(|&i| used(&items[i])).unwrap_or(0);
    items[lru] = item;
    lru
}

/// The byte ranges of a batch of `n` elements of `dtype` that [`Sample::of`] reads.
pub(crate) fn byte_ranges(dtype: DType, n: usize) -> Vec<(usize, usize)> {
    let size = dtype.size_bytes();
    dispatch_dtype!(dtype, |T| sampled_words::<T>(n)
        .map(|(start, len)| {
            let elems = sampled_elems::<T>(n, start, len);
            (elems.start * size, elems.len() * size)
        })
        .collect())
}

/// [`Sample::of_compact`] over the bytes of the sampled ranges.
fn compact_sample<T: Split>(n: usize, bytes: &[u8]) -> Sample {
    Sample::of_compact::<T>(n, &elems::<T>(bytes))
}

/// The elements of `T` in `bytes` (little-endian).
fn elems<T: Split>(bytes: &[u8]) -> Vec<T::Bits> {
    let size = T::DTYPE.size_bytes();
    bytes
        .chunks_exact(size)
        .map(|e| {
            let mut word = [0u8; 8];
            word[..size].copy_from_slice(e);
            T::Bits::from_bits64(u64::from_le_bytes(word))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;
    use zipcoll_device::arbitrate::sample::words_of;
    use zipcoll_device::arbitrate::SAMPLE_MAX_BYTES;
    use zipcoll_device::dtype::Bf16;

    /// A copier over host memory whose copies arrive when the test says so.
    struct FakeCopy {
        memory: Rc<Vec<u8>>,
        staged: Vec<u8>,
        arrived: Rc<Cell<bool>>,
        starts: Rc<Cell<usize>>,
    }

    impl SampleCopy for FakeCopy {
        fn start(&mut self, src: u64, ranges: &[(usize, usize)]) -> Result<()> {
            self.staged = ranges
                .iter()
                .flat_map(|&(at, len)| self.memory[src as usize + at..][..len].iter().copied())
                .collect();
            self.arrived.set(false);
            self.starts.set(self.starts.get() + 1);
            Ok(())
        }
        fn arrived(&self) -> Result<bool> {
            Ok(self.arrived.get())
        }
        fn wait(&self) -> Result<()> {
            self.arrived.set(true);
            Ok(())
        }
        fn bytes(&self, len: usize) -> &[u8] {
            assert!(self.arrived.get(), "read before the copy arrived");
            &self.staged[..len]
        }
    }

    /// Host memory to sample, and what its copiers share.
    struct Fake {
        memory: Rc<Vec<u8>>,
        arrived: Rc<Cell<bool>>,
        starts: Rc<Cell<usize>>,
    }

    impl Fake {
        fn new(memory: Vec<u8>) -> Fake {
            Fake {
                memory: Rc::new(memory),
                arrived: Rc::new(Cell::new(false)),
                starts: Rc::new(Cell::new(0)),
            }
        }

        fn copier(&self) -> Result<FakeCopy> {
            Ok(FakeCopy {
                memory: Rc::clone(&self.memory),
                staged: Vec::new(),
                arrived: Rc::clone(&self.arrived),
                starts: Rc::clone(&self.starts),
            })
        }
    }

    /// bf16 bits whose exponents are `exp` (a batch of one symbol) and whose mantissas vary.
    fn batch(n: usize, exp: u16) -> Vec<u8> {
        (0..n)
            .flat_map(|i| ((exp << 7) | (i as u16 & 0x7F)).to_le_bytes())
            .collect()
    }

    #[test]
    fn the_compact_sample_is_the_whole_batchs() {
        for dtype in DType::ALL {
            for n in [
                0,
                1,
                5,
                100,
                16 * 1024 + 1,
                32 * 1024,
                64 * 1024 + 3,
                1 << 20,
                (1 << 20) + 7,
            ] {
                let size = dtype.size_bytes();
                let data: Vec<u8> = (0..size * n)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
                    .collect();
                let compact: Vec<u8> = byte_ranges(dtype, n)
                    .into_iter()
                    .flat_map(|(at, len)| data[at..at + len].iter().copied())
                    .collect();
                assert!(compact.len() <= SAMPLE_MAX_BYTES, "{dtype:?} n = {n}");
                let (of_compact, of_all) = dispatch_dtype!(dtype, |T| (
                    compact_sample::<T>(n, &compact),
                    Sample::of::<T>(&elems::<T>(&data))
                ));
                assert_eq!(of_compact, of_all, "{dtype:?} n = {n}");
                assert!(n == 0 || of_all.symbols > 0);
            }
        }
    }

    #[test]
    fn later_calls_decide_from_the_latest_sample_that_arrived_and_never_wait() {
        let n = 1 << 20;
        // two inputs of one shape, at 0 and at 2n: exponents 120 and 127
        let fake = Fake::new([batch(n, 120), batch(n, 127)].concat());
        let (a, b) = (0u64, 2 * n as u64);
        let (arrived, starts) = (&fake.arrived, &fake.starts);
        let copier = || fake.copier();
        let mut samples = Samples::new();
        let of = |sample: &Sample| sample.max_symbol();
        // the first call of the shape waits for its own sample
        let first = samples.sample(DType::Bf16, a, n, false, copier).unwrap();
        assert_eq!((of(&first), starts.get()), (120, 1));
        // the next starts its own copy and decides from the first's
        let second = samples.sample(DType::Bf16, b, n, false, copier).unwrap();
        assert_eq!((of(&second), starts.get(), arrived.get()), (120, 2, false));
        // its copy has not arrived: no new one starts, the first's sample still decides
        let third = samples.sample(DType::Bf16, a, n, false, copier).unwrap();
        assert_eq!((of(&third), starts.get()), (120, 2));
        // once it arrives, the next call decides from it and copies its own
        arrived.set(true);
        let fourth = samples.sample(DType::Bf16, a, n, false, copier).unwrap();
        assert_eq!((of(&fourth), starts.get(), arrived.get()), (127, 3, false));
        // a fresh sample is the call's own, waited for
        let fresh = samples.sample(DType::Bf16, b, n, true, copier).unwrap();
        assert_eq!((of(&fresh), starts.get(), arrived.get()), (127, 4, true));
        let fresh = samples.sample(DType::Bf16, a, n, true, copier).unwrap();
        assert_eq!((of(&fresh), starts.get()), (120, 5));
        // another shape (count) has its own: it waits for its first sample
        let other = samples.sample(DType::Bf16, b, n - 1, false, copier).unwrap();
        assert_eq!(
            (of(&other), starts.get(), other.batch_words),
            (127, 6, words_of::<Bf16>(n - 1) as u64)
        );
    }

    #[test]
    fn at_most_shapes_are_kept_the_least_recently_used_evicted() {
        let fake = Fake::new(batch(SHAPES + 2, 100));
        let (arrived, starts) = (&fake.arrived, &fake.starts);
        let copier = || fake.copier();
        let mut samples = Samples::new();
        for n in 1..=SHAPES {
            samples.sample(DType::Bf16, 0, n, false, copier).unwrap();
        }
        assert_eq!(starts.get(), SHAPES);
        // shape 1 used again, then a new shape evicts shape 2, the least recently used
        samples.sample(DType::Bf16, 0, 1, false, copier).unwrap();
        samples.sample(DType::Bf16, 0, SHAPES + 1, false, copier).unwrap();
        assert_eq!(samples.shapes.len(), SHAPES);
        assert!(samples.shapes.iter().all(|s| s.n != 2));
        assert!(samples.shapes.iter().any(|s| s.n == 1));
        // shape 2 is new again: its call waits for its own sample
        let before = starts.get();
        arrived.set(false);
        samples.sample(DType::Bf16, 0, 2, false, copier).unwrap();
        assert_eq!((starts.get(), arrived.get()), (before + 1, true));
    }
}
