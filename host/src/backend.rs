//! Where kernels run: an NVIDIA GPU, an AMD GPU, or the CPU simulator with either warp width.
//!
//! | [`Backend`]          | runs                                        | warp width | text form  |
//! |----------------------|---------------------------------------------|------------|------------|
//! | `Sim`                | the generic kernels on `SimWarp<32>`        | 32         | `sim`      |
//! | `Sim64`              | the generic kernels on `SimWarp<64>`        | 64         | `sim64`    |
//! | `Cuda { ordinal }`   | the embedded PTX's entry points (cudarc)    | 32         | `cuda:N`   |
//! | `Hip { ordinal }`    | the embedded code object's entry points     | 64 (CDNA)  | `hip:N`    |
//!
//! ```
//! use zipcoll_host::Backend;
//! let b: Backend = "cuda:1".parse().unwrap();
//! assert_eq!(b, Backend::Cuda { ordinal: 1 });
//! assert_eq!(b.sim_twin(), Backend::Sim);
//! assert_eq!(Backend::Hip { ordinal: 0 }.sim_twin(), Backend::Sim64);
//! ```

use crate::error::Error;
use crate::{cuda, hip};
use std::fmt;
use std::str::FromStr;

/// A place to run kernels (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The CPU simulator with 32-lane warps (NVIDIA's width).
    Sim,
    /// The CPU simulator with 64-lane warps (the wavefront of AMD's CDNA GPUs).
    Sim64,
    /// CUDA device `ordinal`.
    Cuda {
        /// The CUDA device ordinal.
        ordinal: usize,
    },
    /// HIP device `ordinal`.
    Hip {
        /// The HIP device ordinal.
        ordinal: usize,
    },
}

impl Backend {
    /// The first CUDA device if a CUDA driver and a device exist, else the first HIP device if
    /// the HIP runtime and a device exist, else [`Backend::Sim`].
    pub fn detect() -> Backend {
        if cuda::is_available() {
            Backend::Cuda { ordinal: 0 }
        } else if hip::is_available() {
            Backend::Hip { ordinal: 0 }
        } else {
            Backend::Sim
        }
    }

    /// Opens the device and loads its GPU module now (each happens once per device and is
    /// shared by later calls), so that a backend that cannot run kernels says why up front.
    /// Nothing to do for the simulators.
    pub fn prepare(self) -> Result<(), Error> {
        match self {
            Backend::Sim | Backend::Sim64 => Ok(()),
            Backend::Cuda { ordinal } => cuda::CudaGpu::get(ordinal).map(drop),
            Backend::Hip { ordinal } => hip::HipGpu::get(ordinal).map(drop),
        }
    }

    /// Lanes per warp on this backend: what `warp_all_reduce` groups elements by.
    pub fn warp_width(self) -> u32 {
        match self {
            Backend::Sim | Backend::Cuda { .. } => 32,
            Backend::Sim64 | Backend::Hip { .. } => 64,
        }
    }

    /// The simulator with this backend's warp width: the backend whose results this one's must
    /// equal bit for bit.
    pub fn sim_twin(self) -> Backend {
        if self.warp_width() == 64 {
            Backend::Sim64
        } else {
            Backend::Sim
        }
    }

    /// Whether this is one of the simulators.
    pub fn is_sim(self) -> bool {
        matches!(self, Backend::Sim | Backend::Sim64)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad` honours width and alignment, so the names line up in tables.
        match self {
            Backend::Sim => f.pad("sim"),
            Backend::Sim64 => f.pad("sim64"),
            Backend::Cuda { ordinal } => f.pad(&format!("cuda:{ordinal}")),
            Backend::Hip { ordinal } => f.pad(&format!("hip:{ordinal}")),
        }
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// `sim`, `sim64`, `cuda`, `cuda:N`, `hip` or `hip:N` (no ordinal means device 0).
    fn from_str(s: &str) -> Result<Self, Error> {
        let (name, ordinal) = match s.split_once(':') {
            Some((name, n)) => {
                let n = n
                    .parse()
                    .map_err(|_| Error::InvalidArgument(format!("bad device ordinal in {s:?}")))?;
                (name, Some(n))
            }
            None => (s, None),
        };
        match (name, ordinal) {
            ("sim", None) => Ok(Backend::Sim),
            ("sim64", None) => Ok(Backend::Sim64),
            ("cuda", o) => Ok(Backend::Cuda {
                ordinal: o.unwrap_or(0),
            }),
            ("hip", o) => Ok(Backend::Hip {
                ordinal: o.unwrap_or(0),
            }),
            _ => Err(Error::InvalidArgument(format!(
                "unknown backend {s:?} (expected sim, sim64, cuda[:N] or hip[:N])"
            ))),
        }
    }
}
