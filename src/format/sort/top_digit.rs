//! How many bits the out-of-cache scatter sorts on: pure functions of the sizes and counts,
//! their thresholds passed in (the sort's constants hold the measured values).

/// Bits of the out-of-cache top digit for `n` keys of `key_bits` bits: the fewest in
/// `min_bits..=max_bits` that bring the average bucket to `target_bucket` pairs or fewer and
/// leave at most `rest_bits` below the digit where `max_bits` can (so buckets finish with LSD
/// passes rather than another MSD level), never more than the key has.
pub fn top_digit_bits(
    n: usize,
    key_bits: u32,
    target_bucket: usize,
    rest_bits: u32,
    min_bits: u32,
    max_bits: u32,
) -> u32 {
    // Growing the digit for `rest_bits` only pays when it gets there within `max_bits`.
    let rest_reachable = key_bits <= max_bits + rest_bits;
    let mut bits = min_bits;
    while bits < max_bits
        && ((n >> bits) > target_bucket || (rest_reachable && key_bits > bits + rest_bits))
    {
        bits += 1;
    }
    bits.min(key_bits)
}

/// The top digit's bits, at most `bits`, given the per-digit counts `hist` of a `bits`-bit top
/// digit over keys of `key_bits` bits: while more than `max_buckets` digits are occupied, one
/// bit fewer, as long as every bucket of the narrower digit still holds at most `lsd_max_len`
/// pairs with at most `lsd_max_bits` bits below it, and the digit keeps `min_bits`.
pub fn narrow_top_digit(
    hist: &[usize],
    bits: u32,
    key_bits: u32,
    max_buckets: usize,
    min_bits: u32,
    lsd_max_len: usize,
    lsd_max_bits: u32,
) -> u32 {
    assert_eq!(hist.len(), 1 << bits, "one count per digit");
    let mut counts = hist.to_vec();
    let mut bits = bits;
    while bits > min_bits && counts.iter().filter(|&&c| c > 0).count() > max_buckets {
        let coarser: Vec<usize> = counts.chunks(2).map(|c| c[0] + c[1]).collect();
        let fits =
            key_bits - (bits - 1) <= lsd_max_bits && coarser.iter().all(|&c| c <= lsd_max_len);
        if !fits {
            break;
        }
        counts = coarser;
        bits -= 1;
    }
    bits
}
