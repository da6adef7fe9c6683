// A kernel without the warp parameter.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>() {}

fn main() {}
