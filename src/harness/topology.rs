//! What the machine is made of: packages, NUMA nodes, cores, processing units (hardware
//! threads) and caches, read through hwloc (cargo feature `hwloc`, the default) or, without it,
//! from `/sys/devices/system`. Pinning policies ([`crate::harness::pool`]) place workers on it and the
//! roofline probe sizes its working sets from [`Topology::data_cache_bytes`].
//!
//! Both sources are normalized to one form: packages, NUMA nodes and cores are numbered
//! `0..count` in machine order, and [`Topology::pus`] lists the PUs in *compact* order
//! (package, NUMA node, core, OS number), so a core's PUs are adjacent.

use crate::error::{AltoError, Result};
use crate::harness::affinity::parse_cpu_list;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// One processing unit (hardware thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Pu {
    /// The OS CPU number (what `taskset`, `sched_setaffinity` and `/sys` use).
    pub os_index: usize,
    /// Machine-wide core number, `0..cores`.
    pub core: usize,
    /// Package (socket) number, `0..packages`.
    pub package: usize,
    /// NUMA node number, `0..numa_nodes`.
    pub numa: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

impl CacheKind {
    fn suffix(self) -> &'static str {
        match self {
            CacheKind::Data => "d",
            CacheKind::Instruction => "i",
            CacheKind::Unified => "",
        }
    }
}

/// One cache level and kind, e.g. "L2 unified, 1 MiB, 8 instances each shared by 2 PUs".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheInfo {
    pub level: u32,
    pub kind: CacheKind,
    /// Size of one instance.
    pub size_bytes: u64,
    pub line_bytes: Option<u64>,
    pub instances: usize,
    /// PUs sharing one instance.
    pub pus_per_instance: usize,
}

impl CacheInfo {
    /// `L1d`, `L2`, ...
    pub fn name(&self) -> String {
        format!("L{}{}", self.level, self.kind.suffix())
    }
}

/// The machine's topology summary.
#[derive(Clone, Debug, Serialize)]
pub struct Topology {
    /// Where it was read: `hwloc (API 2.8.0)`, `sysfs` or `synthetic`.
    pub source: String,
    pub packages: usize,
    pub numa_nodes: usize,
    pub cores: usize,
    /// Every PU, in compact order.
    pub pus: Vec<Pu>,
    /// Sorted by level, then data, instruction, unified.
    pub caches: Vec<CacheInfo>,
    #[serde(skip)]
    #[cfg(feature = "hwloc")]
    pub(crate) hwloc: Option<std::sync::Arc<hwlocality::Topology>>,
}

/// (level, kind, size, line size) of a cache.
type CacheKey = (u32, CacheKind, u64, Option<u64>);
/// Per cache: (instances, PUs sharing one).
type CacheCounts = BTreeMap<CacheKey, (usize, usize)>;

fn cache_list(counts: CacheCounts) -> Vec<CacheInfo> {
    counts
        .into_iter()
        .map(
            |((level, kind, size_bytes, line_bytes), (instances, pus_per_instance))| CacheInfo {
                level,
                kind,
                size_bytes,
                line_bytes,
                instances,
                pus_per_instance,
            },
        )
        .collect()
}

/// A PU before numbering: any keys that identify its core, package and NUMA node.
#[derive(Clone, Copy, Debug)]
struct RawPu {
    os: usize,
    core_key: usize,
    package_key: usize,
    numa_key: usize,
}

impl Topology {
    /// The machine's topology: through hwloc when built with it (falling back to `/sys` if
    /// hwloc fails to load), else from `/sys`.
    pub fn detect() -> Result<Topology> {
        #[cfg(feature = "hwloc")]
        let t = Topology::from_hwloc().or_else(|hwloc_err| {
            Topology::from_sysfs().map_err(|e| {
                AltoError::InvalidArgument(format!(
                    "cannot read the topology: hwloc: {hwloc_err}; /sys: {e}"
                ))
            })
        });
        #[cfg(not(feature = "hwloc"))]
        let t = Topology::from_sysfs();
        t
    }

    /// Reads `/sys/devices/system/{cpu,node}`.
    pub fn from_sysfs() -> Result<Topology> {
        Topology::from_sysfs_at(Path::new("/sys/devices/system"))
    }

    /// Reads a sysfs tree rooted at `root` (the directory holding `cpu/` and `node/`).
    pub fn from_sysfs_at(root: &Path) -> Result<Topology> {
        let read = |rel: &str| -> Result<String> {
            let p = root.join(rel);
            std::fs::read_to_string(&p).map_err(|e| AltoError::io(p, e))
        };
        let bad = |what: String| AltoError::InvalidArgument(format!("{}: {what}", root.display()));
        let online = parse_cpu_list(&read("cpu/online")?)
            .ok_or_else(|| bad("unreadable cpu/online".into()))?;
        if online.is_empty() {
            return Err(bad("no online CPUs".into()));
        }
        // NUMA nodes: node<N>/cpulist; a machine without node/ is one node.
        let mut numa_of = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(root.join("node")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(id) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                let list = read(&format!("node/{name}/cpulist"))?;
                for cpu in parse_cpu_list(&list)
                    .ok_or_else(|| bad(format!("unreadable node/{name}/cpulist")))?
                {
                    numa_of.entry(cpu).or_insert(id);
                }
            }
        }
        let mut raw = Vec::with_capacity(online.len());
        // Every (cache, sharing set) seen from any CPU.
        let mut caches: BTreeSet<(CacheKey, Vec<usize>)> = BTreeSet::new();
        for &cpu in &online {
            let base = format!("cpu/cpu{cpu}");
            let package_key = read(&format!("{base}/topology/physical_package_id"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .map_or(0, |p| p.max(0) as usize);
            // A core is identified by its sibling set: core_id alone repeats across packages.
            let core_key = read(&format!("{base}/topology/thread_siblings_list"))
                .ok()
                .and_then(|s| parse_cpu_list(&s))
                .and_then(|s| s.first().copied())
                .unwrap_or(cpu);
            raw.push(RawPu {
                os: cpu,
                core_key,
                package_key,
                numa_key: numa_of.get(&cpu).copied().unwrap_or(0),
            });
            for index in 0.. {
                let dir = format!("{base}/cache/index{index}");
                if !root.join(&dir).exists() {
                    break;
                }
                let field = |f: &str| read(&format!("{dir}/{f}")).map(|s| s.trim().to_string());
                let (Ok(level), Ok(kind), Ok(size)) =
                    (field("level"), field("type"), field("size"))
                else {
                    continue;
                };
                let (Ok(level), Some(size)) = (level.parse::<u32>(), parse_size(&size)) else {
                    continue;
                };
                let kind = match kind.as_str() {
                    "Data" => CacheKind::Data,
                    "Instruction" => CacheKind::Instruction,
                    _ => CacheKind::Unified,
                };
                let line = field("coherency_line_size")
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok());
                let shared = field("shared_cpu_list")
                    .ok()
                    .and_then(|s| parse_cpu_list(&s))
                    .unwrap_or_else(|| vec![cpu]);
                caches.insert(((level, kind, size, line), shared));
            }
        }
        // One instance per distinct sharing set.
        let mut grouped = CacheCounts::new();
        for (key, shared) in caches {
            let e = grouped.entry(key).or_default();
            e.0 += 1;
            e.1 = e.1.max(shared.len());
        }
        Ok(Topology::normalize(
            "sysfs".into(),
            &raw,
            cache_list(grouped),
        ))
    }

    /// Reads the topology through hwloc.
    #[cfg(feature = "hwloc")]
    pub fn from_hwloc() -> std::result::Result<Topology, String> {
        use hwlocality::object::attributes::ObjectAttributes;
        use hwlocality::object::types::{CacheType, ObjectType};
        let topo = hwlocality::Topology::new().map_err(|e| e.to_string())?;
        let numas: Vec<(usize, Vec<usize>)> = topo
            .objects_with_type(ObjectType::NUMANode)
            .map(|n| {
                let cpus = n
                    .cpuset()
                    .map(|s| s.iter_set().map(usize::from).collect())
                    .unwrap_or_default();
                (n.logical_index(), cpus)
            })
            .collect();
        let mut raw = Vec::new();
        for pu in topo.objects_with_type(ObjectType::PU) {
            let Some(os) = pu.os_index() else { continue };
            // Without a Core object (some VMs), a PU is its own core.
            let core_key = pu
                .first_ancestor_with_type(ObjectType::Core)
                .map_or(os, |c| {
                    c.cpuset()
                        .and_then(|s| s.first_set())
                        .map_or(os, usize::from)
                });
            let package_key = pu
                .first_ancestor_with_type(ObjectType::Package)
                .map_or(0, |p| p.logical_index());
            let numa_key = numas
                .iter()
                .find(|(_, cpus)| cpus.contains(&os))
                .map_or(0, |(id, _)| *id);
            raw.push(RawPu {
                os,
                core_key,
                package_key,
                numa_key,
            });
        }
        if raw.is_empty() {
            return Err("hwloc reports no PUs with an OS index".into());
        }
        let mut grouped = CacheCounts::new();
        for ty in [
            ObjectType::L1Cache,
            ObjectType::L2Cache,
            ObjectType::L3Cache,
            ObjectType::L4Cache,
            ObjectType::L5Cache,
            ObjectType::L1ICache,
            ObjectType::L2ICache,
            ObjectType::L3ICache,
        ] {
            for obj in topo.objects_with_type(ty) {
                let Some(ObjectAttributes::Cache(c)) = obj.attributes() else {
                    continue;
                };
                let Some(size) = c.size() else { continue };
                let kind = match c.cache_type() {
                    CacheType::Data => CacheKind::Data,
                    CacheType::Instruction => CacheKind::Instruction,
                    _ => CacheKind::Unified,
                };
                let sharing = obj.cpuset().and_then(|s| s.weight()).unwrap_or(1);
                let e = grouped
                    .entry((
                        c.depth() as u32,
                        kind,
                        size.get(),
                        c.line_size().map(|l| l.get() as u64),
                    ))
                    .or_default();
                e.0 += 1;
                e.1 = e.1.max(sharing);
            }
        }
        let caches = cache_list(grouped);
        let v = hwlocality::hwloc_api_version();
        // The API version (2.8.0 for hwloc 2.8 and 2.9), not the release.
        let source = format!("hwloc (API {}.{}.{})", v >> 16, (v >> 8) & 0xff, v & 0xff);
        let mut t = Topology::normalize(source, &raw, caches);
        t.hwloc = Some(std::sync::Arc::new(topo));
        Ok(t)
    }

    /// A regular machine: `packages` x `numa_per_package` x `cores_per_numa` x `pus_per_core`,
    /// with OS numbers assigned the way Linux usually does on SMT machines (all first hardware
    /// threads of every core, then all second ones), for planning and tests.
    pub fn synthetic(
        packages: usize,
        numa_per_package: usize,
        cores_per_numa: usize,
        pus_per_core: usize,
    ) -> Topology {
        let cores = packages * numa_per_package * cores_per_numa;
        let mut raw = Vec::new();
        for t in 0..pus_per_core {
            for c in 0..cores {
                let numa = c / cores_per_numa;
                raw.push(RawPu {
                    os: t * cores + c,
                    core_key: c,
                    package_key: numa / numa_per_package,
                    numa_key: numa,
                });
            }
        }
        Topology::normalize("synthetic".into(), &raw, Vec::new())
    }

    /// Numbers packages, NUMA nodes and cores `0..` in machine order and sorts the PUs compactly.
    fn normalize(source: String, raw: &[RawPu], caches: Vec<CacheInfo>) -> Topology {
        let rank = |keys: Vec<usize>| -> BTreeMap<usize, usize> {
            let mut k = keys;
            k.sort_unstable();
            k.dedup();
            k.into_iter().enumerate().map(|(i, key)| (key, i)).collect()
        };
        let packages = rank(raw.iter().map(|p| p.package_key).collect());
        let numas = rank(raw.iter().map(|p| p.numa_key).collect());
        // Cores ordered by (package, NUMA node, lowest OS number).
        let mut core_order: BTreeMap<usize, (usize, usize, usize)> = BTreeMap::new();
        for p in raw {
            let key = (packages[&p.package_key], numas[&p.numa_key], p.os);
            core_order
                .entry(p.core_key)
                .and_modify(|k| *k = (*k).min(key))
                .or_insert(key);
        }
        let mut cores: Vec<(usize, (usize, usize, usize))> = core_order.into_iter().collect();
        cores.sort_by_key(|&(_, k)| k);
        let core_num: BTreeMap<usize, usize> = cores
            .iter()
            .enumerate()
            .map(|(i, &(key, _))| (key, i))
            .collect();
        let mut pus: Vec<Pu> = raw
            .iter()
            .map(|p| Pu {
                os_index: p.os,
                core: core_num[&p.core_key],
                package: packages[&p.package_key],
                numa: numas[&p.numa_key],
            })
            .collect();
        pus.sort_by_key(|p| (p.package, p.numa, p.core, p.os_index));
        pus.dedup_by_key(|p| p.os_index);
        Topology {
            source,
            packages: packages.len(),
            numa_nodes: numas.len(),
            cores: cores.len(),
            pus,
            caches,
            #[cfg(feature = "hwloc")]
            hwloc: None,
        }
    }

    /// The same machine limited to the PUs in `allowed` (OS numbers), renumbered; an error if
    /// none remains. Caches are kept as the whole machine has them.
    pub fn restrict_to(&self, allowed: &[usize]) -> Result<Topology> {
        let raw: Vec<RawPu> = self
            .pus
            .iter()
            .filter(|p| allowed.contains(&p.os_index))
            .map(|p| RawPu {
                os: p.os_index,
                core_key: p.core,
                package_key: p.package,
                numa_key: p.numa,
            })
            .collect();
        if raw.is_empty() {
            return Err(AltoError::InvalidArgument(format!(
                "none of the allowed CPUs ({}) is in the topology",
                crate::harness::affinity::format_cpu_list(allowed)
            )));
        }
        #[allow(unused_mut)] // assigned only with hwloc
        let mut t = Topology::normalize(self.source.clone(), &raw, self.caches.clone());
        #[cfg(feature = "hwloc")]
        {
            t.hwloc = self.hwloc.clone();
        }
        Ok(t)
    }

    /// OS numbers of every PU, sorted.
    pub fn cpus(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.pus.iter().map(|p| p.os_index).collect();
        v.sort_unstable();
        v
    }

    /// OS numbers of core `core`'s PUs, sorted.
    pub fn core_cpus(&self, core: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .pus
            .iter()
            .filter(|p| p.core == core)
            .map(|p| p.os_index)
            .collect();
        v.sort_unstable();
        v
    }

    /// The PU with OS number `os`.
    pub fn pu(&self, os: usize) -> Option<&Pu> {
        self.pus.iter().find(|p| p.os_index == os)
    }

    /// Size of one instance of the data (or unified) cache at `level`.
    pub fn data_cache_bytes(&self, level: u32) -> Option<u64> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.kind != CacheKind::Instruction)
            .map(|c| c.size_bytes)
    }

    /// Whether hwloc can bind threads on this topology (it was read through hwloc).
    pub fn has_hwloc(&self) -> bool {
        #[cfg(feature = "hwloc")]
        {
            self.hwloc.is_some()
        }
        #[cfg(not(feature = "hwloc"))]
        false
    }

    /// A few lines for people.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "source      {}", self.source);
        let _ = writeln!(s, "packages    {}", self.packages);
        let _ = writeln!(s, "numa nodes  {}", self.numa_nodes);
        let _ = writeln!(s, "cores       {}", self.cores);
        let per_core = match (self.pus.len(), self.cores) {
            (_, 0) => "-".to_string(),
            (p, c) if p % c == 0 => (p / c).to_string(),
            (p, c) => format!("{:.2}", p as f64 / c as f64),
        };
        let _ = writeln!(s, "pus         {} ({per_core} per core)", self.pus.len());
        for c in &self.caches {
            let _ = writeln!(
                s,
                "{:<11} {} x {}, each shared by {} PU{}{}",
                c.name(),
                c.instances,
                human_bytes(c.size_bytes),
                c.pus_per_instance,
                if c.pus_per_instance == 1 { "" } else { "s" },
                c.line_bytes
                    .map_or(String::new(), |l| format!(", {l} B lines"))
            );
        }
        let _ = writeln!(s, "\npu (os)  core  numa  package");
        for p in &self.pus {
            let _ = writeln!(
                s,
                "{:<8} {:<5} {:<5} {}",
                p.os_index, p.core, p.numa, p.package
            );
        }
        s
    }
}

/// `1 MiB`, `32 KiB`, `512 B`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, unit) in UNITS {
        if b >= unit && b.is_multiple_of(unit) {
            return format!("{} {name}", b / unit);
        }
    }
    for (name, unit) in UNITS {
        if b >= unit {
            return format!("{:.1} {name}", b as f64 / unit as f64);
        }
    }
    format!("{b} B")
}

/// A sysfs cache size: `32K`, `1024K`, `2M`, `512`.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

/// The CPU as the records and `alto topo` print it, built from the workspace's one CPU identity
/// (`cpuid`, [`alto_kernels::CpuIdentity`]). `flags` are the kernel-relevant ones
/// ([`alto_kernels::isa::cpu::CPU_FLAGS`]), named as in `/proc/cpuinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuModel {
    /// `GenuineIntel`, `AuthenticAMD`, ... (empty where unknown).
    pub vendor: String,
    pub name: String,
    pub family: u32,
    pub model: u32,
    pub flags: Vec<String>,
}

impl CpuModel {
    /// This CPU, from `cpuid`.
    pub fn detect() -> CpuModel {
        CpuModel::from_identity(&alto_kernels::CpuIdentity::detect())
    }

    /// The printable form of `id`.
    pub fn from_identity(id: &alto_kernels::CpuIdentity) -> CpuModel {
        CpuModel {
            vendor: id.vendor().to_string(),
            name: id.brand().to_string(),
            family: id.family,
            model: id.model,
            flags: id.flags().map(String::from).collect(),
        }
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    pub fn is_intel(&self) -> bool {
        self.vendor == "GenuineIntel"
    }

    pub fn is_amd(&self) -> bool {
        self.vendor == "AuthenticAMD"
    }

    /// Whether the CPU says it runs under a hypervisor.
    pub fn in_vm(&self) -> bool {
        self.has_flag("hypervisor")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_is_compact_and_counted() {
        let t = Topology::synthetic(2, 2, 2, 2);
        assert_eq!(
            (t.packages, t.numa_nodes, t.cores, t.pus.len()),
            (2, 4, 8, 16)
        );
        // Core 0 holds OS CPUs 0 and 8 (Linux numbering), adjacent in compact order.
        assert_eq!(t.core_cpus(0), vec![0, 8]);
        assert_eq!(t.pus[0].os_index, 0);
        assert_eq!(t.pus[1].os_index, 8);
        for w in t.pus.windows(2) {
            assert!((w[0].package, w[0].numa, w[0].core) <= (w[1].package, w[1].numa, w[1].core));
        }
        assert_eq!(
            t.pu(13).map(|p| (p.core, p.numa, p.package)),
            Some((5, 2, 1))
        );
    }

    #[test]
    fn restrict_renumbers() {
        let t = Topology::synthetic(2, 1, 2, 2); // cores 0,1 in package 0; 2,3 in package 1
        let r = t.restrict_to(&[2, 3, 6]).unwrap(); // cores 2 and 3 (core 2 = {2, 6})
        assert_eq!(
            (r.packages, r.numa_nodes, r.cores, r.pus.len()),
            (1, 1, 2, 3)
        );
        assert_eq!(r.core_cpus(0), vec![2, 6]);
        assert!(t.restrict_to(&[99]).is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(human_bytes(32 << 10), "32 KiB");
        assert_eq!(human_bytes(1536 << 10), "1536 KiB"); // exact units first
        assert_eq!(human_bytes(1_600_000), "1.5 MiB");
        assert_eq!(human_bytes(100), "100 B");
    }

    #[test]
    fn cpu_model_is_the_cpuid_identity() {
        let id = alto_kernels::CpuIdentity::detect();
        let m = CpuModel::detect();
        assert_eq!(m, CpuModel::from_identity(&id));
        assert_eq!((m.is_amd(), m.in_vm()), (id.amd, id.in_vm()));
        assert_eq!(m.has_flag("avx2"), id.has_avx2);
        assert!(m.flags.iter().all(|f| id.has_flag(f)));
    }
}
