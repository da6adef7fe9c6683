// A generic parameter bounded by `RedOp`, but no `op`.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}
trait RedOp {}

#[kernel(dtype = [f32])]
pub unsafe fn reduce_copy<W: Warp, T: Elem, O: RedOp>(_w: W, _src: *const T::Bits) {}

fn main() {}
