//! Tensors and matrices in and out of files: FROSTT `.tns` text ([`tns`]) and the binary
//! `.alto` file ([`binfile`]). Dense factors use NumPy `.npy` through [`crate::matrix`].

pub mod binfile;
pub mod tns;
