// A parameter named like the amdgpu entry point's launch geometry.
use zipcoll_codegen::kernel;

trait Warp {}

#[kernel()]
pub unsafe fn signal<W: Warp>(_w: W, zc_block_dim: u32) {
    let _ = zc_block_dim;
}

fn main() {}
