//! Criterion benchmarks live in this package's bench targets.
