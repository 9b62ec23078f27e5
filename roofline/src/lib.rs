//! `alto-roofline`: probes this machine's compute and bandwidth ceilings, runs the paper's
//! representative MTTKRP cases (its Fig. 9) on stand-in tensors, and draws both this machine's
//! roofline and the paper's Cascade Lake one from a stated profile.

pub mod cases;
pub mod counters;
pub mod layout;
pub mod levels;
pub mod machine;
pub mod plot;
pub mod points;
pub mod probe;
pub mod profile;
pub mod report;
