//! The tensors of an input file: one tensor of raw little-endian elements, or every float tensor
//! of a `.safetensors` file.
//!
//! | safetensors dtype | zipcoll dtype | CLI name  |
//! |-------------------|---------------|-----------|
//! | `BF16`            | `Bf16`        | `bf16`    |
//! | `F16`             | `F16`         | `f16`     |
//! | `F32`             | `F32`         | `f32`     |
//! | `F8_E4M3`         | `F8E4M3`      | `f8e4m3`  |
//! | `F8_E5M2`         | `F8E5M2`      | `f8e5m2`  |
//!
//! Tensors of other dtypes are skipped, each with a note.

use crate::common::Fail;
use safetensors::{Dtype, SafeTensors};
use std::ops::Range;
use std::path::Path;
use zipcoll::DType;

/// The dtype called `name` on the command line ([`DType::name`]).
pub fn parse_dtype(name: &str) -> Result<DType, String> {
    DType::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        format!("unknown dtype {name:?} (expected one of {})", names.join(", "))
    })
}

/// One tensor: its bytes are `range` of [`Input::bytes`].
pub struct Tensor {
    /// The safetensors name, or `<raw>` for a raw file.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Where its little-endian elements are in the file.
    pub range: Range<usize>,
}

/// A file's bytes and the tensors in it.
pub struct Input {
    /// The whole file.
    pub bytes: Vec<u8>,
    /// The tensors to inspect, in the file's order.
    pub tensors: Vec<Tensor>,
    /// Tensors that were skipped, and why.
    pub skipped: Vec<String>,
    /// `raw` or `safetensors`.
    pub format: &'static str,
}

impl Input {
    /// The bytes of `t`.
    pub fn data(&self, t: &Tensor) -> &[u8] {
        &self.bytes[t.range.clone()]
    }
}

/// The zipcoll dtype of a safetensors dtype, if zipcoll codes it.
fn from_safetensors(dtype: Dtype) -> Option<DType> {
    match dtype {
        Dtype::BF16 => Some(DType::Bf16),
        Dtype::F16 => Some(DType::F16),
        Dtype::F32 => Some(DType::F32),
        Dtype::F8_E4M3 => Some(DType::F8E4M3),
        Dtype::F8_E5M2 => Some(DType::F8E5M2),
        _ => None,
    }
}

/// Reads `path`: a `.safetensors` file (every tensor of a coded dtype; `dtype`, if given, keeps
/// only that dtype's) or raw little-endian elements of `dtype` (then required: a usage error
/// without it); a file that cannot be read or holds no whole elements is a runtime error.
pub fn read(path: &Path, dtype: Option<DType>) -> Result<Input, Fail> {
    let bytes = std::fs::read(path).map_err(|e| Fail::Runtime(format!("cannot read {}: {e}", path.display())))?;
    let is_safetensors = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    if is_safetensors {
        return read_safetensors(path, bytes, dtype);
    }
    let dtype = dtype.ok_or_else(|| {
        Fail::Usage(format!(
            "{} is raw tensor data (not a .safetensors file): --dtype is required",
            path.display()
        ))
    })?;
    let size = dtype.size_bytes();
    if bytes.len() % size != 0 {
        return Err(Fail::Runtime(format!(
            "{}: {} bytes is not a whole number of {} elements ({size} bytes each)",
            path.display(),
            bytes.len(),
            dtype.name()
        )));
    }
    let tensors = vec![Tensor {
        name: "<raw>".into(),
        dtype,
        range: 0..bytes.len(),
    }];
    Ok(Input {
        bytes,
        tensors,
        skipped: Vec::new(),
        format: "raw",
    })
}

/// The tensors of a safetensors file (see [`read`]).
fn read_safetensors(path: &Path, bytes: Vec<u8>, filter: Option<DType>) -> Result<Input, Fail> {
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| Fail::Runtime(format!("{} is not a valid safetensors file: {e}", path.display())))?;
    let base = bytes.as_ptr() as usize;
    let mut tensors = Vec::new();
    let mut skipped = Vec::new();
    for (name, view) in st.iter() {
        let data = view.data();
        // `data` is a slice of `bytes`: its offset is the pointers' difference
        let start = data.as_ptr() as usize - base;
        match from_safetensors(view.dtype()) {
            None => skipped.push(format!(
                "{name}: dtype {} is not a float type zipcoll codes",
                view.dtype()
            )),
            Some(d) if filter.is_some_and(|f| f != d) => {
                skipped.push(format!("{name}: {} (not the --dtype given)", d.name()))
            }
            Some(dtype) => tensors.push(Tensor {
                name: name.to_owned(),
                dtype,
                range: start..start + data.len(),
            }),
        }
    }
    tensors.sort_by_key(|t| t.range.start);
    skipped.sort();
    Ok(Input {
        bytes,
        tensors,
        skipped,
        format: "safetensors",
    })
}
