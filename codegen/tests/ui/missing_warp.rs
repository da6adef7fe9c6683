// No generic parameter is bounded by `Warp`.
use zipcoll_codegen::kernel;

trait Elem {
    type Bits;
}

#[kernel(dtype = [f32])]
pub unsafe fn copy_elems<T: Elem>(_src: *const T::Bits) {}

fn main() {}
