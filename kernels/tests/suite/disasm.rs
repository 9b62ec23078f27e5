//! Checks the machine code of the kernels in this very test binary (`objdump -d`):
//! - every AVX-512 entry point (`avx512_r8` .. `avx512_tiled`, `avx512_rdyn`) has `zmm` FMAs (`vfmadd*pd`);
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

/// The direct branch target of a jump's operands (`4a3b0 <name+0x10>`), if any.
fn branch_target(operands: &str) -> Option<u64> {
    operands
        .split_whitespace()
        .next()
        .and_then(|t| u64::from_str_radix(t, 16).ok())
}

/// The natural loops of `f`'s control-flow graph, as sets of instruction indices: basic blocks
/// from the branches, back edges from a depth-first search (kept when the header dominates the
/// source), each loop the header plus every block that reaches the back edge's source without
/// passing the header. Blocks that cannot return to the loop (panics, error returns) are not
/// part of it.
fn natural_loops(bin: &Binary, f: &Function) -> Vec<Vec<usize>> {
    let n = f.insns.len();
    let index: HashMap<u64, usize> = f.insns.iter().enumerate().map(|(i, x)| (x.0, i)).collect();
    // Calls to cold paths (panics) do not return: they end a block without a fallthrough.
    let no_return: Vec<bool> = f
        .insns
        .iter()
        .map(|(_, m, ops)| m.starts_with("call") && is_cold(&bin.callee(ops)))
        .collect();
    let ends_block = |i: usize, m: &str| {
        m.starts_with('j') || m.starts_with("ret") || m == "ud2" || no_return[i]
    };
    let mut leader = vec![false; n];
    if n > 0 {
        leader[0] = true;
    }
    for (i, (_, m, ops)) in f.insns.iter().enumerate() {
        if m.starts_with('j') {
            if let Some(&t) = branch_target(ops).and_then(|t| index.get(&t)) {
                leader[t] = true;
            }
        }
        if ends_block(i, m) && i + 1 < n {
            leader[i + 1] = true;
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| leader[i]).collect();
    let block_of = |i: usize| starts.partition_point(|&s| s <= i) - 1;
    let nb = starts.len();
    let mut succ = vec![Vec::new(); nb];
    for b in 0..nb {
        let last = if b + 1 < nb { starts[b + 1] - 1 } else { n - 1 };
        let (_, m, ops) = &f.insns[last];
        let target = branch_target(ops)
            .and_then(|t| index.get(&t))
            .map(|&t| block_of(t));
        if m.starts_with('j') {
            succ[b].extend(target);
            if m != "jmp" && b + 1 < nb {
                succ[b].push(b + 1);
            }
        } else if !(m.starts_with("ret") || m == "ud2" || m == "int3" || no_return[last])
            && b + 1 < nb
        {
            succ[b].push(b + 1);
        }
    }
    // Iterative depth-first search for back edges (edges to a block on the current path).
    let mut back = Vec::new();
    let mut state = vec![0u8; nb]; // 0 new, 1 on the path, 2 done
    let mut stack = vec![(0usize, 0usize)];
    if nb > 0 {
        state[0] = 1;
    }
    while let Some(&mut (b, ref mut k)) = stack.last_mut() {
        if let Some(&s) = succ[b].get(*k) {
            *k += 1;
            match state[s] {
                0 => {
                    state[s] = 1;
                    stack.push((s, 0));
                }
                1 => back.push((b, s)),
                _ => {}
            }
        } else {
            state[b] = 2;
            stack.pop();
        }
    }
    let mut pred = vec![Vec::new(); nb];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            pred[s].push(b);
        }
    }
    // A retreating edge whose target does not dominate its source (the source is reachable
    // from the entry around the target) is not a natural loop: the backward search from the
    // source then reaches the entry block.
    back.iter()
        .filter_map(|&(tail, head)| {
            let mut body = vec![false; nb];
            body[head] = true;
            let mut work = vec![tail];
            while let Some(b) = work.pop() {
                if !body[b] {
                    if b == 0 {
                        return None;
                    }
                    body[b] = true;
                    work.extend(&pred[b]);
                }
            }
            Some((0..n).filter(|&i| body[block_of(i)]).collect())
        })
        .collect()
}

/// `call`s inside a hot loop of `f` (a natural loop that does the arithmetic: an FMA or a
/// multiply), except calls to cold paths.
fn calls_in_loops(bin: &Binary, f: &Function) -> Vec<String> {
    let mut found = Vec::new();
    for body in natural_loops(bin, f) {
        let insns: Vec<&(u64, String, String)> = body.iter().map(|&i| &f.insns[i]).collect();
        let hot = insns
            .iter()
            .any(|(_, m, _)| m.starts_with("vfmadd") || m.starts_with("vmulpd"));
        if !hot {
            continue;
        }
        for (addr, m, ops) in insns {
            if m.starts_with("call") {
                let callee = bin.callee(ops);
                if !is_cold(&callee) {
                    found.push(format!("{addr:x}: call {callee}"));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
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

const RANKS: [&str; 6] = ["r8", "r16", "r32", "r64", "tiled", "rdyn"];

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
