//! Host values combined over every rank of a communicator, for the command-line tools'
//! reports (`zipcoll-comm bench` and `zipcoll-perf` time a run on its slowest rank and sum
//! their checks' counts over ranks):
//!
//! ```ignore
//! let slowest = across_ranks(&comm, &[seconds], ReduceOp::Max)?[0];
//! ```

use zipcoll::comm::{Communicator, Compression, Data, Options};
use zipcoll::{DType, Error, ReduceOp};

/// Each of `values` combined by `op` over every rank (every rank calls it with as many), by an
/// f32 all_reduce of the communicator itself with compression off: f32's precision (integer
/// counts exact below 2^24).
pub fn across_ranks(comm: &Communicator, values: &[f64], op: ReduceOp) -> Result<Vec<f64>, Error> {
    let bytes: Vec<u8> = values.iter().flat_map(|&t| (t as f32).to_le_bytes()).collect();
    let mut buf = comm.alloc(bytes.len().max(1))?;
    buf.copy_from_host(&bytes)?;
    let off = Options {
        compression: Some(Compression::Off),
        ..Options::default()
    };
    comm.all_reduce(Data::InPlace(&mut buf), values.len(), DType::F32, op, off)?;
    comm.synchronize()?;
    Ok(buf
        .to_host()?
        .chunks_exact(4)
        .take(values.len())
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect())
}
