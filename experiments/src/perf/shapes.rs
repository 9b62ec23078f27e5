//! The benchmark shapes of issue 15, generated with fixed seeds by the library's own
//! generators (`alto::gen`, the ones `alto gen` calls), so each is exactly the tensor of the
//! matching `alto gen` command.

use alto::CooTensor;
use anyhow::{anyhow, bail, Result};

/// How a shape is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Generator {
    /// `alto gen skewed --dims D --nnz N --seed S` (hierarchical log-normal, cv 1 and 1).
    Skewed { dims: Vec<u64> },
    /// `alto gen uniform --dims D --nnz N --seed S`.
    Uniform { dims: Vec<u64> },
    /// `alto gen <preset> --nnz N --seed S` (a paper tensor's stand-in, scaled dims).
    Preset { name: &'static str },
}

/// One benchmark tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeSpec {
    /// `skewed-3d`, `uniform-4d`, `nell-2`, `darpa`, `skewed-3d-8m`.
    pub name: &'static str,
    pub generator: Generator,
    /// Nonzeros asked of the generator (before duplicates merge).
    pub nnz: u64,
    pub seed: u64,
}

impl ShapeSpec {
    /// The `alto gen` command that writes the same tensor.
    pub fn gen_command(&self) -> String {
        let dims = |d: &[u64]| {
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let (kind, extra) = match &self.generator {
            Generator::Skewed { dims: d } => ("skewed".to_string(), format!(" --dims {}", dims(d))),
            Generator::Uniform { dims: d } => {
                ("uniform".to_string(), format!(" --dims {}", dims(d)))
            }
            Generator::Preset { name } => (name.to_string(), String::new()),
        };
        format!(
            "alto gen {kind}{extra} --nnz {} --seed {}",
            self.nnz, self.seed
        )
    }

    /// Number of modes.
    pub fn order(&self) -> usize {
        match &self.generator {
            Generator::Skewed { dims } | Generator::Uniform { dims } => dims.len(),
            Generator::Preset { name } => alto::gen::find_preset(name).map_or(0, |p| p.dims.len()),
        }
    }

    /// Generates the tensor (as `alto gen` does; duplicates are merged when it is built).
    pub fn generate(&self) -> Result<CooTensor> {
        Ok(match &self.generator {
            Generator::Skewed { dims } => {
                alto::gen::hierarchical(dims, self.nnz, 1.0, 1.0, self.seed)?
            }
            Generator::Uniform { dims } => alto::gen::uniform(dims, self.nnz, self.seed)?,
            Generator::Preset { name } => {
                let p = alto::gen::find_preset(name)
                    .ok_or_else(|| anyhow!("no generator preset `{name}`"))?;
                alto::gen::preset(p, self.nnz, self.seed, false)?
            }
        })
    }
}

/// Names of the shapes, in run order.
pub const NAMES: [&str; 5] = ["skewed-3d", "uniform-4d", "nell-2", "darpa", "skewed-3d-8m"];

/// The full-size shapes of the issue. The presets use seed 0, `alto gen`'s default, as the
/// issue's `alto gen nell-2 --nnz 2000000` does.
pub fn full() -> Vec<ShapeSpec> {
    vec![
        skewed("skewed-3d", &[2000, 1500, 1000], 2_000_000, 1),
        uniform("uniform-4d", &[500, 400, 3000, 20], 1_000_000, 2),
        preset("nell-2", 2_000_000),
        preset("darpa", 2_000_000),
        skewed("skewed-3d-8m", &[20000, 15000, 10000], 8_000_000, 1),
    ]
}

/// Small versions of the same shapes for `--quick` (same generators, 1-2% of the nonzeros).
pub fn quick() -> Vec<ShapeSpec> {
    vec![
        skewed("skewed-3d", &[200, 150, 100], 20_000, 1),
        uniform("uniform-4d", &[50, 40, 300, 20], 10_000, 2),
        // nell-2's dims shrink with the nonzero count: 20 k would leave a 3 x 2 x 7 tensor.
        preset("nell-2", 200_000),
        preset("darpa", 20_000),
        skewed("skewed-3d-8m", &[2000, 1500, 1000], 40_000, 1),
    ]
}

fn skewed(name: &'static str, dims: &[u64], nnz: u64, seed: u64) -> ShapeSpec {
    ShapeSpec {
        name,
        generator: Generator::Skewed {
            dims: dims.to_vec(),
        },
        nnz,
        seed,
    }
}

fn uniform(name: &'static str, dims: &[u64], nnz: u64, seed: u64) -> ShapeSpec {
    ShapeSpec {
        name,
        generator: Generator::Uniform {
            dims: dims.to_vec(),
        },
        nnz,
        seed,
    }
}

fn preset(name: &'static str, nnz: u64) -> ShapeSpec {
    ShapeSpec {
        name,
        generator: Generator::Preset { name },
        nnz,
        seed: 0,
    }
}

/// The shapes named in `names` (all when empty), full-size or quick, in the order given.
pub fn select(names: &[String], quick_sizes: bool) -> Result<Vec<ShapeSpec>> {
    let all = if quick_sizes { quick() } else { full() };
    if names.is_empty() {
        return Ok(all);
    }
    let mut out: Vec<ShapeSpec> = Vec::new();
    for n in names {
        let n = n.trim();
        let Some(s) = all.iter().find(|s| s.name == n) else {
            bail!(
                "--shapes: unknown shape `{n}` (known: {})",
                NAMES.join(", ")
            );
        };
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_their_gen_commands() {
        let f = full();
        assert_eq!(f.len(), NAMES.len());
        assert_eq!(
            f[0].gen_command(),
            "alto gen skewed --dims 2000,1500,1000 --nnz 2000000 --seed 1"
        );
        assert_eq!(f[2].gen_command(), "alto gen nell-2 --nnz 2000000 --seed 0");
        assert!(
            select(&["darpa".into(), "darpa".into()], true)
                .unwrap()
                .len()
                == 1
        );
        let e = select(&["nope".into()], false).unwrap_err().to_string();
        assert!(e.contains("unknown shape `nope`"), "{e}");
        // Deterministic: the same seed gives the same tensor.
        let q = &quick()[0];
        let (a, b) = (q.generate().unwrap(), q.generate().unwrap());
        assert_eq!(a.nnz(), b.nnz());
        assert_eq!(a.dims(), b.dims());
    }
}
