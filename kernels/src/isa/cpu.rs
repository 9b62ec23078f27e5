//! The CPU's identity from `cpuid`: vendor, family, model, stepping, brand string and the
//! feature flags kernel choice and measurement records look at. The one CPU identity of the
//! workspace (the harness's `CpuModel` is built from it).

/// Feature flags recorded in a [`CpuIdentity`], by their `/proc/cpuinfo` (and
/// `is_x86_feature_detected!`) names, plus `hypervisor` (running under a virtual machine).
pub const CPU_FLAGS: [&str; 13] = [
    "avx",
    "avx2",
    "fma",
    "bmi1",
    "bmi2",
    "popcnt",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
    "hypervisor",
];

/// Who the CPU is and which of [`CPU_FLAGS`] it has. `Copy` (fixed-size byte arrays for the
/// strings) so it can be passed by value to pure heuristics such as the decoder rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIdentity {
    /// Vendor is AMD (`AuthenticAMD`).
    pub amd: bool,
    /// Display family (base family + extended family when the base is 0xf).
    pub family: u32,
    /// Display model (extended model prepended for families 6 and 0xf).
    pub model: u32,
    pub stepping: u32,
    /// The CPU can run BMI2 (`pext`/`pdep`).
    pub has_bmi2: bool,
    pub has_avx2: bool,
    pub has_fma: bool,
    pub has_avx512f: bool,
    vendor: [u8; 12],
    brand: [u8; 48],
    /// Bit `k` set: the CPU has `CPU_FLAGS[k]`.
    flag_bits: u32,
}

impl CpuIdentity {
    /// Asks the CPU (`cpuid` leaves 0, 1 and the brand-string leaves; feature flags as the
    /// standard library detects them, which also checks the OS saves the registers).
    pub fn detect() -> CpuIdentity {
        let mut id = CpuIdentity {
            amd: false,
            family: 0,
            model: 0,
            stepping: 0,
            has_bmi2: false,
            has_avx2: false,
            has_fma: false,
            has_avx512f: false,
            vendor: [0; 12],
            brand: [0; 48],
            flag_bits: 0,
        };
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::__cpuid;
            // cpuid leaves 0, 1 and 0x8000_0000 exist on every x86-64 CPU (the intrinsic is
            // safe to call; it only reads identification registers).
            let (l0, l1) = (__cpuid(0), __cpuid(1));
            for (k, reg) in [l0.ebx, l0.edx, l0.ecx].into_iter().enumerate() {
                id.vendor[4 * k..4 * k + 4].copy_from_slice(&reg.to_le_bytes());
            }
            id.amd = &id.vendor == b"AuthenticAMD";
            let base = (l1.eax >> 8) & 0xf;
            let ext_family = (l1.eax >> 20) & 0xff;
            id.family = if base == 0xf { base + ext_family } else { base };
            let model = (l1.eax >> 4) & 0xf;
            let ext_model = (l1.eax >> 16) & 0xf;
            id.model = if base == 0x6 || base == 0xf {
                (ext_model << 4) | model
            } else {
                model
            };
            id.stepping = l1.eax & 0xf;
            if __cpuid(0x8000_0000).eax >= 0x8000_0004 {
                for (k, leaf) in (0x8000_0002u32..=0x8000_0004).enumerate() {
                    let r = __cpuid(leaf);
                    for (j, reg) in [r.eax, r.ebx, r.ecx, r.edx].into_iter().enumerate() {
                        let at = 16 * k + 4 * j;
                        id.brand[at..at + 4].copy_from_slice(&reg.to_le_bytes());
                    }
                }
            }
            let hypervisor = l1.ecx & (1 << 31) != 0;
            use std::arch::is_x86_feature_detected as has;
            let detected = [
                has!("avx"),
                has!("avx2"),
                has!("fma"),
                has!("bmi1"),
                has!("bmi2"),
                has!("popcnt"),
                has!("avx512f"),
                has!("avx512dq"),
                has!("avx512cd"),
                has!("avx512bw"),
                has!("avx512vl"),
                has!("avx512ifma"),
                hypervisor,
            ];
            for (k, yes) in detected.into_iter().enumerate() {
                id.flag_bits |= u32::from(yes) << k;
            }
            id.has_bmi2 = id.has_flag("bmi2") && id.has_flag("popcnt");
            id.has_avx2 = id.has_flag("avx2");
            id.has_fma = id.has_flag("fma");
            id.has_avx512f = id.has_flag("avx512f");
        }
        id
    }

    /// `GenuineIntel`, `AuthenticAMD`, ... (empty where unknown).
    pub fn vendor(&self) -> &str {
        text(&self.vendor)
    }

    /// The brand string (`AMD EPYC 9R14 96-Core Processor`), trimmed; empty where unknown.
    pub fn brand(&self) -> &str {
        text(&self.brand)
    }

    /// Whether the CPU has `flag`, one of [`CPU_FLAGS`] (any other name: false).
    pub fn has_flag(&self, flag: &str) -> bool {
        CPU_FLAGS
            .iter()
            .position(|&f| f == flag)
            .is_some_and(|k| self.flag_bits & (1 << k) != 0)
    }

    /// The [`CPU_FLAGS`] this CPU has, in that order.
    pub fn flags(&self) -> impl Iterator<Item = &'static str> + '_ {
        CPU_FLAGS.into_iter().filter(|f| self.has_flag(f))
    }

    /// Whether the CPU says it runs under a hypervisor.
    pub fn in_vm(&self) -> bool {
        self.has_flag("hypervisor")
    }
}

/// A NUL-padded ASCII register dump as trimmed text (empty if it is not UTF-8).
fn text(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..end]).unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_consistent() {
        let id = CpuIdentity::detect();
        assert_eq!(id.amd, id.vendor() == "AuthenticAMD");
        assert!(id.flags().all(|f| id.has_flag(f)));
        assert!(!id.has_flag("not-a-flag"));
        #[cfg(target_arch = "x86_64")]
        {
            assert!(!id.vendor().is_empty() && id.family > 0);
            assert_eq!(id.has_avx2, std::arch::is_x86_feature_detected!("avx2"));
        }
    }
}
