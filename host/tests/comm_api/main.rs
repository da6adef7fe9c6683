//! The communicator's API beyond the collectives' data paths, on the simulator (ranks as
//! threads), one module per part; a single test binary.
//!
//! | module | what |
//! |--------|------|
//! | `split` | `Communicator::split` (NCCL's `ncclCommSplit`) |
//! | `launch_env` | a process's place from torchrun's, SLURM's, Open MPI's and PMI's variables |
//! | `lifecycle` | `finalize`, `async_error` |
//! | `all_to_allv` | uneven all_to_all |
//! | `rooted` | reduce and broadcast with a buffer only where a rank uses one |
//! | `caller_memory` | `DeviceSlice`: views of the caller's memory in every call |
//! | `group` | groups that hold collectives besides sends and receives |
//! | `channel_teams` | RAW calls on block teams, others on one warp, both warp widths |
//! | `streams` | a caller's stream (`Options::stream`) refused on the simulator |
//! | `pre_mul_sum` | `Reduction::PreMulSum` (NCCL's PreMulSum) in every reducing collective |

mod all_to_allv;
mod caller_memory;
mod channel_teams;
mod group;
mod launch_env;
mod lifecycle;
mod pre_mul_sum;
mod rooted;
mod split;
mod streams;

/// Little-endian f32 bytes as values.
fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Values as little-endian bytes.
fn f32_bytes<'a>(v: impl IntoIterator<Item = &'a f32>) -> Vec<u8> {
    v.into_iter().flat_map(|x| x.to_le_bytes()).collect()
}
