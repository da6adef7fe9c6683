// A kernel with a return value.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>(_w: W) -> u32 {
    0
}

fn main() {}
