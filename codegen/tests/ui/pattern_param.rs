// A destructuring parameter.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>(_w: W, (_flag, _value): (*mut u32, u32)) {}

fn main() {}
