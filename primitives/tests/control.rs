//! The `record_cause` kernel on the simulator: the first cause recorded in a control block
//! wins, whole, and later ones leave it as it is; several blocks racing to record leave exactly
//! one cause, not a mixture.

use std::sync::atomic::{AtomicU32, Ordering};
use zipcoll_primitives::conn::{self, Control, CONTROL_BYTES};
use zipcoll_primitives::kernels::record_cause;
use zipcoll_targets::sim::{launch, LaunchConfig};
use zipcoll_targets::{Grid, Lanes};

/// A cause whose every word says which `id` it came from.
fn cause(id: u32) -> [u32; Control::CAUSE_WORDS] {
    std::array::from_fn(|i| id * 100 + i as u32 + 1)
}

/// The block's words after each of `causes` was recorded by a launch of `blocks` blocks.
fn record_in_turn(causes: &[[u32; Control::CAUSE_WORDS]], blocks: u32) -> Vec<u32> {
    let mut block = vec![0u32; CONTROL_BYTES / 4];
    let p = block.as_mut_ptr() as usize;
    for c in causes {
        let q = c.as_ptr() as usize;
        // SAFETY: `block` is a zeroed control block and `c` holds `CAUSE_WORDS` words, both
        // alive for the launch; the kernel's writes are atomic.
        launch::<32>(LaunchConfig::new(blocks, 32), |w| unsafe {
            record_cause(w, p as *mut u32, q as *const u32)
        })
        .unwrap();
    }
    block
}

#[test]
fn the_first_cause_is_recorded_whole_and_later_ones_are_dropped() {
    let block = record_in_turn(&[cause(1), cause(2)], 1);
    assert_eq!(block[Control::ABORT], 0, "recording raises nothing");
    assert_eq!(block[Control::STATE], Control::WRITTEN);
    assert_eq!(&block[Control::RANK..Control::RANK + Control::CAUSE_WORDS], &cause(1));
    assert!(block[Control::RANK + Control::CAUSE_WORDS..].iter().all(|&w| w == 0));
}

#[test]
fn warps_racing_to_record_leave_one_cause_whole() {
    let causes: Vec<_> = (0..16).map(cause).collect();
    let mut block = vec![0u32; CONTROL_BYTES / 4];
    let (p, q) = (block.as_mut_ptr() as usize, causes.as_ptr() as usize);
    let won = AtomicU32::new(0);
    // every warp's lane 0 records its own cause at once
    launch::<32>(LaunchConfig::new(16, 32), |w| {
        if w.lane_id() == 0 {
            let mine = (q as *const [u32; Control::CAUSE_WORDS]).wrapping_add(w.block_idx() as usize);
            // SAFETY: as in `record_in_turn`; `mine` is one of `causes`.
            if unsafe { conn::record_cause(w, p as *mut u32, mine.cast()) } {
                won.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
    .unwrap();
    assert_eq!(won.into_inner(), 1, "exactly one warp recorded");
    assert_eq!(block[Control::STATE], Control::WRITTEN);
    let recorded = &block[Control::RANK..][..Control::CAUSE_WORDS];
    assert!(
        causes.iter().any(|c| c == recorded),
        "a mixture of causes: {recorded:?}"
    );
}
