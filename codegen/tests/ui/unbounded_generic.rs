// A generic parameter with none of the three roles.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp, X>(_w: W, _x: *mut X) {}

fn main() {}
