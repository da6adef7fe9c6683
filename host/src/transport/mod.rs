//! Transports: how the frames of a connection get from the sending rank's FIFO to the
//! receiving rank's.

pub mod host_mem;
pub mod net;
pub mod sim;
