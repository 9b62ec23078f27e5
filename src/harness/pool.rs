//! The thread pool every computing command runs on: built once per run with an explicit
//! thread count (never rayon's global pool), its workers optionally pinned to CPUs.
//!
//! Pinning policies ([`PinPolicy`]), placed by the pure function [`places`] on a
//! [`Topology`]:
//! - `compact`: fill a core's PUs (hardware threads), then the next core, in machine order;
//! - `scatter`: spread across packages, then NUMA nodes, then cores, and only then use a core's
//!   second PU;
//! - `cores`: one worker per physical core, bound to all of that core's PUs;
//! - `none`: no binding; workers keep the mask they inherit.
//!
//! With more workers than places, worker `i` takes place `i % places` (the report says the
//! pool is oversubscribed). Workers bind themselves in rayon's start handler; a failure is
//! recorded, never a panic (a panic there aborts the process), and [`build_pinned_pool`] runs
//! one broadcast before returning, so every worker has started, bound and reported the CPU set
//! the OS holds for it before any timing can start.

use crate::error::{AltoError, Result};
use crate::harness::affinity::{current_affinity, format_cpu_list, set_current_affinity};
use crate::harness::topology::Topology;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// Builds a pool of `threads` workers named `alto-worker-{i}`, unpinned (policy `none`).
pub fn build_pool(threads: usize) -> Result<rayon::ThreadPool> {
    check_threads(threads)?;
    builder(threads)
        .build()
        .map_err(|e| AltoError::InvalidArgument(format!("cannot start {threads} threads: {e}")))
}

/// Workers allowed per available CPU: oversubscription beyond this only adds contention.
pub const MAX_THREADS_PER_CPU: usize = 4;

/// `threads` when it is at least 1 and at most `per_cpu` times `cpus`, else the error that says
/// so.
pub fn check_thread_count(threads: usize, cpus: usize, per_cpu: usize) -> Result<usize> {
    let max = cpus.max(1).saturating_mul(per_cpu);
    if threads == 0 {
        return Err(AltoError::InvalidArgument(
            "--threads must be at least 1".into(),
        ));
    }
    if threads > max {
        return Err(AltoError::InvalidArgument(format!(
            "--threads {threads} exceeds {max} ({per_cpu} per available CPU, {cpus} CPUs)"
        )));
    }
    Ok(threads)
}

fn check_threads(threads: usize) -> Result<()> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    check_thread_count(threads, cpus, MAX_THREADS_PER_CPU).map(|_| ())
}

fn builder(threads: usize) -> rayon::ThreadPoolBuilder {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("alto-worker-{i}"))
}

/// How workers are placed on CPUs (`--pin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PinPolicy {
    #[default]
    None,
    Compact,
    Scatter,
    Cores,
}

impl PinPolicy {
    pub const ALL: [PinPolicy; 4] = [
        PinPolicy::None,
        PinPolicy::Compact,
        PinPolicy::Scatter,
        PinPolicy::Cores,
    ];

    /// The policy called `name` (`none`, `compact`, `scatter`, `cores`).
    pub fn from_name(name: &str) -> Option<PinPolicy> {
        PinPolicy::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            PinPolicy::None => "none",
            PinPolicy::Compact => "compact",
            PinPolicy::Scatter => "scatter",
            PinPolicy::Cores => "cores",
        }
    }
}

impl fmt::Display for PinPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PinPolicy {
    type Err = AltoError;
    fn from_str(s: &str) -> Result<Self> {
        PinPolicy::from_name(s).ok_or_else(|| {
            AltoError::InvalidArgument(format!(
                "--pin: unknown pinning policy `{s}` (none, compact, scatter or cores)"
            ))
        })
    }
}

impl Serialize for PinPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The places of `policy` on `topo`, in the order workers take them (empty for `none`). Each
/// place is a sorted set of OS CPU numbers.
pub fn places(topo: &Topology, policy: PinPolicy) -> Vec<Vec<usize>> {
    match policy {
        PinPolicy::None => Vec::new(),
        PinPolicy::Compact => topo.pus.iter().map(|p| vec![p.os_index]).collect(),
        PinPolicy::Cores => (0..topo.cores)
            .map(|c| topo.core_cpus(c))
            .filter(|s| !s.is_empty())
            .collect(),
        PinPolicy::Scatter => {
            // Rank of each PU inside its core, of each core inside its NUMA node, of each NUMA
            // node inside its package (all in compact order); sorting with the innermost level
            // varying slowest sends consecutive workers to different packages first.
            use std::collections::HashMap;
            fn next_rank<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, k: K) -> usize {
                let n = counts.entry(k).or_default();
                *n += 1;
                *n - 1
            }
            let (mut pus_in_core, mut cores_in_numa, mut numas_in_package) =
                (HashMap::new(), HashMap::new(), HashMap::new());
            let (mut core_rank, mut numa_rank) = (HashMap::new(), HashMap::new());
            let keys: Vec<(usize, usize, usize, usize)> = topo
                .pus
                .iter()
                .map(|p| {
                    let pr = next_rank(&mut pus_in_core, p.core);
                    let cr = *core_rank
                        .entry(p.core)
                        .or_insert_with(|| next_rank(&mut cores_in_numa, (p.package, p.numa)));
                    let nr = *numa_rank
                        .entry((p.package, p.numa))
                        .or_insert_with(|| next_rank(&mut numas_in_package, p.package));
                    (pr, cr, nr, p.package)
                })
                .collect();
            let mut order: Vec<usize> = (0..topo.pus.len()).collect();
            order.sort_by_key(|&i| keys[i]);
            order
                .into_iter()
                .map(|i| vec![topo.pus[i].os_index])
                .collect()
        }
    }
}

/// The CPU set of each of `threads` workers under `policy` (`None` for `none`).
pub fn assignment(topo: &Topology, policy: PinPolicy, threads: usize) -> Vec<Option<Vec<usize>>> {
    let places = places(topo, policy);
    (0..threads)
        .map(|i| (!places.is_empty()).then(|| places[i % places.len()].clone()))
        .collect()
}

/// What binds a worker thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindBackend {
    /// `hwloc_set_cpubind` (needs a topology read through hwloc).
    Hwloc,
    /// The plain `sched_setaffinity` call.
    SchedAffinity,
}

impl BindBackend {
    /// hwloc where the topology came from it, else `sched_setaffinity`.
    pub fn default_for(topo: &Topology) -> BindBackend {
        if topo.has_hwloc() {
            BindBackend::Hwloc
        } else {
            BindBackend::SchedAffinity
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BindBackend::Hwloc => "hwloc",
            BindBackend::SchedAffinity => "sched_setaffinity",
        }
    }
}

/// One worker's binding, as it reported it from inside the pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerBinding {
    pub worker: usize,
    /// The CPU set the policy asked for (`None` under `none`).
    pub requested: Option<Vec<usize>>,
    /// The CPU set the OS reports for the worker (`sched_getaffinity` read in the worker).
    pub cpus: Vec<usize>,
    /// Why binding (or reading the binding back) failed.
    pub error: Option<String>,
}

/// How a pool's workers were placed.
#[derive(Clone, Debug, Serialize)]
pub struct PinReport {
    pub policy: PinPolicy,
    /// `hwloc`, `sched_setaffinity`, or `none` (policy `none`).
    pub backend: &'static str,
    pub threads: usize,
    /// Distinct places of the policy (0 under `none`).
    pub places: usize,
    /// More workers than places: some share a place.
    pub oversubscribed: bool,
    pub workers: Vec<WorkerBinding>,
}

impl PinReport {
    /// Workers whose binding failed.
    pub fn failures(&self) -> usize {
        self.workers.iter().filter(|w| w.error.is_some()).count()
    }

    /// One line describing every failure (and oversubscription), or `None` when all is well.
    pub fn warning(&self) -> Option<String> {
        let mut parts = Vec::new();
        let failed: Vec<&WorkerBinding> =
            self.workers.iter().filter(|w| w.error.is_some()).collect();
        if let Some(first) = failed.first() {
            parts.push(format!(
                "could not bind {} of {} workers (worker {}: {})",
                failed.len(),
                self.threads,
                first.worker,
                first.error.as_deref().unwrap_or_default()
            ));
        }
        if self.oversubscribed {
            parts.push(format!(
                "{} workers on {} places: some share a CPU set",
                self.threads, self.places
            ));
        }
        (!parts.is_empty()).then(|| format!("--pin {}: {}", self.policy, parts.join("; ")))
    }

    /// `0:0 1:2 2:1` (worker:cpus as the OS reports them).
    pub fn summary(&self) -> String {
        self.workers
            .iter()
            .map(|w| format!("{}:{}", w.worker, format_cpu_list(&w.cpus)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A pool of `threads` workers placed by `policy` on this machine (the topology limited to the
/// CPUs the calling thread may use: call it from the main thread, not from a pinned worker),
/// bound through hwloc when available. Returns once every worker has bound itself and reported
/// its CPU set; binding failures are in the report ([`PinReport::warning`]), not errors.
pub fn build_pinned_pool(
    threads: usize,
    policy: PinPolicy,
) -> Result<(rayon::ThreadPool, PinReport)> {
    check_threads(threads)?;
    if policy == PinPolicy::None {
        return unpinned(threads);
    }
    let allowed = current_affinity().map_err(|e| {
        AltoError::InvalidArgument(format!("--pin {policy}: cannot read the CPU affinity: {e}"))
    })?;
    let topo = Topology::detect()?.restrict_to(&allowed)?;
    let backend = BindBackend::default_for(&topo);
    build_pinned_pool_on(threads, policy, &topo, backend)
}

/// [`build_pinned_pool`] on a given topology (used as is: no restriction to the allowed
/// CPUs) and backend.
pub fn build_pinned_pool_on(
    threads: usize,
    policy: PinPolicy,
    topo: &Topology,
    backend: BindBackend,
) -> Result<(rayon::ThreadPool, PinReport)> {
    check_threads(threads)?;
    if policy == PinPolicy::None {
        return unpinned(threads);
    }
    let plan = assignment(topo, policy, threads);
    let n_places = places(topo, policy).len();
    if n_places == 0 {
        return Err(AltoError::InvalidArgument(format!(
            "--pin {policy}: the topology has no CPUs to place workers on"
        )));
    }
    let binder = Binder::new(topo, backend)?;
    let errors: Arc<Mutex<Vec<Option<String>>>> = Arc::new(Mutex::new(vec![None; threads]));
    let handler_plan = Arc::new(plan.clone());
    let handler_errors = Arc::clone(&errors);
    let pool = builder(threads)
        .start_handler(move |i| {
            let (plan, errors) = (&handler_plan, &handler_errors);
            let Some(Some(cpus)) = plan.get(i) else {
                return;
            };
            // Nothing may unwind out of a start handler (rayon aborts the process).
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                binder.bind_current_thread(cpus)
            }));
            let err = match outcome {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("binding panicked".to_string()),
            };
            if let Some(e) = err {
                let mut errs = errors.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(slot) = errs.get_mut(i) {
                    *slot = Some(e);
                }
            }
        })
        .build()
        .map_err(|e| AltoError::InvalidArgument(format!("cannot start {threads} threads: {e}")))?;
    // The broadcast inside `finish` waits for every worker, so every start handler has run
    // (and recorded any failure) once it returns.
    let mut report = finish(&pool, policy, backend.name(), n_places, &plan);
    let errors = std::mem::take(&mut *errors.lock().unwrap_or_else(|p| p.into_inner()));
    for (w, e) in report.workers.iter_mut().zip(errors) {
        if e.is_some() {
            w.error = e;
        }
    }
    Ok((pool, report))
}

/// An unpinned pool (policy `none`) and its report.
fn unpinned(threads: usize) -> Result<(rayon::ThreadPool, PinReport)> {
    let pool = build_pool(threads)?;
    let report = finish(&pool, PinPolicy::None, "none", 0, &[]);
    Ok((pool, report))
}

/// Runs one broadcast (so every worker has started) in which each worker reads its CPU set.
fn finish(
    pool: &rayon::ThreadPool,
    policy: PinPolicy,
    backend: &'static str,
    n_places: usize,
    plan: &[Option<Vec<usize>>],
) -> PinReport {
    let threads = pool.current_num_threads();
    let readings = pool.broadcast(|ctx| (ctx.index(), current_affinity()));
    let workers = readings
        .into_iter()
        .map(|(i, cpus)| {
            let (cpus, error) = match cpus {
                Ok(c) => (c, None),
                Err(e) => (Vec::new(), Some(format!("cannot read the affinity: {e}"))),
            };
            WorkerBinding {
                worker: i,
                requested: plan.get(i).cloned().flatten(),
                cpus,
                error,
            }
        })
        .collect();
    PinReport {
        policy,
        backend,
        threads,
        places: n_places,
        oversubscribed: n_places > 0 && threads > n_places,
        workers,
    }
}

/// Binds the calling thread through the chosen backend.
enum Binder {
    Sched,
    #[cfg(feature = "hwloc")]
    Hwloc(Arc<hwlocality::Topology>),
}

impl Binder {
    fn new(topo: &Topology, backend: BindBackend) -> Result<Binder> {
        match backend {
            BindBackend::SchedAffinity => Ok(Binder::Sched),
            #[cfg(feature = "hwloc")]
            BindBackend::Hwloc => topo.hwloc.clone().map(Binder::Hwloc).ok_or_else(|| {
                AltoError::InvalidArgument(
                    "hwloc binding needs a topology read through hwloc".into(),
                )
            }),
            #[cfg(not(feature = "hwloc"))]
            BindBackend::Hwloc => {
                let _ = topo;
                Err(AltoError::InvalidArgument(
                    "this build has no hwloc (cargo feature `hwloc`)".into(),
                ))
            }
        }
    }

    fn bind_current_thread(&self, cpus: &[usize]) -> std::result::Result<(), String> {
        match self {
            Binder::Sched => set_current_affinity(cpus)
                .map_err(|e| format!("sched_setaffinity({}): {e}", format_cpu_list(cpus))),
            #[cfg(feature = "hwloc")]
            Binder::Hwloc(t) => {
                use hwlocality::bitmap::BitmapIndex;
                use hwlocality::cpu::binding::CpuBindingFlags;
                use hwlocality::cpu::cpuset::CpuSet;
                let mut set = CpuSet::new();
                for &c in cpus {
                    let idx = BitmapIndex::try_from(c)
                        .map_err(|_| format!("CPU {c} is beyond hwloc's range"))?;
                    set.set(idx);
                }
                t.bind_cpu(&set, CpuBindingFlags::THREAD)
                    .map_err(|e| format!("hwloc_set_cpubind({}): {e}", format_cpu_list(cpus)))
            }
        }
    }
}
