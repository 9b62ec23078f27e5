//! The driver shared by every binary: measure what the chosen figures need, tensor by tensor
//! (cached, so an interrupted run resumes), then render them and the summary.

use crate::config::{Ctx, Opts};
use crate::figures::{self, Figure};
use crate::measure::{Engine, Need, Progress};
use crate::tensors::tensor_set;
use anyhow::{bail, Result};
use std::time::Instant;

/// Runs the figures named in `ids` (`fig06`, ...).
pub fn run_figures(ids: &[&str], opts: Opts) -> Result<()> {
    let started = Instant::now();
    let ctx = Ctx::new(opts)?;
    let figs: Vec<Box<dyn Figure>> = figures::all()
        .into_iter()
        .filter(|f| ids.contains(&f.id()))
        .collect();
    if figs.len() != ids.len() {
        bail!("unknown figure in {ids:?}");
    }
    let specs = tensor_set(&ctx)?;
    let progress = Progress::new(!ctx.opts.no_progress);
    progress.log(&format!(
        "{}: {} tensors, threads {:?}, rank {}, scale {}, host {} (cache {})",
        ids.join(" "),
        specs.len(),
        ctx.threads,
        ctx.opts.rank,
        ctx.opts.scale,
        ctx.host,
        ctx.cache_dir().display()
    ));
    let engine = Engine {
        ctx: &ctx,
        progress: &progress,
    };
    let outer = progress.bar(
        specs.len() as u64,
        "{prefix:>14} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
    );
    outer.set_prefix("tensors");
    let mut data = Vec::new();
    let mut failures = 0;
    for spec in &specs {
        let needs: Vec<Need> = figs.iter().flat_map(|f| f.needs(spec, &ctx)).collect();
        if needs.is_empty() {
            outer.inc(1);
            continue;
        }
        outer.set_message(spec.name.clone());
        let t = Instant::now();
        match engine.ensure(spec, &needs) {
            Ok(d) => {
                progress.log(&format!(
                    "{}: done in {:.1} s",
                    spec.label,
                    t.elapsed().as_secs_f64()
                ));
                data.push(d);
            }
            Err(e) => {
                failures += 1;
                progress.log(&format!("{}: skipped: {e:#}", spec.label));
            }
        }
        outer.inc(1);
    }
    outer.finish_and_clear();
    for f in &figs {
        let h = f.render(&data, &ctx)?;
        let dir = ctx.figure_dir(f.id());
        progress.log(&format!("{} -> {}", f.id(), dir.display()));
        for c in &h.claims {
            progress.log(&format!(
                "  {}: paper {}, measured {}",
                c.claim, c.paper, c.measured
            ));
        }
    }
    let summary = crate::summary::write(&ctx)?;
    progress.log(&format!(
        "summary -> {} ({:.1} s in all)",
        summary.display(),
        started.elapsed().as_secs_f64()
    ));
    if failures > 0 {
        bail!("{failures} tensor(s) could not be run (see above)");
    }
    Ok(())
}

/// `fn main` of a figure binary.
#[macro_export]
macro_rules! figure_main {
    ($about:literal, $($id:literal),+) => {
        #[derive(clap::Parser)]
        #[command(about = $about)]
        struct Cli {
            #[command(flatten)]
            opts: $crate::Opts,
        }

        fn main() -> anyhow::Result<()> {
            let cli = <Cli as clap::Parser>::parse();
            $crate::run_figures(&[$($id),+], cli.opts.with_env())
        }
    };
}
