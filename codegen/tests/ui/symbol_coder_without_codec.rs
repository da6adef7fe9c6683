// A generic parameter bounded by `SymbolCoder`, but no `codec`.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}
trait Split: Elem {}
trait SymbolCoder {}

#[kernel(dtype = [f32])]
pub unsafe fn encode_frames<W: Warp, T: Split, C: SymbolCoder>(_w: W, _input: *const T::Bits) {}

fn main() {}
