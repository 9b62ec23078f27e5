//! Distributed construction from a `.tns` file: every rank reads one byte range of the file
//! (a line belongs to the rank whose range holds its first byte), encodes its nonzeros with
//! the global layout, and a sample sort on the keys brings equal keys together (duplicates are
//! summed there); a last all-to-all cuts the sorted line into P equal segments. No rank ever
//! holds more than its share plus the messages of one exchange.

use super::comm::Comm;
use crate::block::LocalBlock;
use crate::codec::KeyCodec;
use crate::error::{DistError, Result};
use crate::plan::{rebalance_counts, segment_bounds};
use crate::sample::{bucket_counts, choose_splitters, regular_samples, sort_and_merge};
use alto::format::Layout;
use alto::AltoError;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A rank's part of a distributed tensor, and what the whole tensor is.
pub struct DistTensor {
    pub path: PathBuf,
    pub dims: Vec<u64>,
    pub nnz: u64,
    pub norm_sq: f64,
    pub duplicates_merged: u64,
    pub block: LocalBlock,
    /// The largest number of nonzeros (keys and values) this rank held at once while building.
    pub peak_nonzeros_held: u64,
}

/// Refuses a phase that would hold more than `limit` bytes on this rank.
fn require(limit: Option<u64>, bytes: u64, what: &str) -> Result<()> {
    match limit {
        Some(l) if bytes > l => Err(DistError::OutOfMemory(format!(
            "{what} needs about {bytes} bytes on this rank, over --max-memory {l}"
        ))),
        _ => Ok(()),
    }
}

/// The bytes of `path` whose lines start in this rank's share of the file, and the offset of
/// the first of them.
fn read_share(path: &Path, rank: usize, size: usize, limit: Option<u64>) -> Result<(Vec<u8>, u64)> {
    let io = |source| DistError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let share = |p: usize| (len as u128 * p as u128 / size as u128) as u64;
    let (from, to) = (share(rank), share(rank + 1));
    require(
        limit,
        (to - from) * 2,
        "reading this rank's share of the file",
    )?;
    // A line starting before `from` belongs to an earlier rank: skip to the next line start.
    let mut start = from;
    if from > 0 {
        file.seek(SeekFrom::Start(from - 1)).map_err(io)?;
        let mut reader = BufReader::new(&mut file);
        let mut partial = Vec::new();
        start = from - 1 + reader.read_until(b'\n', &mut partial).map_err(io)? as u64;
    }
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut reader = BufReader::new(file);
    let mut bytes = Vec::new();
    if start < to {
        let body = to - start;
        bytes
            .try_reserve_exact(body as usize + 256)
            .map_err(|_| DistError::OutOfMemory(format!("{body} bytes of {}", path.display())))?;
        (&mut reader)
            .take(body)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        // Finish the line that crosses `to`.
        if bytes.last().is_some_and(|&b| b != b'\n') {
            reader.read_until(b'\n', &mut bytes).map_err(io)?;
        }
    }
    Ok((bytes, start))
}

/// Lines of `path` before byte `offset` (only on the error path: it reads that prefix).
fn lines_before(path: &Path, offset: u64) -> u64 {
    let Ok(file) = std::fs::File::open(path) else {
        return 0;
    };
    let mut reader = BufReader::new(file.take(offset));
    let mut buf = [0u8; 1 << 16];
    let mut lines = 0;
    while let Ok(n) = reader.read(&mut buf) {
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
    lines
}

/// This rank's nonzeros as 0-based coordinates (mode-major) and values; empty when its share
/// holds no data line. Line numbers in errors are the file's.
fn parse_share(path: &Path, bytes: &[u8], offset: u64) -> Result<Option<alto::CooTensor>> {
    match alto::io::tns::read_tns_from(bytes, path, None) {
        Ok(coo) => Ok(Some(coo)),
        Err(AltoError::EmptyTensor { .. }) => Ok(None),
        Err(AltoError::TnsLine { path, line, error }) => Err(AltoError::TnsLine {
            line: line + lines_before(&path, offset),
            path,
            error,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// Reads `path` across all ranks and builds each rank's segment with `threads` shared-memory
/// partitions. `max_memory`: bytes a rank may hold (checked before each phase).
pub fn read_distributed(
    comm: &Comm,
    path: &Path,
    threads: usize,
    max_memory: Option<u64>,
) -> Result<DistTensor> {
    let (rank, size) = (comm.rank(), comm.size());
    let (bytes, offset) = comm.agree(read_share(path, rank, size, max_memory))?;
    let coo = comm.agree(
        require(
            max_memory,
            bytes.len() as u64 * 3,
            "parsing this rank's lines",
        )
        .and_then(|_| parse_share(path, &bytes, offset)),
    )?;
    drop(bytes);

    // The order and dims every rank agrees on.
    let local_order = coo.as_ref().map_or(0, |c| c.order() as u64);
    let mut order = [local_order];
    comm.max_u64(&mut order);
    let mut least = [coo.as_ref().map_or(u64::MAX, |c| c.order() as u64)];
    comm.min_u64(&mut least);
    let order = order[0] as usize;
    if order == 0 {
        return Err(DistError::collective(AltoError::EmptyTensor {
            path: path.to_path_buf(),
        }));
    }
    if least[0] as usize != order {
        return Err(DistError::collective(DistError::Inconsistent(format!(
            "{}: lines have {} and {} indices",
            path.display(),
            least[0],
            order
        ))));
    }
    let mut dims = vec![1u64; order];
    if let Some(c) = &coo {
        dims.copy_from_slice(c.dims());
    }
    comm.max_u64(&mut dims);
    let layout = Layout::new(&dims).map_err(DistError::collective)?;
    let codec = KeyCodec::new(&layout);

    // Local keys, sorted, local duplicates merged.
    let (mut keys, mut vals): (Vec<u128>, Vec<f64>) = match coo {
        Some(c) => {
            let keys = (0..c.nnz())
                .map(|k| codec.encode((0..order).map(|m| c.mode_indices(m)[k])))
                .collect();
            (keys, c.into_parts().2)
        }
        None => (Vec::new(), Vec::new()),
    };
    let mut merged = sort_and_merge(&mut keys, &mut vals);
    let mut peak = keys.len() as u64;

    // Sample sort: splitters from every rank's regular samples; bucket q goes to rank q.
    let samples = regular_samples(&keys, size);
    let all = comm.all_gather_varcount(&to_words(&samples))?;
    let splitters = choose_splitters(from_words(&all), size);
    let counts: Vec<u64> = bucket_counts(&keys, &splitters)
        .into_iter()
        .map(|c| c as u64)
        .collect();
    let (keys, vals) = exchange(comm, &keys, &vals, &counts, max_memory, &mut peak)?;
    let (mut keys, mut vals) = (from_words(&keys), vals);
    merged += sort_and_merge(&mut keys, &mut vals);

    // Equal segments of the global line.
    let mut total = [keys.len() as u64];
    comm.sum_u64(&mut total);
    let start = comm.exclusive_sum_u64(keys.len() as u64);
    let bounds = segment_bounds(total[0], size);
    let counts = rebalance_counts(start, keys.len() as u64, &bounds);
    let (keys, vals) = exchange(comm, &keys, &vals, &counts, max_memory, &mut peak)?;
    let keys = from_words(&keys);

    let mut sums = [vals.iter().map(|v| v * v).sum::<f64>()];
    comm.sum_f64(&mut sums);
    let mut dup = [merged];
    comm.sum_u64(&mut dup);
    let block = comm.agree(
        require(
            max_memory,
            keys.len() as u64 * 64,
            "building the local ALTO tensor",
        )
        .and_then(|_| LocalBlock::from_segment(&codec, &keys, &vals, threads)),
    )?;
    Ok(DistTensor {
        path: path.to_path_buf(),
        dims,
        nnz: total[0],
        norm_sq: sums[0],
        duplicates_merged: dup[0],
        block,
        peak_nonzeros_held: peak,
    })
}

/// Sends `counts[q]` consecutive (key, value) pairs to rank q; returns the key words and the
/// values received, in source-rank order. Fails on every rank alike when one rank lacks room.
fn exchange(
    comm: &Comm,
    keys: &[u128],
    vals: &[f64],
    counts: &[u64],
    limit: Option<u64>,
    peak: &mut u64,
) -> Result<(Vec<u64>, Vec<f64>)> {
    let recv = comm.exchange_counts(counts);
    let incoming: u64 = recv.iter().sum();
    *peak = (*peak).max(keys.len() as u64 + incoming);
    comm.agree(require(
        limit,
        (keys.len() as u64 * 2 + incoming) * 24,
        "the sample sort's exchange",
    ))?;
    let words = to_words(keys);
    let double = |c: &[u64]| c.iter().map(|&x| 2 * x).collect::<Vec<_>>();
    let k = comm.agree(comm.all_to_all_packed(&words, &double(counts), &double(&recv)))?;
    drop(words);
    let v = comm.agree(comm.all_to_all_packed(vals, counts, &recv))?;
    Ok((k, v))
}

/// Keys as (low, high) 64-bit words, for MPI.
fn to_words(keys: &[u128]) -> Vec<u64> {
    keys.iter()
        .flat_map(|&k| [k as u64, (k >> 64) as u64])
        .collect()
}
fn from_words(words: &[u64]) -> Vec<u128> {
    words
        .chunks_exact(2)
        .map(|w| w[0] as u128 | (w[1] as u128) << 64)
        .collect()
}

/// This process's peak resident set (`VmHWM`), in bytes, where `/proc` has it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
