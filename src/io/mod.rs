//! Tensors and matrices in and out of files: FROSTT `.tns` text ([`tns`]), the binary `.alto`
//! file ([`binfile`]), and NumPy `.npy` arrays of f64 for dense factors ([`npy`]).

pub mod binfile;
pub mod npy;
pub mod tns;
