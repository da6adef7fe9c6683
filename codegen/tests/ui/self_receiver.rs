// A method instead of a free function.
use zipcoll_codegen::kernel;

trait Warp {}

pub struct Launcher;

impl Launcher {
    #[kernel()]
    pub unsafe fn signal<W: Warp>(&self, _w: W, _flag: *mut u32) {}
}

fn main() {}
