//! The operating-system side of the counters: opening, enabling, reading and closing one
//! counter through `perf_event_open` on Linux; elsewhere every counter is unavailable, with the
//! reason.

/// (count, enabled ns, running ns) of one counter.
pub type Sample = (u64, u64, u64);

#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(not(target_os = "linux"))]
pub use portable::*;

#[cfg(target_os = "linux")]
mod linux {
    use super::Sample;
    use crate::harness::counters::events::{EventSource, EventSpec, HwEvent, SwEvent, PMU_ROOT};
    use crate::harness::topology::CpuModel;
    use perf_event::events::{Dynamic, Hardware, Raw, Software};
    use perf_event::Builder;
    use std::io;

    pub type Handle = perf_event::Counter;

    /// What error messages need to know.
    pub struct Context {
        pub paranoid: Option<i32>,
        pub in_vm: bool,
    }

    impl Context {
        pub fn detect() -> Context {
            Context {
                paranoid: crate::harness::counters::events::perf_event_paranoid(),
                in_vm: CpuModel::detect().in_vm(),
            }
        }
    }

    fn errno_name(e: i32) -> &'static str {
        match e {
            libc::ENOENT => "ENOENT",
            libc::EACCES => "EACCES",
            libc::EPERM => "EPERM",
            libc::ENODEV => "ENODEV",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EINVAL => "EINVAL",
            libc::ENOSYS => "ENOSYS",
            libc::EMFILE => "EMFILE",
            libc::EBUSY => "EBUSY",
            _ => "error",
        }
    }

    /// Why opening `event` failed, in words.
    pub fn reason(err: &io::Error, event: &str, ctx: &Context) -> String {
        let Some(code) = err.raw_os_error() else {
            return format!("{err} (opening {event})");
        };
        let name = errno_name(code);
        match code {
            libc::ENOENT if ctx.in_vm => format!("no PMU in this VM ({name} opening {event})"),
            libc::ENOENT => format!("no PMU support for this event ({name} opening {event})"),
            libc::EACCES | libc::EPERM => format!(
                "not permitted ({name} opening {event}; perf_event_paranoid = {})",
                ctx.paranoid
                    .map_or_else(|| "unknown".to_string(), |p| p.to_string())
            ),
            libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL => {
                format!("unknown on this CPU ({name} opening {event})")
            }
            libc::ENOSYS => format!("perf_event_open is not available ({name} opening {event})"),
            libc::EMFILE => {
                format!("too many open files ({name} opening {event}): raise ulimit -n")
            }
            _ => format!("{err} ({name} opening {event})"),
        }
    }

    fn denied(e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
    }

    /// Opens `spec` on the calling thread; the note says when it fell back to user space only.
    pub fn open_thread(
        spec: &EventSpec,
        ctx: &Context,
    ) -> std::result::Result<(Handle, Option<String>), String> {
        let mut b = match &spec.source {
            EventSource::Hardware(h) => Builder::new(match h {
                HwEvent::Cycles => Hardware::CPU_CYCLES,
                HwEvent::Instructions => Hardware::INSTRUCTIONS,
                HwEvent::CacheReferences => Hardware::CACHE_REFERENCES,
                HwEvent::CacheMisses => Hardware::CACHE_MISSES,
                HwEvent::BranchMisses => Hardware::BRANCH_MISSES,
            }),
            EventSource::Raw(config) => Builder::new(Raw::new(*config)),
            EventSource::Software(s) => Builder::new(match s {
                SwEvent::TaskClock => Software::TASK_CLOCK,
                SwEvent::PageFaults => Software::PAGE_FAULTS,
                SwEvent::ContextSwitches => Software::CONTEXT_SWITCHES,
            }),
            _ => return Err(format!("{} is not a per-thread event", spec.name)),
        };
        // Builder's defaults: this thread, any CPU, disabled, user space only, with the
        // enabled/running times read back.
        if let EventSource::Software(_) = spec.source {
            b.include_kernel();
            match b.build() {
                Ok(c) => return Ok((c, None)),
                Err(e) if denied(&e) => {
                    b.exclude_kernel(true);
                    return b
                        .build()
                        .map(|c| {
                            let note = format!(
                                "user space only: kernel counting not permitted \
                                 (perf_event_paranoid = {})",
                                ctx.paranoid
                                    .map_or_else(|| "unknown".to_string(), |p| p.to_string())
                            );
                            (c, Some(note))
                        })
                        .map_err(|e| reason(&e, &spec.name, ctx));
                }
                Err(e) => return Err(reason(&e, &spec.name, ctx)),
            }
        }
        b.build()
            .map(|c| (c, None))
            .map_err(|e| reason(&e, &spec.name, ctx))
    }

    /// Opens `event` of every PMU in `pmus` on each CPU of its `cpumask`, system-wide.
    pub fn open_uncore(
        pmus: &[String],
        event: &str,
        name: &str,
        ctx: &Context,
    ) -> std::result::Result<Vec<Handle>, String> {
        let mut counters = Vec::new();
        for pmu in pmus {
            let mut builder = Dynamic::builder(pmu).map_err(|e| format!("{pmu}: {e}"))?;
            builder
                .event(event)
                .map_err(|e| format!("{pmu}/{event}: {e}"))?;
            let dynamic = builder.build().map_err(|e| format!("{pmu}/{event}: {e}"))?;
            let mask = std::fs::read_to_string(format!("{}/{pmu}/cpumask", PMU_ROOT))
                .ok()
                .and_then(|s| crate::harness::affinity::parse_cpu_list(&s))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![0]);
            for cpu in mask {
                let c = Builder::new(dynamic)
                    .any_pid()
                    .one_cpu(cpu)
                    .exclude_kernel(false)
                    .exclude_hv(false)
                    .build()
                    .map_err(|e| reason(&e, &format!("{name} ({pmu})"), ctx))?;
                counters.push(c);
            }
        }
        Ok(counters)
    }

    pub fn read(c: &mut Handle) -> io::Result<Sample> {
        let r = c.read_count_and_time()?;
        Ok((r.count, r.time_enabled, r.time_running))
    }

    pub fn enable(c: &mut Handle) -> io::Result<()> {
        c.enable()
    }

    pub fn disable(c: &mut Handle) -> io::Result<()> {
        c.disable()
    }

    /// Raises the soft open-file limit towards `needed` (within the hard limit): every worker
    /// holds one descriptor per event.
    pub fn ensure_fd_limit(needed: usize) {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one `rlimit` into `lim`.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return;
        }
        // Leave room for the descriptors the process already holds (assumed within half the
        // current limit).
        let needed = needed as libc::rlim_t + lim.rlim_cur / 2;
        if lim.rlim_cur >= needed {
            return;
        }
        lim.rlim_cur = needed.min(lim.rlim_max);
        // SAFETY: setrlimit reads one `rlimit`; failing leaves the limit as it was.
        unsafe {
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod portable {
    use super::Sample;
    use crate::harness::counters::events::EventSpec;
    use std::io;

    pub enum Handle {}

    pub struct Context {
        pub paranoid: Option<i32>,
    }

    impl Context {
        pub fn detect() -> Context {
            Context { paranoid: None }
        }
    }

    const WHY: &str = "perf_event counters are implemented for Linux only";

    pub fn open_thread(
        _spec: &EventSpec,
        _ctx: &Context,
    ) -> std::result::Result<(Handle, Option<String>), String> {
        Err(WHY.into())
    }

    pub fn open_uncore(
        _pmus: &[String],
        _event: &str,
        _name: &str,
        _ctx: &Context,
    ) -> std::result::Result<Vec<Handle>, String> {
        Err(WHY.into())
    }

    pub fn read(c: &mut Handle) -> io::Result<Sample> {
        match *c {}
    }

    pub fn enable(c: &mut Handle) -> io::Result<()> {
        match *c {}
    }

    pub fn disable(c: &mut Handle) -> io::Result<()> {
        match *c {}
    }

    pub fn ensure_fd_limit(_needed: usize) {}
}
