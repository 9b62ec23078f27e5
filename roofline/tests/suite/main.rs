//! The roofline crate's integration tests, one module an area, in one test binary (the library
//! and `alto` are linked once for both: docs/building.md).

mod outputs;
mod points;
