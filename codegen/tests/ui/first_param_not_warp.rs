// The warp is not the first parameter.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>(_flag: *mut u32, _w: W) {}

fn main() {}
