//! The kernel ABI on NVIDIA: entry points are `extern "gpu-kernel"` (`.entry` in PTX) and take
//! their parameters as written; a panic traps, which the host sees as a launch failure.

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}
