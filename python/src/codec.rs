//! `compress`, `decompress` and `inspect` over element bytes (the package passes a tensor's
//! bytes and its dtype's name). They run on the simulator, or with `device="cuda:N"` on that
//! GPU's codec kernels; the frames are the same bytes either way.

use crate::envelope;
use crate::errors::{invalid, to_py};
use crate::names;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zipcoll_host::codec::analysis::{analyze, plan_codec, ratio, round_trip, Analysis};
use zipcoll_host::codec::{decode_stream, encode};
use zipcoll_host::{Backend, CodecId, DType, Error};

/// Elements per frame unless the caller says: what `zipcoll inspect` uses.
pub const FRAME_ELEMS: usize = 65536;

/// The backend the codecs run on: `device`'s, the simulator when `None`.
fn backend(device: Option<&str>) -> PyResult<Backend> {
    device.map_or(Ok(Backend::Sim), names::device)
}

/// The codec `Auto` would send `data` with over the network (its NET plan's pick; RAW when it
/// picks none or there is no data).
fn auto_codec(dtype: DType, data: &[u8], frame_elems: usize) -> Result<CodecId, Error> {
    if data.is_empty() || !dtype.coded() {
        return Ok(CodecId::Raw);
    }
    Ok(analyze(dtype, data, frame_elems)?.net_pick())
}

/// `data` (little-endian `dtype` elements) compressed with `codec` (`auto`: what Auto picks
/// for the network) into frames of `frame_elems` elements, behind the envelope's header.
#[pyfunction]
#[pyo3(signature = (data, dtype, codec = "auto", frame_elems = FRAME_ELEMS, device = None))]
pub fn compress<'py>(
    py: Python<'py>,
    data: &[u8],
    dtype: &str,
    codec: &str,
    frame_elems: usize,
    device: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (dtype, codec, backend) = (names::dtype(dtype)?, names::codec(codec)?, backend(device)?);
    let out = py
        .detach(|| -> Result<Vec<u8>, Error> {
            let codec = match codec {
                Some(c) => c,
                None => auto_codec(dtype, data, frame_elems)?,
            };
            let enc = encode(backend, dtype, Some(codec), data, frame_elems)?;
            let mut out = Vec::with_capacity(envelope::HEADER_BYTES + enc.bytes.len());
            out.extend_from_slice(&envelope::header(dtype, enc.n));
            out.extend_from_slice(&enc.bytes);
            Ok(out)
        })
        .map_err(to_py)?;
    Ok(PyBytes::new(py, &out))
}

/// The element bytes and the dtype's name of `data`, a buffer `compress` made; `dtype`, if
/// given, must be the one it was compressed with. A buffer cut short, or whose frames do not
/// decode, is a `CorruptFrameError`.
#[pyfunction]
#[pyo3(signature = (data, dtype = None, device = None))]
pub fn decompress<'py>(
    py: Python<'py>,
    data: &[u8],
    dtype: Option<&str>,
    device: Option<&str>,
) -> PyResult<(Bound<'py, PyBytes>, &'static str)> {
    let backend = backend(device)?;
    let (found, elems, frames) = envelope::open(data).map_err(to_py)?;
    if let Some(want) = dtype.map(names::dtype).transpose()? {
        if want != found {
            return Err(invalid(format!(
                "the data holds {} elements, not {}",
                found.name(),
                want.name()
            )));
        }
    }
    let out = py
        .detach(|| -> Result<Vec<u8>, Error> {
            let out = decode_stream(backend, found, frames)?;
            if Some(out.len()) != elems.checked_mul(found.size_bytes()) {
                return Err(Error::Stream {
                    frame: 0,
                    reason: format!(
                        "truncated: the frames hold {} elements of the {elems} compressed",
                        out.len() / found.size_bytes()
                    ),
                });
            }
            Ok(out)
        })
        .map_err(to_py)?;
    Ok((PyBytes::new(py, &out), found.name()))
}

/// What compression does to `data` (little-endian `dtype` elements), as a dict: `dtype`,
/// `elements`, `frame_elems`, `entropy_ratio` (the order-0 bound: `(raw_bits + entropy_bits) /
/// word_bits`) and those three, `ratios` (each codec's frames over the data, round trip
/// checked bit for bit), `predicted` (the arbitration's predicted ratio per codec), `plans`
/// (per link, `nvlink` and `net`: `codec`, `reason`, `predicted_ratio`, `predicted_s`,
/// `raw_s`, `bandwidth_bytes_per_s`) and `pick` (the network plan's codec).
#[pyfunction]
#[pyo3(signature = (data, dtype, frame_elems = FRAME_ELEMS, device = None))]
pub fn inspect<'py>(
    py: Python<'py>,
    data: &[u8],
    dtype: &str,
    frame_elems: usize,
    device: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let (dtype, backend) = (names::dtype(dtype)?, backend(device)?);
    if data.is_empty() {
        return Err(invalid("inspect needs at least one element"));
    }
    let (a, realized) = py
        .detach(|| -> Result<(Analysis, Vec<(CodecId, u64)>), Error> {
            let a = analyze(dtype, data, frame_elems)?;
            let realized = CodecId::ALL
                .into_iter()
                .map(|c| {
                    let trip = round_trip(backend, dtype, c, data, frame_elems, |_| {})?;
                    match trip.differs {
                        None => Ok((c, trip.encoded_bytes)),
                        Some(at) => Err(Error::Stream {
                            frame: 0,
                            reason: format!("{}'s round trip differs from byte {at}", c.name()),
                        }),
                    }
                })
                .collect::<Result<Vec<_>, Error>>()?;
            Ok((a, realized))
        })
        .map_err(to_py)?;
    report(py, &a, &realized)
}

/// [`inspect`]'s dict.
fn report<'py>(py: Python<'py>, a: &Analysis, realized: &[(CodecId, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let raw = a.raw_bytes();
    let d = PyDict::new(py);
    d.set_item("dtype", a.dtype.name())?;
    d.set_item("elements", a.elems)?;
    d.set_item("frame_elems", a.frame_elems)?;
    d.set_item("entropy_ratio", a.entropy_ratio())?;
    d.set_item("entropy_bits", a.entropy_bits)?;
    d.set_item("raw_bits", a.raw_bits)?;
    d.set_item("word_bits", a.word_bits)?;
    let ratios = PyDict::new(py);
    let predicted = PyDict::new(py);
    for &(c, bytes) in realized {
        ratios.set_item(c.name(), ratio(bytes, raw))?;
        predicted.set_item(c.name(), ratio(a.predicted_bytes(c), raw))?;
    }
    d.set_item("ratios", ratios)?;
    d.set_item("predicted", predicted)?;
    let plans = PyDict::new(py);
    for (link, plan) in &a.plans {
        let p = PyDict::new(py);
        p.set_item("codec", plan_codec(plan).name())?;
        p.set_item("reason", plan.reason.to_string())?;
        p.set_item(
            "predicted_ratio",
            ratio(
                plan.choice
                    .map_or(a.predicted_bytes(CodecId::Raw), |c| c.predicted_bytes),
                raw,
            ),
        )?;
        p.set_item("predicted_s", plan.choice.map_or(plan.raw_s, |c| c.predicted_s))?;
        p.set_item("raw_s", plan.raw_s)?;
        p.set_item("bandwidth_bytes_per_s", link.bandwidth_bytes_per_s)?;
        plans.set_item(link.name, p)?;
    }
    d.set_item("plans", plans)?;
    d.set_item("pick", a.net_pick().name())?;
    Ok(d)
}
