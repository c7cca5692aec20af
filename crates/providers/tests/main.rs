//! The providers' clients against loopback servers and recorded streams, one test binary: each file
//! is a module.

mod support;

mod attachments;
mod caching;
mod clouds;
mod conformance;
mod faults;
mod gemini;
mod responses;
mod splits;
