// A kernel that needs shared memory, built for amdgpu only.
use zipcoll_codegen::kernel;

trait Warp {}
trait SharedMem {}

#[kernel(vendor = [amdgpu])]
pub unsafe fn block_sum<W: Warp + SharedMem>(_w: W, _out: *mut u32) {}

fn main() {}
