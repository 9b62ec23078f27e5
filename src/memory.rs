//! Peak-memory planning. Every command adds up what it is about to allocate (a [`MemoryPlan`])
//! and compares it with what this process may use (a [`MemoryLimit`]: `--max-memory`, else the
//! cgroup limit less its current use, else `MemAvailable`) before allocating, so an impossible
//! size is a clear error instead of an allocator abort. Sizes saturate instead of wrapping: a
//! plan for 2^70 bytes is refused, never mistaken for a small one.

use crate::error::{AltoError, Result};
use std::fmt;
use std::path::Path;

/// Where a memory limit comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSource {
    /// Given explicitly (`--max-memory`).
    Explicit,
    /// The cgroup v2 `memory.max` of this process, less its `memory.current`.
    Cgroup,
    /// `MemAvailable` of `/proc/meminfo`.
    MemAvailable,
}

impl LimitSource {
    pub fn describe(self) -> &'static str {
        match self {
            LimitSource::Explicit => "the --max-memory limit",
            LimitSource::Cgroup => "the cgroup memory limit less current use",
            LimitSource::MemAvailable => "MemAvailable in /proc/meminfo",
        }
    }
}

/// How many bytes this process may still allocate, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    pub source: LimitSource,
}

impl MemoryLimit {
    /// The explicit limit when given, else the detected one (`None`: nothing to check against).
    pub fn resolve(explicit: Option<u64>) -> Option<MemoryLimit> {
        match explicit {
            Some(bytes) => Some(MemoryLimit {
                bytes,
                source: LimitSource::Explicit,
            }),
            None => MemoryLimit::detect(),
        }
    }

    /// The smaller of the cgroup allowance and `MemAvailable`, where readable.
    pub fn detect() -> Option<MemoryLimit> {
        let cgroup = cgroup_allowance().map(|bytes| MemoryLimit {
            bytes,
            source: LimitSource::Cgroup,
        });
        let avail = mem_available().map(|bytes| MemoryLimit {
            bytes,
            source: LimitSource::MemAvailable,
        });
        match (cgroup, avail) {
            (Some(c), Some(a)) => Some(if c.bytes < a.bytes { c } else { a }),
            (c, a) => c.or(a),
        }
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// This process's cgroup v2 `memory.max - memory.current` (`None` without a limit).
pub fn cgroup_allowance() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let max = std::fs::read_to_string(dir.join("memory.max")).ok()?;
    let current = std::fs::read_to_string(dir.join("memory.current")).ok();
    cgroup_allowance_from(&max, current.as_deref())
}

/// `max - current` from the text of the two cgroup files (`max` means no limit).
pub fn cgroup_allowance_from(max: &str, current: Option<&str>) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?; // "max" (no limit) does not parse
    let current: u64 = current.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// `count * size` bytes, saturating at `u64::MAX`.
pub fn bytes_for(count: u64, size: u64) -> u64 {
    count.saturating_mul(size)
}

/// What a command will allocate, item by item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    items: Vec<(String, u64)>,
}

impl MemoryPlan {
    pub fn new() -> Self {
        MemoryPlan::default()
    }

    /// Adds `bytes` for `what` (e.g. "factor matrices (3 x rank 16)").
    pub fn add(&mut self, what: impl Into<String>, bytes: u64) -> &mut Self {
        self.items.push((what.into(), bytes));
        self
    }

    /// Every item of `other`.
    pub fn extend(&mut self, other: MemoryPlan) -> &mut Self {
        self.items.extend(other.items);
        self
    }

    pub fn items(&self) -> &[(String, u64)] {
        &self.items
    }

    /// The sum, saturating.
    pub fn total(&self) -> u64 {
        self.items
            .iter()
            .fold(0u64, |a, &(_, b)| a.saturating_add(b))
    }

    /// Refuses the plan when it exceeds `limit` (no limit: accepted). `hint` names the options
    /// that change the need, e.g. "lower --rank".
    pub fn check(&self, limit: Option<MemoryLimit>, hint: &str) -> Result<()> {
        let Some(limit) = limit else { return Ok(()) };
        let needed = self.total();
        if needed <= limit.bytes {
            return Ok(());
        }
        Err(AltoError::MemoryLimit {
            needed,
            available: limit.bytes,
            plan: self.to_string(),
            limit: limit.source.describe(),
            hint: hint.to_string(),
        })
    }
}

impl fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (what, bytes)) in self.items.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{what} {}", human_bytes(*bytes))?;
        }
        Ok(())
    }
}

/// What MTTKRP on `t` at `rank` allocates beside the tensor: one factor matrix per mode, one
/// output for the largest mode, the pull strategy's staging ([`crate::mttkrp::staging_len`])
/// and, where rows may be padded ([`crate::mttkrp::padding`]), padded copies of both.
pub fn mttkrp_plan(t: &crate::AnyAlto, rank: usize) -> MemoryPlan {
    let rows = factor_rows(t);
    let width = crate::mttkrp::padding::widest_rows(rank, t.nnz() as u64, rows) as u64;
    let rank = rank as u64;
    let max_rows = t.dims().iter().copied().max().unwrap_or(0);
    let staging = crate::with_alto!(t, x => crate::mttkrp::staging_len(x, width as usize));
    let mut plan = MemoryPlan::new();
    plan.add(
        format!("factor matrices ({rows} rows x rank {rank})"),
        bytes_for(rows.saturating_mul(rank), 8),
    )
    .add(
        format!("output ({max_rows} rows x rank {rank})"),
        bytes_for(max_rows.saturating_mul(rank), 8),
    )
    .add("pull staging", bytes_for(staging as u64, 8));
    if width != rank {
        plan.add(
            format!("padded copies (rows x width {width})"),
            bytes_for(rows.saturating_add(max_rows).saturating_mul(width), 8),
        );
    }
    plan
}

/// Rows of all factor matrices together (the sum of the dims), saturating.
fn factor_rows(t: &crate::AnyAlto) -> u64 {
    t.dims().iter().fold(0u64, |a, &d| a.saturating_add(d))
}

/// What CP-ALS on `t` at `rank` allocates beside the tensor: [`mttkrp_plan`], the model's
/// factors (a second set), the per-mode Gram matrices and the solver's blocks.
pub fn cp_als_plan(t: &crate::AnyAlto, rank: usize) -> MemoryPlan {
    let mut plan = mttkrp_plan(t, rank);
    let r = rank as u64;
    let rows = factor_rows(t);
    let grams = (t.order() as u64 + 4).saturating_mul(r.saturating_mul(r));
    plan.add("model factors", bytes_for(rows.saturating_mul(r), 8))
        .add("Gram matrices and solver scratch", bytes_for(grams, 8));
    plan
}

/// What CP-APR on `t` at `rank` allocates beside the tensor: [`mttkrp_plan`] (the Phi
/// kernels run on the MTTKRP's workspace), the model's factors and the kept Phi of every mode,
/// and what the Phi kernel `kind` keeps per nonzero: the Pi cache (`nnz x rank` doubles) of
/// [`PhiKind::Cached`](crate::cpd::apr::PhiKind::Cached), the weights (`nnz` doubles) of an
/// MTTKRP kernel, nothing for `Fused`. `Auto` is resolved as the run resolves it
/// ([`choose_phi_kind`](crate::cpd::apr::choose_phi_kind) with
/// [`CACHE_PI_ABOVE_BYTES`](crate::cpd::apr::CACHE_PI_ABOVE_BYTES) and
/// [`MAX_PI_CACHE_BYTES`](crate::cpd::apr::MAX_PI_CACHE_BYTES)).
pub fn cp_apr_plan(t: &crate::AnyAlto, rank: usize, kind: crate::cpd::apr::PhiKind) -> MemoryPlan {
    use crate::cpd::apr::{choose_phi_kind, PhiKind, CACHE_PI_ABOVE_BYTES, MAX_PI_CACHE_BYTES};
    let kind = match kind {
        PhiKind::Auto => choose_phi_kind(
            t.dims(),
            t.nnz(),
            rank,
            CACHE_PI_ABOVE_BYTES,
            MAX_PI_CACHE_BYTES,
        ),
        k => k,
    };
    let r = rank as u64;
    let rows = factor_rows(t);
    let nnz = t.nnz() as u64;
    let mut plan = mttkrp_plan(t, rank);
    plan.add(
        "model factors and the Phi of every mode",
        bytes_for(rows.saturating_mul(r).saturating_mul(2), 8),
    );
    match kind {
        PhiKind::Cached => {
            plan.add("Pi cache (phi_cached)", bytes_for(nnz.saturating_mul(r), 8));
        }
        PhiKind::Mttkrp(_) => {
            plan.add("Phi weights", bytes_for(nnz, 8));
        }
        PhiKind::Auto | PhiKind::Fused => {}
    }
    plan
}

/// `1.50 GiB`, `12.0 KiB`, `512 B`; `u64::MAX` reads "more than 16 EiB" (a saturated sum).
pub fn human_bytes(bytes: u64) -> String {
    if bytes == u64::MAX {
        return "more than 16 EiB".into();
    }
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// Parses a byte size: a number with an optional binary suffix `K`, `M`, `G`, `T` (also
/// `KiB`.., `KB`..: all powers of 1024), e.g. `512M`, `8G`, `1.5T`, `1000000`.
pub fn parse_byte_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => {
            return Err(format!(
                "`{s}`: unknown size unit `{other}` (use K, M, G or T)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (e.g. 512M, 8G)"))?;
    let bytes = v * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes >= u64::MAX as f64 {
        return Err(format!(
            "`{s}`: a size must be at least 1 byte and below 16 EiB"
        ));
    }
    Ok(bytes as u64)
}

/// A growable buffer's reservation as a typed error instead of an allocator abort.
pub fn try_reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    v.try_reserve(additional)
        .map_err(|_| AltoError::MemoryLimit {
            needed: bytes_for(
                (v.len() as u64).saturating_add(additional as u64),
                std::mem::size_of::<T>() as u64,
            ),
            available: 0,
            plan: format!("{what}: the allocation failed"),
            limit: "what the allocator could provide",
            hint: "free memory or use a smaller input".into(),
        })
}

/// Faults in the pages of `v`'s spare capacity up front, split over the current rayon pool, for
/// a buffer that is about to be written whole (the build's keys, indices and values).
///
/// A fresh allocation's first writes fault one page at a time. Under KVM each of those costs
/// about 1.5 µs a 4 KiB page, and in the middle of a scatter it also evicts the lines and TLB
/// entries the scatter streams through. Asking for the pages in a few large
/// `MADV_POPULATE_WRITE` calls costs less (32 MiB: 11 ms against 15 for first writes; cold
/// builds, 2M nonzeros, one per process, medians of 7-11: skewed 3-D at 1 thread 42.2 -> 35.7
/// ms, at 2 threads 29.0 -> 25.5; nell-2 at 2 threads 33.7 -> 28.1). Pages already resident
/// (memory the allocator reuses) are left alone, since asking for them still costs about
/// 0.3 µs a page; `mincore` tells them apart for 0.03 ms a 32 MiB. Where the kernel lacks
/// either call (Linux before 5.14, other systems) the pages fault as before: only the speed
/// differs.
pub fn populate_spare_capacity<T: Send>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        use rayon::prelude::*;
        // SAFETY: sysconf only reads a constant of the process.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 => p as usize,
            _ => return,
        };
        let spare = v.spare_capacity_mut();
        let start = spare.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(spare);
        let (first, last) = (start.next_multiple_of(page), end / page * page);
        if last <= first {
            return;
        }
        let pages = (last - first) / page;
        let mut resident = vec![0u8; pages];
        // SAFETY: `first..last` is page-aligned and inside `v`'s allocation, and `resident` has
        // the one byte per page mincore writes.
        let rc = unsafe {
            libc::mincore(
                first as *mut libc::c_void,
                last - first,
                resident.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return;
        }
        // A few calls a thread, so one preempted thread does not hold up the rest; each asks
        // for its part's span from the first page not resident to the last.
        let parts = (rayon::current_num_threads().max(1) * 4).min(pages);
        (0..parts).into_par_iter().for_each(|i| {
            let part = pages * i / parts..pages * (i + 1) / parts;
            let absent = |p: &usize| resident[*p] & 1 == 0;
            let (Some(a), Some(b)) = (part.clone().find(absent), part.rev().find(absent)) else {
                return;
            };
            // SAFETY: pages `a..=b` lie inside `v`'s spare capacity, which the `&mut` borrow
            // makes ours alone and nothing reads; MADV_POPULATE_WRITE maps them as a write
            // would, without changing their contents. It may fail (EINVAL on kernels without
            // it); the buffer is then as before, so the result is ignored.
            unsafe {
                libc::madvise(
                    (first + a * page) as *mut libc::c_void,
                    (b + 1 - a) * page,
                    libc::MADV_POPULATE_WRITE,
                )
            };
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populating_spare_capacity_keeps_contents_and_length() {
        let mut v: Vec<u64> = (0..1000).collect();
        v.reserve(1 << 20);
        let cap = v.capacity();
        populate_spare_capacity(&mut v);
        assert_eq!((v.len(), v.capacity()), (1000, cap));
        assert!(v.iter().copied().eq(0..1000));
        v.extend(1000..cap as u64);
        assert!(v.iter().copied().eq(0..cap as u64));
        // Nothing spare: nothing to do.
        let mut full = vec![7u8; 3];
        full.shrink_to_fit();
        populate_spare_capacity(&mut full);
        assert_eq!(full, [7, 7, 7]);
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_byte_size("512"), Ok(512));
        assert_eq!(parse_byte_size("8G"), Ok(8 << 30));
        assert_eq!(parse_byte_size("1.5k"), Ok(1536));
        assert_eq!(parse_byte_size("2 MiB"), Ok(2 << 20));
        for bad in ["", "G", "-1G", "nan", "inf", "1e30T", "0", "3 parsecs"] {
            assert!(parse_byte_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plans_saturate_and_refuse_with_the_breakdown() {
        let mut p = MemoryPlan::new();
        p.add("factors", u64::MAX).add("output", 10);
        assert_eq!(p.total(), u64::MAX);
        let limit = Some(MemoryLimit {
            bytes: 1 << 30,
            source: LimitSource::Explicit,
        });
        let e = p.check(limit, "lower --rank").unwrap_err().to_string();
        assert!(e.contains("factors more than 16 EiB"), "{e}");
        assert!(
            e.contains("--max-memory") && e.contains("lower --rank"),
            "{e}"
        );
        let mut small = MemoryPlan::new();
        small.add("x", 1 << 20);
        assert!(small.check(limit, "").is_ok());
        assert!(p.check(None, "").is_ok());
    }

    #[test]
    fn cp_apr_plan_grows_with_rank_and_counts_the_pi_cache() {
        use crate::cpd::apr::PhiKind;
        let coo = crate::gen::uniform(&[6, 7, 8], 200, 3).unwrap();
        let (t, _) = crate::AnyAlto::build(&coo, &Default::default()).unwrap();
        let nnz = t.nnz() as u64;
        for kind in [PhiKind::Auto, PhiKind::Fused, PhiKind::Cached] {
            let totals: Vec<u64> = [1, 4, 16]
                .iter()
                .map(|&r| cp_apr_plan(&t, r, kind).total())
                .collect();
            assert!(
                totals[0] < totals[1] && totals[1] < totals[2],
                "{kind:?} {totals:?}"
            );
        }
        for rank in [1usize, 5, 16] {
            let fused = cp_apr_plan(&t, rank, PhiKind::Fused);
            let cached = cp_apr_plan(&t, rank, PhiKind::Cached);
            let pi = cached
                .items()
                .iter()
                .find(|(what, _)| what.contains("Pi cache"))
                .map(|&(_, b)| b);
            assert_eq!(pi, Some(nnz * rank as u64 * 8), "rank {rank}");
            assert_eq!(cached.total() - fused.total(), nnz * rank as u64 * 8);
            // A tensor this small has cache-resident factors: auto is fused.
            assert_eq!(cp_apr_plan(&t, rank, PhiKind::Auto), fused);
        }
    }

    #[test]
    fn limits_come_from_meminfo_and_cgroup_text() {
        assert_eq!(
            parse_meminfo("MemTotal: 10 kB\nMemAvailable:    2048 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(cgroup_allowance_from("max\n", Some("5")), None);
        assert_eq!(cgroup_allowance_from("1000\n", Some("400\n")), Some(600));
        assert_eq!(cgroup_allowance_from("1000", Some("4000")), Some(0));
    }
}
