// A misspelled argument.
use zipcoll_codegen::kernel;

trait Warp {}
trait Elem {
    type Bits;
}

#[kernel(dtypes = [bf16])]
pub unsafe fn copy_elems<W: Warp, T: Elem>(_w: W, _src: *const T::Bits) {}

fn main() {}
