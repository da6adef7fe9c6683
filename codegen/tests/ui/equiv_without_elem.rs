// `equiv = bits` on a kernel without a dtype dimension.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel(equiv = bits)]
pub unsafe fn signal<W: Warp>(_w: W, _flag: *mut u32) {}

fn main() {}
