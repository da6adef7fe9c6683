// `codec` given, but no generic parameter is bounded by `SymbolCoder`.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}
trait Split: Elem {}

#[kernel(dtype = [bf16], codec = [fixedlen, huffman])]
pub unsafe fn encode_frames<W: Warp, T: Split>(_w: W, _input: *const T::Bits) {}

fn main() {}
