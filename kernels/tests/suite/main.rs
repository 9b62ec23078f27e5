//! The kernel crate's integration tests in one test binary: every kernel variant against the
//! naive oracle (`oracle`), and the machine code of the kernels linked into this binary
//! (`disasm`).

mod disasm;
mod oracle;
