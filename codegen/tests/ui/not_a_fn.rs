// The attribute on something other than a fn.
use zipcoll_codegen::kernel;

#[kernel()]
pub struct Signal;

fn main() {}
