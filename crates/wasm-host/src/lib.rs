//! wasm host
