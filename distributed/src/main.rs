//! `alto-mpi`: distributed MTTKRP and CP-ALS, run as `mpirun -np P alto-mpi mttkrp|cpd ...`.
//! Every rank runs this program; rank 0 prints the report and writes the output files. A
//! failure on any rank makes every rank exit with status 1 (see `Comm::agree`).

use alto::cpd::model::write_fit_trajectory;
use alto::cpd::{CpdOptions, DEFAULT_MAX_ITERS, DEFAULT_TOL};
use alto_mpi::dist::build::peak_rss_bytes;
use alto_mpi::dist::cpd::{dist_cp_als, gather_factors};
use alto_mpi::dist::mttkrp::DistMttkrp;
use alto_mpi::dist::{read_distributed, Comm, DistTensor};
use alto_mpi::volume::allreduce_bytes;
use alto_mpi::{DistError, Result};
use clap::{Args, Parser, Subcommand};
use mpi::Threading;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "alto-mpi",
    about = "Distributed ALTO MTTKRP and CP-ALS over MPI"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// MTTKRP of every mode with the seeded factors of `alto cpd --seed`; `--out DIR` writes
    /// DIR/mttkrp<n>.npy (I_n x R).
    Mttkrp(Common),
    /// CP-ALS; prints the fit trajectory of `alto cpd`, `--out DIR` writes DIR/lambda.npy and
    /// DIR/factor<n>.npy.
    Cpd {
        #[command(flatten)]
        common: Common,
        /// Iteration cap.
        #[arg(long, default_value_t = DEFAULT_MAX_ITERS)]
        iters: usize,
        /// Stop when |fit - previous fit| < tol (>= 0; 0 runs to the cap).
        #[arg(long, default_value_t = DEFAULT_TOL)]
        tol: f64,
    },
}

#[derive(Args)]
struct Common {
    /// A FROSTT `.tns` file; every rank reads its own byte range.
    file: PathBuf,
    /// Number of components R.
    #[arg(long)]
    rank: usize,
    /// Seed of the initial factors (the same draw as `alto cpd --seed`).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Threads per rank (default: the CPUs divided among the ranks on this node, at least 1).
    #[arg(long)]
    threads: Option<usize>,
    /// Bytes a rank may hold while building; a rank over it fails every rank.
    #[arg(long)]
    max_memory: Option<u64>,
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    let code = {
        let Some((universe, threading)) = mpi::initialize_with_threading(Threading::Funneled)
        else {
            eprintln!("alto-mpi: MPI could not be initialized");
            std::process::exit(2);
        };
        let comm = Comm::new(universe.world());
        if threading < Threading::Funneled {
            eprintln!("alto-mpi: the MPI library does not support MPI_THREAD_FUNNELED");
            comm.abort(2);
        }
        match run(&comm, cli) {
            Ok(()) => 0,
            Err(e) => {
                if e.printed_by(comm.rank()) {
                    eprintln!("alto-mpi: rank {}: {e}", comm.rank());
                }
                1
            }
        }
        // `universe` drops here: MPI_Finalize on every rank before the exit status.
    };
    std::process::exit(code);
}

fn run(comm: &Comm, cli: Cli) -> Result<()> {
    match cli.command {
        Command::Mttkrp(c) => mttkrp(comm, &c),
        Command::Cpd { common, iters, tol } => cpd(comm, &common, iters, tol),
    }
}

fn bad_option(what: String) -> DistError {
    DistError::collective(alto::AltoError::InvalidArgument(what))
}

/// The tensor, the thread pool, and the time it took to build them.
fn load(comm: &Comm, c: &Common) -> Result<(DistTensor, rayon::ThreadPool, usize, f64)> {
    if c.rank == 0 {
        return Err(bad_option("--rank must be at least 1".into()));
    }
    let threads = match c.threads {
        Some(0) => return Err(bad_option("--threads must be at least 1".into())),
        Some(t) => t,
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cpus / comm.size()).max(1)
        }
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| bad_option(format!("cannot start {threads} threads: {e}")))?;
    if let Some(dir) = &c.out {
        let made = if comm.rank() == 0 {
            std::fs::create_dir_all(dir).map_err(|source| DistError::Io {
                path: dir.clone(),
                source,
            })
        } else {
            Ok(())
        };
        comm.agree(made)?;
    }
    let start = Instant::now();
    let t = read_distributed(comm, &c.file, threads, c.max_memory)?;
    Ok((t, pool, threads, start.elapsed().as_secs_f64()))
}

/// One line per rank: nonzeros held, the most held while building, the local tensor's bytes,
/// and the measured peak resident set.
fn memory_lines(comm: &Comm, t: &DistTensor, s: &mut String) {
    let mine = [
        t.block.nnz() as u64,
        t.peak_nonzeros_held,
        t.block.storage_bytes(),
        peak_rss_bytes().unwrap_or(0),
    ];
    let all = comm.all_gather_u64(&mine);
    for (p, w) in all.chunks_exact(4).enumerate() {
        let _ = writeln!(
            s,
            "memory rank {p}: {} nonzeros, at most {} held while building, local tensor {} bytes, \
             peak RSS {} bytes",
            w[0], w[1], w[2], w[3]
        );
    }
}

fn header(comm: &Comm, t: &DistTensor, threads: usize, load_s: f64) -> String {
    let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
    format!(
        "{}: {} nonzeros, dims {}; {} MPI ranks x {} threads; distributed build {:.3} s \
         ({} duplicates merged)\n",
        t.path.display(),
        t.nnz,
        dims.join(" x "),
        comm.size(),
        threads,
        load_s,
        t.duplicates_merged
    )
}

fn write_npy(comm: &Comm, path: &Path, m: Option<&alto::Matrix>) -> Result<()> {
    let written = match m {
        Some(m) => m.write_npy(path).map_err(DistError::from),
        None => Ok(()),
    };
    comm.agree(written)
}

fn mttkrp(comm: &Comm, c: &Common) -> Result<()> {
    let (t, pool, threads, load_s) = load(comm, c)?;
    let mut s = header(comm, &t, threads, load_s);
    let mut engine = DistMttkrp::new(comm, &t, c.rank, Default::default(), &pool);
    let windows = {
        let init = alto::cpd::initial_factors(&t.dims, c.rank, c.seed);
        engine.windows_of(&init)
    };
    for mode in 0..t.dims.len() {
        let (owned, _, sent) = engine.run(&windows, mode)?;
        let mut total = [sent];
        comm.sum_u64(&mut total);
        let _ = writeln!(
            s,
            "mode {mode}: interval exchange {} bytes; whole-matrix allreduce {} bytes",
            total[0],
            allreduce_bytes(t.dims[mode], c.rank, comm.size())
        );
        let full = engine.gather(&owned, mode)?;
        if let Some(dir) = &c.out {
            write_npy(comm, &dir.join(format!("mttkrp{mode}.npy")), full.as_ref())?;
        }
    }
    memory_lines(comm, &t, &mut s);
    if comm.rank() == 0 {
        print!("{s}");
    }
    Ok(())
}

fn cpd(comm: &Comm, c: &Common, iters: usize, tol: f64) -> Result<()> {
    if iters == 0 {
        return Err(bad_option("--iters must be at least 1".into()));
    }
    if !(tol >= 0.0 && tol.is_finite()) {
        return Err(bad_option(format!(
            "--tol must be a finite number >= 0, got {tol}"
        )));
    }
    let (t, pool, threads, load_s) = load(comm, c)?;
    let opts = CpdOptions {
        max_iters: iters,
        tol,
        seed: c.seed,
        ..CpdOptions::new(c.rank)
    };
    let mut engine = DistMttkrp::new(comm, &t, c.rank, opts.mttkrp, &pool);
    let model = dist_cp_als(&mut engine, &opts)?;
    let factors = gather_factors(&engine, &model)?;
    if let Some(dir) = &c.out {
        let lambda = alto::Matrix::from_vec(model.lambda.len(), 1, model.lambda.clone())?;
        let lambda_written = if comm.rank() == 0 {
            alto::io::npy::write_f64(&dir.join("lambda.npy"), &[c.rank as u64], lambda.as_slice())
                .map_err(DistError::from)
        } else {
            Ok(())
        };
        comm.agree(lambda_written)?;
        for n in 0..t.dims.len() {
            let m = factors.as_ref().map(|f| &f[n]);
            write_npy(comm, &dir.join(format!("factor{n}.npy")), m)?;
        }
    }
    let mut s = header(comm, &t, threads, load_s);
    let _ = writeln!(
        s,
        "CP-ALS rank {}, at most {} iterations, tol {:e}, seed {}",
        c.rank, iters, tol, c.seed
    );
    // The trajectory table of `alto cpd`, line for line.
    write_fit_trajectory(&mut s, &model.history, model.converged);
    let mut per_mode: Vec<u64> = model
        .bytes_per_mode
        .iter()
        .flat_map(|&(a, b)| [a, b])
        .collect();
    comm.sum_u64(&mut per_mode);
    let mut iteration = 0;
    for (n, w) in per_mode.chunks_exact(2).enumerate() {
        iteration += w[0] + w[1];
        let _ = writeln!(
            s,
            "mode {n}: interval exchange {} + {} bytes per iteration (partial rows, updated \
             rows); whole-matrix allreduce {} bytes",
            w[0],
            w[1],
            allreduce_bytes(t.dims[n], c.rank, comm.size())
        );
    }
    let small = model.small_allreduce_bytes * comm.size() as u64;
    let whole: u64 = t
        .dims
        .iter()
        .map(|&d| allreduce_bytes(d, c.rank, comm.size()))
        .sum();
    let _ = writeln!(
        s,
        "per iteration: {} bytes of rows + {} bytes of R x R allreduce contributions; \
         whole-matrix allreduce {} bytes",
        iteration, small, whole
    );
    memory_lines(comm, &t, &mut s);
    if let Some(dir) = &c.out {
        let _ = writeln!(
            s,
            "wrote {0}/lambda.npy and {0}/factor{{0..{1}}}.npy",
            dir.display(),
            t.dims.len() - 1
        );
    }
    if comm.rank() == 0 {
        print!("{s}");
    }
    Ok(())
}
