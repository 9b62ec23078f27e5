//! Pinned pools: for 1..=available threads (and one more), every policy and every binding
//! backend, each worker reports the CPU set the OS holds for it, and the sets follow the
//! policy. The policies' shapes are also checked on synthetic multi-package SMT machines, and
//! the sysfs topology reader on a fake sysfs tree.

use alto::harness::affinity::current_affinity;
use alto::harness::pool::{
    assignment, build_pinned_pool, build_pinned_pool_on, places, BindBackend, PinPolicy,
};
use alto::harness::topology::{CacheKind, Topology};
use std::collections::HashSet;

/// The machine as this process may use it.
fn usable() -> (Topology, Vec<usize>) {
    let allowed = current_affinity().expect("sched_getaffinity");
    let topo = Topology::detect()
        .expect("topology")
        .restrict_to(&allowed)
        .unwrap();
    (topo, allowed)
}

fn backends(topo: &Topology) -> Vec<BindBackend> {
    let mut v = vec![BindBackend::SchedAffinity];
    if topo.has_hwloc() {
        v.push(BindBackend::Hwloc);
    }
    v
}

/// Checks that `sets` (worker i's CPU set) follows `policy` on `topo`, from the policy's
/// definition rather than from the planner's code. `allowed`: the mask workers inherit.
fn check_policy(topo: &Topology, policy: PinPolicy, sets: &[Vec<usize>], allowed: &[usize]) {
    let t = sets.len();
    let pu = |os: usize| {
        *topo
            .pu(os)
            .unwrap_or_else(|| panic!("cpu {os} not in topology"))
    };
    match policy {
        PinPolicy::None => {
            for s in sets {
                assert_eq!(s, allowed, "`none` must leave the inherited mask alone");
            }
        }
        PinPolicy::Compact | PinPolicy::Scatter => {
            for s in sets {
                assert_eq!(s.len(), 1, "{policy}: one PU per worker, got {s:?}");
            }
            let n = t.min(topo.pus.len());
            let first: Vec<usize> = sets[..n].iter().map(|s| s[0]).collect();
            let distinct: HashSet<usize> = first.iter().copied().collect();
            assert_eq!(
                distinct.len(),
                n,
                "{policy}: PUs reused before all are taken"
            );
            // Past the PU count, placement wraps around.
            for i in n..t {
                assert_eq!(sets[i], sets[i % topo.pus.len()]);
            }
            if policy == PinPolicy::Compact {
                // Leaving a core means every PU of it is taken; cores come in machine order.
                for i in 1..n {
                    let (a, b) = (pu(first[i - 1]), pu(first[i]));
                    if a.core != b.core {
                        let used = first[..i].iter().filter(|&&c| pu(c).core == a.core).count();
                        assert_eq!(
                            used,
                            topo.core_cpus(a.core).len(),
                            "compact left a core early"
                        );
                        assert!(b.core > a.core, "compact goes back to an earlier core");
                    }
                }
            } else {
                // Every prefix spreads over as many packages and NUMA nodes as it can, and no
                // core takes a second worker while a core is empty.
                for k in 1..=n {
                    let pk: HashSet<usize> = first[..k].iter().map(|&c| pu(c).package).collect();
                    let nm: HashSet<usize> = first[..k].iter().map(|&c| pu(c).numa).collect();
                    assert_eq!(
                        pk.len(),
                        k.min(topo.packages),
                        "scatter packages, prefix {k}"
                    );
                    assert_eq!(nm.len(), k.min(topo.numa_nodes), "scatter NUMA, prefix {k}");
                    let cores: Vec<usize> = first[..k].iter().map(|&c| pu(c).core).collect();
                    let distinct: HashSet<usize> = cores.iter().copied().collect();
                    if distinct.len() < cores.len() {
                        assert_eq!(
                            distinct.len(),
                            topo.cores,
                            "scatter doubled up a core early"
                        );
                    }
                }
            }
        }
        PinPolicy::Cores => {
            for s in sets {
                let core = pu(s[0]).core;
                assert_eq!(s, &topo.core_cpus(core), "cores: a whole core per worker");
            }
            let n = t.min(topo.cores);
            let cores: Vec<usize> = sets[..n].iter().map(|s| pu(s[0]).core).collect();
            assert_eq!(
                cores,
                (0..n).collect::<Vec<_>>(),
                "cores: one per core, in order"
            );
        }
    }
}

#[test]
fn every_policy_binds_every_worker_on_this_machine() {
    let (topo, allowed) = usable();
    let max = topo.pus.len();
    for backend in backends(&topo) {
        for policy in PinPolicy::ALL {
            for threads in 1..=max + 1 {
                let (pool, report) = build_pinned_pool_on(threads, policy, &topo, backend)
                    .unwrap_or_else(|e| panic!("{policy} x {threads} ({backend:?}): {e}"));
                // Only the workers were bound, never the calling thread (or the process).
                assert_eq!(current_affinity().unwrap(), allowed);
                assert_eq!(report.failures(), 0, "{:?}", report.warning());
                assert_eq!(report.workers.len(), threads);
                assert_eq!(pool.current_num_threads(), threads);
                for (i, w) in report.workers.iter().enumerate() {
                    assert_eq!(w.worker, i);
                    if let Some(req) = &w.requested {
                        assert_eq!(&w.cpus, req, "worker {i}: the OS set differs from the plan");
                    }
                }
                let sets: Vec<Vec<usize>> = report.workers.iter().map(|w| w.cpus.clone()).collect();
                check_policy(&topo, policy, &sets, &allowed);
                // Still true while working: each worker reads its own mask inside a job.
                let now = pool.broadcast(|ctx| (ctx.index(), current_affinity().unwrap()));
                for (i, cpus) in now {
                    assert_eq!(cpus, sets[i]);
                }
                let oversubscribed = policy != PinPolicy::None && threads > report.places;
                assert_eq!(report.oversubscribed, oversubscribed);
                assert_eq!(report.warning().is_some(), oversubscribed);
            }
        }
    }
}

#[test]
fn default_builder_pins_through_the_best_backend() {
    let (topo, allowed) = usable();
    for policy in PinPolicy::ALL {
        let (_pool, report) = build_pinned_pool(2, policy).unwrap();
        let expected_backend = match policy {
            PinPolicy::None => "none",
            _ if cfg!(feature = "hwloc") => "hwloc",
            _ => "sched_setaffinity",
        };
        assert_eq!(report.backend, expected_backend);
        let sets: Vec<Vec<usize>> = report.workers.iter().map(|w| w.cpus.clone()).collect();
        check_policy(&topo, policy, &sets, &allowed);
    }
    // The plain builder other code uses is the `none` policy.
    let pool = alto::harness::pool::build_pool(2).unwrap();
    for (_, cpus) in pool.broadcast(|ctx| (ctx.index(), current_affinity().unwrap())) {
        assert_eq!(cpus, allowed);
    }
    assert!(alto::harness::pool::build_pool(0).is_err());
    assert!(build_pinned_pool(0, PinPolicy::Compact).is_err());
}

#[test]
fn policies_have_their_shape_on_synthetic_machines() {
    // 2 packages x 2 NUMA nodes x 3 cores x 2 PUs, and a 1-package machine without SMT.
    for topo in [
        Topology::synthetic(2, 2, 3, 2),
        Topology::synthetic(1, 1, 4, 1),
        Topology::synthetic(4, 1, 2, 4),
    ] {
        let all = topo.cpus();
        for policy in PinPolicy::ALL {
            for threads in 1..=topo.pus.len() + 3 {
                let plan = assignment(&topo, policy, threads);
                assert_eq!(plan.len(), threads);
                let sets: Vec<Vec<usize>> = plan
                    .into_iter()
                    .map(|s| s.unwrap_or_else(|| all.clone()))
                    .collect();
                check_policy(&topo, policy, &sets, &all);
            }
        }
    }
    // Exact orders on the 2 x 2 x 3 x 2 machine (OS numbering: core c has PUs c and c + 12).
    let t = Topology::synthetic(2, 2, 3, 2);
    let firsts = |p: PinPolicy| -> Vec<usize> { places(&t, p).iter().map(|s| s[0]).collect() };
    assert_eq!(firsts(PinPolicy::Compact)[..6], [0, 12, 1, 13, 2, 14]);
    // Package 0 / node 0, package 1 / node 2, package 0 / node 1, package 1 / node 3, ...
    assert_eq!(firsts(PinPolicy::Scatter)[..8], [0, 6, 3, 9, 1, 7, 4, 10]);
    assert_eq!(places(&t, PinPolicy::Cores)[1], vec![1, 13]);
    assert_eq!(places(&t, PinPolicy::Cores).len(), 12);
    assert!(places(&t, PinPolicy::None).is_empty());
}

#[test]
fn binding_failures_are_reported_not_panics() {
    // A machine whose only CPU does not exist here: every bind fails, once per worker.
    let bogus = Topology::synthetic(1, 1, 1, 1).restrict_to(&[0]).unwrap();
    let mut far = bogus.clone();
    far.pus[0].os_index = 4000;
    let (pool, report) =
        build_pinned_pool_on(2, PinPolicy::Compact, &far, BindBackend::SchedAffinity).unwrap();
    assert_eq!(report.failures(), 2);
    let w = report.warning().unwrap();
    assert!(
        w.contains("--pin compact") && w.contains("could not bind 2 of 2"),
        "{w}"
    );
    assert_eq!(w.matches("could not bind").count(), 1, "reported once: {w}");
    // The pool still works, unpinned.
    assert_eq!(pool.install(|| 6 * 7), 42);
    // hwloc binding needs a topology read through hwloc.
    assert!(build_pinned_pool_on(1, PinPolicy::Compact, &far, BindBackend::Hwloc).is_err());
}

#[test]
fn unknown_policy_names_the_flag() {
    let e = "bogus".parse::<PinPolicy>().unwrap_err().to_string();
    assert!(e.contains("--pin") && e.contains("bogus"), "{e}");
    for p in PinPolicy::ALL {
        assert_eq!(p.name().parse::<PinPolicy>().unwrap(), p);
    }
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn sysfs_reader_on_a_fake_two_socket_smt_machine() {
    // 2 packages x 2 cores x 2 threads; CPUs n and n + 4 are siblings; one NUMA node per
    // package; private L1d/L2 per core, one L3 per package.
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(&r.join("cpu/online"), "0-7\n");
    for cpu in 0..8usize {
        let core = cpu % 4;
        let pkg = core / 2;
        let base = r.join(format!("cpu/cpu{cpu}"));
        write(
            &base.join("topology/physical_package_id"),
            &format!("{pkg}\n"),
        );
        write(&base.join("topology/core_id"), &format!("{}\n", core % 2));
        write(
            &base.join("topology/thread_siblings_list"),
            &format!("{core},{}\n", core + 4),
        );
        let caches = [
            (1, "Data", "48K", format!("{core},{}", core + 4)),
            (1, "Instruction", "32K", format!("{core},{}", core + 4)),
            (2, "Unified", "2048K", format!("{core},{}", core + 4)),
            (
                3,
                "Unified",
                "105M",
                format!(
                    "{}-{},{}-{}",
                    pkg * 2,
                    pkg * 2 + 1,
                    pkg * 2 + 4,
                    pkg * 2 + 5
                ),
            ),
        ];
        for (i, (level, kind, size, shared)) in caches.iter().enumerate() {
            let d = base.join(format!("cache/index{i}"));
            write(&d.join("level"), &format!("{level}\n"));
            write(&d.join("type"), &format!("{kind}\n"));
            write(&d.join("size"), &format!("{size}\n"));
            write(&d.join("coherency_line_size"), "64\n");
            write(&d.join("shared_cpu_list"), &format!("{shared}\n"));
        }
    }
    write(&r.join("node/node0/cpulist"), "0-1,4-5\n");
    write(&r.join("node/node1/cpulist"), "2-3,6-7\n");
    let t = Topology::from_sysfs_at(r).unwrap();
    assert_eq!(t.source, "sysfs");
    assert_eq!(
        (t.packages, t.numa_nodes, t.cores, t.pus.len()),
        (2, 2, 4, 8)
    );
    assert_eq!(t.core_cpus(0), vec![0, 4]);
    assert_eq!(t.core_cpus(3), vec![3, 7]);
    assert_eq!(
        t.pu(6).map(|p| (p.core, p.numa, p.package)),
        Some((2, 1, 1))
    );
    let names: Vec<String> = t.caches.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["L1d", "L1i", "L2", "L3"]);
    let l3 = &t.caches[3];
    assert_eq!(
        (l3.instances, l3.pus_per_instance, l3.size_bytes),
        (2, 4, 105 << 20)
    );
    assert_eq!(t.caches[0].kind, CacheKind::Data);
    assert_eq!(
        (t.caches[0].instances, t.caches[0].pus_per_instance),
        (4, 2)
    );
    assert_eq!(t.data_cache_bytes(1), Some(48 << 10));
    assert_eq!(t.data_cache_bytes(2), Some(2 << 20));
    assert_eq!(t.data_cache_bytes(4), None);
    // Policies on it.
    let first = |p| places(&t, p).iter().map(|s| s[0]).collect::<Vec<_>>();
    assert_eq!(first(PinPolicy::Compact), [0, 4, 1, 5, 2, 6, 3, 7]);
    assert_eq!(first(PinPolicy::Scatter), [0, 2, 1, 3, 4, 6, 5, 7]);
}

#[test]
fn this_machine_reads_the_same_from_sysfs_and_the_default_source() {
    let a = Topology::from_sysfs().unwrap();
    let b = Topology::detect().unwrap();
    assert_eq!(
        (a.packages, a.numa_nodes, a.cores, &a.pus),
        (b.packages, b.numa_nodes, b.cores, &b.pus)
    );
    assert!(!a.pus.is_empty());
    assert!(b.data_cache_bytes(1).is_some(), "{:?}", b.caches);
    // L1 and L2 (at least) agree in size between the two readers.
    for level in [1, 2] {
        assert_eq!(
            a.data_cache_bytes(level),
            b.data_cache_bytes(level),
            "L{level}"
        );
    }
}
