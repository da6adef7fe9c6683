//! The crate's one error type: every fallible call returns [`Result`], and no input a caller
//! passes makes the crate panic.
//!
//! | variant                | raised when                                                       |
//! |------------------------|-------------------------------------------------------------------|
//! | `BackendUnavailable`   | the driver/runtime library or a usable device is missing           |
//! | `Cuda`                 | a CUDA driver call failed (including a kernel fault at synchronize) |
//! | `Hip`                  | a HIP runtime call failed (`code` is its `hipError_t`)             |
//! | `KernelNotBuilt`       | the manifest has no entry point for (kernel, dtype, op, codec, vendor), or the embedded module lacks its symbol |
//! | `KernelsNotBuilt`      | no GPU module was embedded at build time                          |
//! | `InvalidArgument`      | an argument the kernel cannot take (lengths, counts, ranks)       |
//! | `Sim`                  | the CPU simulator rejected or aborted a launch                    |
//! | `Frame`                | a frame was rejected by the frame codec (which frame, which [`FrameError`]) |
//! | `Stream`               | a stream's frames do not fit together (element counts, offsets, lengths) |
//! | `Timeout`              | a peer did not answer within the configured timeout (bootstrap, transport, collective) |
//! | `Remote`               | a peer failed, closed its connection or sent something malformed   |
//! | `Bootstrap`            | the rendezvous cannot complete: bad unique id, ranks that disagree |
//! | `Io`                   | a socket or file operation failed                                 |
//! | `Collective`           | a collective failed on this rank's device side (a rejected frame, a timeout, an abort) |
//! | `Aborted`              | the communicator was aborted (by `abort()` or an earlier failure)  |

use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::DType;
use zipcoll_device::frame::FrameError;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::manifest::Vendor;

/// What went wrong (see the module table).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A backend cannot be used on this machine.
    #[error("the {backend} backend is unavailable: {reason}")]
    BackendUnavailable {
        /// `"cuda"` or `"hip"`.
        backend: &'static str,
        /// Why: the library that failed to load, the missing device, the unsupported arch.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA call {call} failed: {message}")]
    Cuda {
        /// The driver call or the operation that made it.
        call: &'static str,
        /// The driver's error name and text.
        message: String,
    },
    /// A HIP runtime call failed.
    #[error("HIP call {call} failed with error {code}: {message}")]
    Hip {
        /// The runtime call.
        call: &'static str,
        /// Its `hipError_t`.
        code: i32,
        /// `hipGetErrorString` of the code.
        message: String,
    },
    /// No entry point exists for this kernel instance.
    #[error("kernel {kernel} has no entry point for dtype {dtype:?}, op {op:?}, codec {codec:?} on {vendor:?}")]
    KernelNotBuilt {
        /// The kernel fn's name (`Kernel::NAME`).
        kernel: &'static str,
        /// The requested dtype (`None` for kernels without one).
        dtype: Option<DType>,
        /// The requested op (`None` for kernels without one).
        op: Option<ReduceOp>,
        /// The requested codec (`None` for kernels without one).
        codec: Option<CodecId>,
        /// The vendor whose module was searched.
        vendor: Vendor,
    },
    /// This binary embeds no GPU module.
    #[error("no GPU kernels were built into this binary: {hint}")]
    KernelsNotBuilt {
        /// How to build them.
        hint: &'static str,
    },
    /// An argument the operation cannot take.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The CPU simulator failed.
    #[error("simulator: {0}")]
    Sim(String),
    /// The frame codec rejected a frame (while encoding it, or decoding it).
    #[error("frame {frame}: {error}")]
    Frame {
        /// The frame's index in its stream.
        frame: usize,
        /// Why.
        error: FrameError,
    },
    /// A stream of frames is inconsistent as a whole, though its frames may be fine each.
    #[error("frame {frame} of the stream: {reason}")]
    Stream {
        /// The index of the frame where the inconsistency shows.
        frame: usize,
        /// What does not fit.
        reason: String,
    },
    /// A peer did not answer in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was waited for (which peer, which step).
        what: String,
        /// The configured limit.
        after: std::time::Duration,
    },
    /// A peer failed, went away, or sent something malformed.
    #[error("rank {rank}: {reason}")]
    Remote {
        /// The peer's rank (`usize::MAX` when not known yet).
        rank: usize,
        /// What happened.
        reason: String,
    },
    /// The rendezvous of the ranks cannot complete.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// A socket or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A collective failed on this rank's device side.
    #[error("{collective} failed on rank {rank}, channel {channel}: {failure}")]
    Collective {
        /// The collective's name.
        collective: &'static str,
        /// This rank.
        rank: usize,
        /// The channel (warp) that failed first.
        channel: usize,
        /// What failed, at which FIFO step.
        failure: zipcoll_primitives::conn::Failure,
    },
    /// The communicator was aborted.
    #[error("the communicator was aborted")]
    Aborted,
    /// A lossy call's input changed while the call read it (a race in the caller); the
    /// communicator is aborted.
    #[error("{0}")]
    InputChanged(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error for a GPU module that was not embedded at build time.
    pub(crate) fn kernels_not_built() -> Self {
        Error::KernelsNotBuilt {
            hint: "run `bash scripts/setup.sh`, then rebuild on the machine with the GPU, or with \
                   ZIPCOLL_GPU_ARCHS naming its architecture (sm_90, sm_80, gfx942, gfx950)",
        }
    }
}
