// A name listed twice.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}

#[kernel(dtype = [bf16, f32, bf16])]
pub unsafe fn copy_elems<W: Warp, T: Elem>(_w: W, _src: *const T::Bits) {}

fn main() {}
