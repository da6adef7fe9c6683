// An `impl Trait` parameter.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>(_w: W, _flag: impl Copy) {}

fn main() {}
