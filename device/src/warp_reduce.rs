//! Warp-level reductions of registers (see the helper tasks).
