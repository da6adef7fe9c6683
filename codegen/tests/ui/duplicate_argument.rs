// An argument given twice.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel(vendor = [nvptx], vendor = [amdgpu])]
pub unsafe fn signal<W: Warp>(_w: W, _flag: *mut u32) {}

fn main() {}
