//! no_std building blocks of zipcoll's device code, generic over the warp abstraction
//! ([`zipcoll_targets::Warp`]) so the same source runs on GPUs and on the CPU simulator.
//!
//! | module     | what it holds                                                 |
//! |------------|---------------------------------------------------------------|
//! | [`dtype`]  | element types, exponent split/join, f32 conversions          |
//! | [`reduce`] | reduction operators with NCCL's semantics                     |
//! | [`warp_reduce`] | warp-level reductions of registers                       |
#![no_std]

pub mod dtype;
pub mod reduce;
pub mod warp_reduce;
