// A generic parameter bounded by `Elem`, but no `dtype`.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}

#[kernel(vendor = [nvptx])]
pub unsafe fn copy_elems<W: Warp, T: Elem>(_w: W, _src: *const T::Bits) {}

fn main() {}
