// A vendor the attribute does not know.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel(vendor = [nvptx, cuda])]
pub unsafe fn signal<W: Warp>(_w: W, _flag: *mut u32) {}

fn main() {}
