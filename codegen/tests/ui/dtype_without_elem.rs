// `dtype` given, but no generic parameter is bounded by `Elem`.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel(dtype = [f32])]
pub unsafe fn signal<W: Warp>(_w: W, _flag: *mut u32) {}

fn main() {}
