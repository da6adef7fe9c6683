//! Collectives as schedules of [`crate::prims`] steps, each written once and generic over the
//! dtype, the operator and the compression, and each with a scalar reference that follows the
//! same reduction order (so tests compare bit for bit).
//!
//! | collective                          | schedule per loop of `nranks` chunks                       | reference                              |
//! |-------------------------------------|------------------------------------------------------------|----------------------------------------|
//! | [`ring_all_reduce`]                 | send, `k-2` x recv_reduce_send, recv_reduce_copy_send, `k-2` x recv_copy_send, recv | [`ring_all_reduce_reference`] |

mod ring_all_reduce;

pub use ring_all_reduce::{ring_all_reduce, ring_all_reduce_reference, RingChunks};
