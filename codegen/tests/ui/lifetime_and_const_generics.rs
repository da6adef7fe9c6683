// Generic parameters an entry point cannot choose.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<'a, W: Warp, const N: usize>(_w: W, _flags: &'a [u32; N]) {}

fn main() {}
