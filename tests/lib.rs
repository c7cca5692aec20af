//! Helpers shared by the end-to-end tests live in `e2e/`.
