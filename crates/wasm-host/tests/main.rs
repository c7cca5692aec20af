//! Real guest components on the real host, and the WIT packages they are built against, one test
//! binary: each file is a module.

mod support;

mod contexts;
mod guests;
mod wit;
