//! A short smoke run of every fuzz target without cargo-fuzz or a nightly compiler, part of the
//! test command (`scripts/test.sh`): each target (`zipcoll_fuzz::targets::TARGETS`) runs on
//! its checked-in corpus (`fuzz/corpus/<target>`), on seeded random inputs and on seeded
//! mutations of the corpus (bit flips, byte changes, insertions, deletions, truncations,
//! splices, resealed frame headers), the kinds of change libFuzzer makes, though not guided
//! by coverage. A panic fails the test and prints the target and the input in hex.
//!
//! `ZIPCOLL_FUZZ_SMOKE_RUNS` sets the random and the mutated inputs per target (default
//! 2000 each). Long coverage-guided runs: `scripts/fuzz-campaign.sh` (cargo-fuzz).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use zipcoll_device::frame::{checksum, HEADER_BYTES};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The checked-in corpus of `target` (sorted by name, so runs are reproducible).
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// Values that parsers treat specially: zeros, ones, all bits set, powers of two, lengths.
const INTERESTING: [u32; 10] = [0, 1, 2, 4, 32, 127, 255, 0xFFFF, 0x8000_0000, u32::MAX];

/// `input` changed one to four times, as libFuzzer's mutators do; `other` is another corpus
/// input to splice in.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(9) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => v.insert(at, rng.next() as u8),
            3 if at < v.len() => {
                v.remove(at);
            }
            4 => v.truncate(at),
            5 => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                let chunk = v[at.min(end)..end].to_vec();
                let to = rng.below(v.len() + 1);
                v.splice(to..to, chunk);
            }
            6 => {
                let from = rng.below(other.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            7 if at + 4 <= v.len() => {
                let x = INTERESTING[rng.below(INTERESTING.len())];
                v[at..at + 4].copy_from_slice(&x.to_le_bytes());
            }
            _ => {
                // a frame header at offset 0 or 2 (the decode targets' capacity prefix) resealed,
                // so the change reaches past the header checksum
                let o = 2 * rng.below(2);
                if v.len() >= o + HEADER_BYTES {
                    let c = checksum(&v[o..o + 28]);
                    v[o + 28..o + 32].copy_from_slice(&c.to_le_bytes());
                }
            }
        }
    }
    v
}

/// Runs `f` on `input`; a panic fails the test, naming the target and the input.
fn run(target: &str, f: fn(&[u8]), input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| f(input))).is_err() {
        let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
        panic!("fuzz target {target} panicked on {} bytes: {hex}", input.len());
    }
}

/// The corpus, then `runs` random inputs and `runs` mutations of the corpus.
fn smoke(target: &str) {
    let (_, f) = *zipcoll_fuzz::targets::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a target of that name");
    let runs: usize = std::env::var("ZIPCOLL_FUZZ_SMOKE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seeds = corpus(target);
    assert!(!seeds.is_empty(), "{target}: no corpus");
    seeds.iter().for_each(|s| run(target, f, s));
    let mut rng = Rng(target
        .bytes()
        .fold(0, |h: u64, b| h.wrapping_mul(31).wrapping_add(b as u64)));
    for _ in 0..runs {
        let len = rng.below(300);
        let input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        run(target, f, &input);
        let (a, b) = (rng.below(seeds.len()), rng.below(seeds.len()));
        run(target, f, &mutate(&mut rng, &seeds[a], &seeds[b]));
    }
}

/// One test per target (the warp targets share one simulated warp, the others run alongside).
macro_rules! smoke_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                smoke(stringify!($name));
            }
        )*
        /// Every target of the table has its test above.
        #[test]
        fn every_target_has_a_smoke_test() {
            let tested = [$(stringify!($name)),*];
            for (name, _) in zipcoll_fuzz::targets::TARGETS {
                assert!(tested.contains(&name), "{name} has no smoke test");
            }
        }
    };
}

smoke_tests!(
    frame_header,
    decode_bf16,
    decode_f16,
    decode_f32,
    decode_f8e4m3,
    decode_f8e5m2,
    decode_i8,
    decode_u8,
    decode_i32,
    decode_u32,
    roundtrip_raw,
    roundtrip_fixed_len,
    roundtrip_exp_window,
    roundtrip_exp_ans,
    roundtrip_huffman,
    decode_block,
    roundtrip_block,
    bootstrap_message,
    net_wire,
);
