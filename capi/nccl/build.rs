//! Gives the library NCCL's soname, so a program linked against it asks for `libnccl.so.2`
//! and finds zipcoll or NCCL, whichever comes first on its library path.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnccl.so.2");
}
