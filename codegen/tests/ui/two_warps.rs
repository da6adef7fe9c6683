// Two generic parameters bounded by `Warp`.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp, V: Warp>(_w: W, _v: V) {}

fn main() {}
