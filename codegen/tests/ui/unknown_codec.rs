// A codec the attribute does not know (RAW has no symbol coder, so it is not one either).
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}
trait Split: Elem {}
trait SymbolCoder {}

#[kernel(dtype = [bf16], codec = [huffman, zstd])]
pub unsafe fn encode_frames<W: Warp, T: Split, C: SymbolCoder>(_w: W, _input: *const T::Bits) {}

fn main() {}
