//! The sandbox's backends: what a confined command may do, how processes start, the Seatbelt
//! profiles; one test binary, each file a module.

mod confine;
mod seatbelt;
mod spawn;
