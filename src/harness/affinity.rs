//! The calling thread's CPU affinity through the plain OS calls (`sched_getaffinity` /
//! `sched_setaffinity`): the fallback binder when built without hwloc, and the independent
//! read-back every pinned worker reports whichever binder placed it.
//!
//! CPU sets are sorted lists of OS CPU numbers (the numbers `taskset` and `/sys` use).

use std::io;

/// Parses a kernel CPU list such as `0-3,8,10-11` (as in `/sys/.../cpulist` files). An empty
/// string is the empty set.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Formats a sorted CPU set as a kernel CPU list (`0-3,8`); the empty set as `-`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "-".into();
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    /// Words of a CPU mask buffer: 64 words = 4096 CPUs; grown when the kernel asks for more.
    const START_WORDS: usize = 64;
    const MAX_WORDS: usize = 64 * 64;

    pub fn current() -> io::Result<Vec<usize>> {
        let mut words = START_WORDS;
        loop {
            let mut mask = vec![0u64; words];
            // SAFETY: the kernel writes at most `words * 8` bytes into `mask`, which is that
            // long; `cpu_set_t` is an opaque bit array, so the cast only changes the pointer type.
            let rc = unsafe {
                libc::sched_getaffinity(0, words * 8, mask.as_mut_ptr().cast::<libc::cpu_set_t>())
            };
            if rc == 0 {
                return Ok(bits(&mask));
            }
            let err = io::Error::last_os_error();
            // EINVAL: the buffer is smaller than the kernel's CPU mask.
            if err.raw_os_error() == Some(libc::EINVAL) && words < MAX_WORDS {
                words *= 4;
                continue;
            }
            return Err(err);
        }
    }

    pub fn set_current(cpus: &[usize]) -> io::Result<()> {
        let max = cpus
            .iter()
            .copied()
            .max()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"))?;
        let words = (max / 64 + 1).max(START_WORDS);
        let mut mask = vec![0u64; words];
        for &c in cpus {
            mask[c / 64] |= 1 << (c % 64);
        }
        // SAFETY: the kernel reads `words * 8` bytes from `mask`, which is that long.
        let rc = unsafe {
            libc::sched_setaffinity(0, words * 8, mask.as_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn bits(mask: &[u64]) -> Vec<usize> {
        let mut cpus = Vec::new();
        for (w, &word) in mask.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                cpus.push(w * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
        }
        cpus
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    pub fn current() -> io::Result<Vec<usize>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread affinity is implemented for Linux only",
        ))
    }

    pub fn set_current(_cpus: &[usize]) -> io::Result<()> {
        current().map(|_| ())
    }
}

/// The CPUs the calling thread may run on (for the main thread, the process's mask as
/// `taskset` or a cgroup set it).
pub fn current_affinity() -> io::Result<Vec<usize>> {
    imp::current()
}

/// Restricts the calling thread to `cpus` (never other threads of the process).
pub fn set_current_affinity(cpus: &[usize]) -> io::Result<()> {
    imp::set_current(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "-");
        assert_eq!(format_cpu_list(&[7]), "7");
    }

    #[test]
    fn affinity_reads_back_what_was_set() {
        // On a fresh thread, so the test harness's own threads keep their masks.
        std::thread::spawn(|| {
            let all = current_affinity().expect("sched_getaffinity");
            assert!(!all.is_empty());
            set_current_affinity(&all[..1]).expect("sched_setaffinity");
            assert_eq!(current_affinity().unwrap(), vec![all[0]]);
            set_current_affinity(&all).unwrap();
            assert_eq!(current_affinity().unwrap(), all);
            assert!(set_current_affinity(&[]).is_err());
        })
        .join()
        .unwrap();
    }
}
