// `op` given, but no generic parameter is bounded by `RedOp`.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}

#[kernel(dtype = [f32], op = [sum])]
pub unsafe fn copy_elems<W: Warp, T: Elem>(_w: W, _src: *const T::Bits) {}

fn main() {}
