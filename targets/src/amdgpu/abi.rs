//! The kernel ABI on AMD: entry points are `extern "gpu-kernel"`, and take two leading `u32`
//! parameters, `block_dim` and `grid_dim`, before their own (rustc cannot read the dispatch
//! packet yet, so the host passes the geometry it launched with). A panic traps (`s_trap`),
//! which the host sees as a queue error.

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::intrinsics::abort()
}
