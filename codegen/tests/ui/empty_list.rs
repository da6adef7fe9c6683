// A list with nothing in it.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}
trait RedOp {}

#[kernel(dtype = [f32], op = [])]
pub unsafe fn reduce_copy<W: Warp, T: Elem, O: RedOp>(_w: W, _src: *const T::Bits) {}

fn main() {}
