// A kernel fn whose manifest type would shadow the prelude.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}

#[kernel(dtype = [f32])]
pub unsafe fn copy<W: Warp, T: Elem>(_w: W, _src: *const T::Bits) {}

fn main() {}
