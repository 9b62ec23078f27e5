//! Checks the machine code of the kernels in this very test binary (`objdump -d`):
//! - every AVX-512 entry point (`avx512_r8` .. `avx512_rdyn`) has `zmm` FMAs (`vfmadd*pd`);
//! - every AVX2 entry point has `ymm` FMAs and no `zmm` register;
//! - the BMI2 decoder is inlined: some instantiation of each entry point executes `pext`;
//! - no loop of an entry point contains a `call` (other than to cold panic/error paths), so
//!   the decoder, the sink and every intrinsic were inlined into the hot loop.
//!
//! Entry points are `#[inline(never)]` and named like their kernels, so they are found by
//! symbol name. Skips with a printed reason when `objdump` is missing or cannot read the binary
//! (e.g. under the AVX-512 emulator, which has no files and no processes).

use alto_kernels::{run_segment, AnyDecoder, DecodeKind, Isa, KernelId, PlainRows, SegmentInput};
use std::collections::HashMap;
use std::process::Command;

/// One disassembled function: its instructions as (address, mnemonic, operands).
struct Function {
    addr: u64,
    name: String,
    insns: Vec<(u64, String, String)>,
}

/// The disassembled binary: its functions, and where each GOT slot points (a position-
/// independent binary calls other crates' functions through the GOT, `call *slot(%rip)`).
struct Binary {
    funcs: Vec<Function>,
    got: HashMap<u64, u64>,
}

fn objdump(args: &[&str], exe: &std::path::Path) -> Result<String, String> {
    let out = Command::new("objdump")
        .args(args)
        .arg(exe)
        .output()
        .map_err(|e| format!("cannot run objdump: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "objdump failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Disassembles the running test binary, or says why it cannot.
fn disassemble() -> Result<Binary, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let text = objdump(&["-d", "--no-show-raw-insn", "-C", "-w"], &exe)?;
    // `R_X86_64_RELATIVE *ABS*+0x...` dynamic relocations: GOT slot -> function address.
    let mut got = HashMap::new();
    for line in objdump(&["-R"], &exe).unwrap_or_default().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [slot, "R_X86_64_RELATIVE", value] = f[..] {
            let target = value
                .strip_prefix("*ABS*+0x")
                .and_then(|v| u64::from_str_radix(v, 16).ok());
            if let (Ok(slot), Some(target)) = (u64::from_str_radix(slot, 16), target) {
                got.insert(slot, target);
            }
        }
    }
    let mut funcs: Vec<Function> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_suffix(">:") {
            if let Some((addr, name)) = rest.split_once(" <") {
                let addr = u64::from_str_radix(addr.trim(), 16).unwrap_or(0);
                funcs.push(Function {
                    addr,
                    name: name.to_string(),
                    insns: Vec::new(),
                });
            }
            continue;
        }
        let Some(f) = funcs.last_mut() else { continue };
        let Some((addr, insn)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let insn = insn.trim();
        let (mnemonic, operands) = insn.split_once(char::is_whitespace).unwrap_or((insn, ""));
        f.insns
            .push((addr, mnemonic.to_string(), operands.trim().to_string()));
    }
    Ok(Binary { funcs, got })
}

impl Binary {
    /// The callee of a `call` instruction's operands, by name when it can be resolved.
    fn callee(&self, operands: &str) -> String {
        // Direct: `4a3b0 <name>`; through the GOT: `*0x1234(%rip)  # 12fd80 <_DYNAMIC+0x278>`.
        let target = if let Some((_, comment)) = operands.split_once('#') {
            let slot = comment
                .split_whitespace()
                .next()
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            slot.and_then(|s| self.got.get(&s).copied())
        } else {
            operands
                .split_whitespace()
                .next()
                .and_then(|t| u64::from_str_radix(t, 16).ok())
        };
        match target.and_then(|t| self.funcs.iter().find(|f| f.addr == t)) {
            Some(f) => f.name.clone(),
            None => operands.to_string(),
        }
    }
}

/// The instantiations of entry point `kernel` (e.g. `avx512_r16`) of module `isa`.
fn entry_points<'a>(funcs: &'a [Function], isa: &str, kernel: &str) -> Vec<&'a Function> {
    let path = format!("alto_kernels::mttkrp::{isa}::{kernel}");
    funcs
        .iter()
        .filter(|f| {
            f.name.strip_prefix(&path).is_some_and(|rest| {
                !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .collect()
}

/// Calls to these are cold paths (panics, error construction), allowed anywhere.
fn is_cold(callee: &str) -> bool {
    [
        "panic",
        "out_of_range",
        "unwrap_failed",
        "expect_failed",
        "slice_index",
        "index_fail",
    ]
    .iter()
    .any(|k| callee.contains(k))
}

/// `call`s inside a loop of `f` (a backward branch's target..=branch range), except cold ones.
fn calls_in_loops(bin: &Binary, f: &Function) -> Vec<String> {
    let mut loops = Vec::new();
    for (addr, m, ops) in &f.insns {
        if m.starts_with('j') {
            let target = ops
                .split_whitespace()
                .next()
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            if let Some(t) = target.filter(|&t| t <= *addr) {
                loops.push((t, *addr));
            }
        }
    }
    f.insns
        .iter()
        .filter(|(addr, m, _)| {
            m.starts_with("call") && loops.iter().any(|&(lo, hi)| (lo..=hi).contains(addr))
        })
        .map(|(addr, _, ops)| (addr, bin.callee(ops)))
        .filter(|(_, callee)| !is_cold(callee))
        .map(|(addr, callee)| format!("{addr:x}: call {callee}"))
        .collect()
}

fn has(f: &Function, pred: impl Fn(&str, &str) -> bool) -> bool {
    f.insns.iter().any(|(_, m, ops)| pred(m, ops))
}

/// Makes sure every entry point of `run_segment::<u64, PlainRows>` is in this binary (and runs
/// the scalar one, which any CPU can).
fn instantiate() {
    let masks = [0b0101u64, 0b1010];
    let dec = AnyDecoder::new(DecodeKind::Runs, &masks).expect("runs is always available");
    let f = [1.0; 4 * 16];
    let factors: [&[f64]; 2] = [&f, &f];
    let input = SegmentInput {
        idx: &[0b1111],
        vals: &[2.0],
        factors: &factors,
        target: 0,
        rank: 16,
        boundary_mask: 0,
        prefetch: 0,
    };
    let mut out = [0.0; 4 * 16];
    let kernel = KernelId::best(Isa::Scalar, 16);
    run_segment(kernel, &dec, &input, &mut PlainRows::new(&mut out, 0, 16)).expect("valid input");
    assert_eq!(out[3 * 16], 2.0);
}

const RANKS: [&str; 5] = ["r8", "r16", "r32", "r64", "rdyn"];

#[test]
fn kernels_compile_to_the_intended_instructions() {
    instantiate();
    let bin = match disassemble() {
        Ok(b) => b,
        Err(why) => {
            eprintln!("skipping the disassembly checks: {why}");
            return;
        }
    };
    let mut problems = Vec::new();
    for (isa, reg, banned) in [("avx512", "%zmm", None), ("avx2", "%ymm", Some("%zmm"))] {
        for r in RANKS {
            let kernel = format!("{isa}_{r}");
            let found = entry_points(&bin.funcs, isa, &kernel);
            if found.is_empty() {
                problems.push(format!("{kernel}: no entry point symbol in the binary"));
                continue;
            }
            for f in &found {
                if !has(f, |m, ops| {
                    m.starts_with("vfmadd") && m.ends_with("pd") && ops.contains(reg)
                }) {
                    problems.push(format!("{kernel}: an instantiation has no {reg} vfmadd*pd"));
                }
                if let Some(b) = banned {
                    if has(f, |_, ops| ops.contains(b)) {
                        problems.push(format!("{kernel}: uses {b} registers"));
                    }
                }
                for call in calls_in_loops(&bin, f) {
                    problems.push(format!("{kernel}: call inside a loop: {call}"));
                }
            }
            if !found.iter().any(|f| has(f, |m, _| m == "pext")) {
                problems.push(format!(
                    "{kernel}: no instantiation executes pext (not inlined?)"
                ));
            }
            eprintln!("{kernel}: {} instantiations checked", found.len());
        }
    }
    assert!(
        problems.is_empty(),
        "disassembly checks failed:\n{}",
        problems.join("\n")
    );
}
