//! Kernel lookup by marker type, dtype, op and codec: the manifest that `#[kernel]` generates
//! names each entry point's symbol, and a [`Registry`] resolves it once per loaded module.
//!
//! ```text
//! registry.function::<ReduceCopy>(Some(DType::Bf16), Some(ReduceOp::Sum))
//!   -> ReduceCopy::find(Some(Bf16), Some(Sum), Vendor::Nvptx)   (the typed manifest)
//!   -> KernelDesc { symbol, .. }                                  (never a formatted name)
//!   -> module.load_function(symbol), cached by symbol
//! registry.function_codec::<EncodeFrames>(Some(DType::Bf16), None, Some(CodecId::Huffman))
//!   -> EncodeFrames::find_codec(Some(Bf16), None, Some(Huffman), Vendor::Nvptx) -> ...
//! ```
//!
//! | outcome                                 | result                           |
//! |-----------------------------------------|----------------------------------|
//! | the manifest has no such variant        | [`Error::KernelNotBuilt`]        |
//! | the module lacks the manifest's symbol  | [`Error::KernelNotBuilt`]        |
//! | the driver fails to look it up          | that backend's error             |
//! | found                                   | the function (cached)            |

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::manifest::{Kernel, KernelDesc, Vendor};

/// A loaded GPU module of one vendor that resolves entry points by symbol.
pub trait KernelModule {
    /// A resolved entry point.
    type Function: Clone;
    /// The vendor whose entry points the module holds.
    const VENDOR: Vendor;
    /// The entry point `symbol`, or `None` when the module does not export it.
    fn load_function(&self, symbol: &'static str) -> Result<Option<Self::Function>>;
}

/// The manifest entry of kernel `K` for (`dtype`, `op`) on `vendor` (a kernel without a codec
/// dimension).
pub fn kernel_desc<K: Kernel>(
    dtype: Option<DType>,
    op: Option<ReduceOp>,
    vendor: Vendor,
) -> Result<&'static KernelDesc> {
    kernel_desc_codec::<K>(dtype, op, None, vendor)
}

/// The manifest entry of kernel `K` for (`dtype`, `op`, `codec`) on `vendor`.
pub fn kernel_desc_codec<K: Kernel>(
    dtype: Option<DType>,
    op: Option<ReduceOp>,
    codec: Option<CodecId>,
    vendor: Vendor,
) -> Result<&'static KernelDesc> {
    K::find_codec(dtype, op, codec, vendor).ok_or(Error::KernelNotBuilt {
        kernel: K::NAME,
        dtype,
        op,
        codec,
        vendor,
    })
}

/// One loaded module and the entry points resolved from it so far.
pub struct Registry<M: KernelModule> {
    module: M,
    functions: Mutex<HashMap<&'static str, M::Function>>,
}

impl<M: KernelModule> std::fmt::Debug for Registry<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let functions = self.functions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut resolved: Vec<&str> = functions.keys().copied().collect();
        resolved.sort_unstable();
        f.debug_struct("Registry")
            .field("vendor", &M::VENDOR)
            .field("resolved", &resolved)
            .finish()
    }
}

impl<M: KernelModule> Registry<M> {
    /// A registry over `module`, with nothing resolved yet.
    pub fn new(module: M) -> Self {
        Self {
            module,
            functions: Mutex::new(HashMap::new()),
        }
    }

    /// The loaded module.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The entry point of kernel `K` for (`dtype`, `op`) (a kernel without a codec dimension):
    /// the manifest's symbol, resolved in the module on first use and cached.
    pub fn function<K: Kernel>(&self, dtype: Option<DType>, op: Option<ReduceOp>) -> Result<M::Function> {
        self.function_codec::<K>(dtype, op, None)
    }

    /// The entry point of kernel `K` for (`dtype`, `op`, `codec`): the manifest's symbol,
    /// resolved in the module on first use and cached.
    pub fn function_codec<K: Kernel>(
        &self,
        dtype: Option<DType>,
        op: Option<ReduceOp>,
        codec: Option<CodecId>,
    ) -> Result<M::Function> {
        let desc = kernel_desc_codec::<K>(dtype, op, codec, M::VENDOR)?;
        // The map stays consistent even if a holder panicked: entries are inserted whole.
        let mut functions = self.functions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = functions.get(desc.symbol) {
            return Ok(f.clone());
        }
        let f = self.module.load_function(desc.symbol)?.ok_or(Error::KernelNotBuilt {
            kernel: K::NAME,
            dtype,
            op,
            codec,
            vendor: M::VENDOR,
        })?;
        functions.insert(desc.symbol, f.clone());
        Ok(f)
    }
}
