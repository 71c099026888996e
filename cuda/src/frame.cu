// Hash groupby over Arrow buffers on a CUDA device (driven by kernels/src/cuda/gpu/groupby.rs;
// column kinds and aggregation codes match kernels/src/cuda/frame_plan.rs).
//
// 1. ts_gb_insert: every row whose keys are all valid (and that a filter's flags keep,
//    where the groupby reads a filter's rows) finds its key's slot in an
//    open-addressing table (linear probing; a slot holds the row that claimed it, compared
//    byte for byte on a hash match), records the slot, and lowers the slot's first row.
// 2. ts_gb_count_firsts / ts_gb_scan / ts_gb_number: rows that are their group's first row
//    are numbered in row order (a three-phase scan over tiles), so groups come out in order
//    of first appearance, as on the CPU and in pandas.
// 3. ts_gb_agg: one aggregation state per launch, folded with atomics, in shared memory
//    first when the groups fit there.
//
// Hash joins (kernels/src/cuda/gpu/join.rs) insert the build side's rows much as step 1
// does (ts_join_insert, which keeps each key's hash in its slot and counts each slot's
// rows), lay each slot's build rows out in row order (ts_join_ranges, ts_join_place,
// ts_join_sort), then count and emit
// each probe row's matches in probe row order (ts_join_probe, a scan, ts_join_emit): the
// CPU's order; ts_gather1/2/4/8 and ts_gather_valid then gather the joined table's
// fixed-width columns by those rows, and ts_gather_str_len, a scan, ts_gather_str_bytes
// (and ts_narrow_offsets for Utf8) its string columns. ts_tile_sums and
// ts_tile_scan (or their 32-bit twins), with ts_gb_scan between them, are an exclusive
// prefix sum of any length. A filter's generated predicate kernel (filter_gen.rs) flags
// the rows it keeps; a scan of the flags and ts_filter_place list them for the gathers.
//
// Compiled after frame_cols.cuh (the column descriptor and its readers).

#define TS_AGG_SUM_INT 0
#define TS_AGG_SUM_FLOAT 1
#define TS_AGG_COUNT 2
#define TS_AGG_SIZE 3
#define TS_AGG_MIN_INT 4
#define TS_AGG_MAX_INT 5
#define TS_AGG_MIN_FLOAT 6
#define TS_AGG_MAX_FLOAT 7

#define TS_NO_SLOT 0xFFFFFFFFu
#define TS_EMPTY 0xFFFFFFFFFFFFFFFFULL
#define TS_TILE 4096

// splitmix64's finalizer.
static __device__ __forceinline__ ts_u64 ts_mix(ts_u64 h) {
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

static __device__ ts_u64 ts_hash_bytes(const unsigned char* p, ts_i64 len) {
    ts_u64 h = 0x9E3779B97F4A7C15ULL ^ (ts_u64)len;
    ts_u64 w = 0;
    int shift = 0;
    for (ts_i64 k = 0; k < len; ++k) {
        w |= (ts_u64)p[k] << shift;
        shift += 8;
        if (shift == 64) {
            h = ts_mix(h ^ w);
            w = 0;
            shift = 0;
        }
    }
    return ts_mix(h ^ w);
}

static __device__ ts_u64 ts_row_hash(const ts_col* cols, int ncols, ts_i64 i) {
    ts_u64 h = 0;
    for (int c = 0; c < ncols; ++c) {
        ts_u64 v;
        if (ts_is_string(cols[c])) {
            ts_i64 len;
            const unsigned char* p = ts_str_at(cols[c], i, &len);
            v = ts_hash_bytes(p, len);
        } else {
            v = ts_mix((ts_u64)ts_int_at(cols[c], i));
        }
        h = ts_mix(h * 0x9E3779B97F4A7C15ULL + v);
    }
    return h;
}

// Row `i` of key columns `a` equals row `j` of key columns `b` (same kinds of key).
static __device__ bool ts_rows_equal(const ts_col* a, ts_i64 i, const ts_col* b, ts_i64 j, int ncols) {
    for (int c = 0; c < ncols; ++c) {
        if (ts_is_string(a[c])) {
            ts_i64 la, lb;
            const unsigned char* pa = ts_str_at(a[c], i, &la);
            const unsigned char* pb = ts_str_at(b[c], j, &lb);
            if (la != lb) return false;
            for (ts_i64 k = 0; k < la; ++k) {
                if (pa[k] != pb[k]) return false;
            }
        } else if (ts_int_at(a[c], i) != ts_int_at(b[c], j)) {
            return false;
        }
    }
    return true;
}

static __device__ __forceinline__ bool ts_keys_valid(const ts_col* cols, int ncols, ts_i64 i) {
    for (int c = 0; c < ncols; ++c) {
        if (!ts_is_valid(cols[c], i)) return false;
    }
    return true;
}

// Fills `n` words with `value` (the table's empty marker, the first rows' infinity, an
// aggregation's identity).
extern "C" __global__ void ts_gb_fill(ts_u64* __restrict__ out, ts_i64 n, ts_u64 value) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        out[i] = value;
    }
}

// Step 1. `table` (mask + 1 slots, TS_EMPTY) and `first` (i64 max) are filled before.
// `keep` (null: every row) is a filter's flags: a row flagged 0 joins no group, as a row
// with a null key.
extern "C" __global__ void ts_gb_insert(const ts_col* __restrict__ cols, int ncols, ts_i64 n,
                                        ts_u64* __restrict__ table, ts_u64 mask,
                                        ts_i64* __restrict__ first, unsigned* __restrict__ slot_of_row,
                                        const unsigned* __restrict__ keep) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        if ((keep != nullptr && keep[i] == 0) || !ts_keys_valid(cols, ncols, i)) {
            slot_of_row[i] = TS_NO_SLOT;
            continue;
        }
        ts_u64 s = ts_row_hash(cols, ncols, i) & mask;
        for (;;) {
            ts_u64 holder = table[s];
            if (holder == TS_EMPTY) {
                holder = atomicCAS(&table[s], TS_EMPTY, (ts_u64)i);
                if (holder == TS_EMPTY) break;
            }
            if (ts_rows_equal(cols, (ts_i64)holder, cols, i, ncols)) break;
            s = (s + 1) & mask;
        }
        // A stale read only sees a larger row, so no smaller first row is ever missed.
        if (first[s] > i) atomicMin(&first[s], i);
        slot_of_row[i] = (unsigned)s;
    }
}

static __device__ __forceinline__ bool ts_is_first(const unsigned* slot_of_row, const ts_i64* first, ts_i64 i) {
    const unsigned s = slot_of_row[i];
    return s != TS_NO_SLOT && first[s] == i;
}

// Step 2a: the number of first rows in each tile of TS_TILE rows (one block per tile).
extern "C" __global__ void ts_gb_count_firsts(ts_i64 n, const unsigned* __restrict__ slot_of_row,
                                              const ts_i64* __restrict__ first, ts_i64* __restrict__ counts) {
    __shared__ unsigned total;
    const ts_i64 tiles = (n + TS_TILE - 1) / TS_TILE;
    for (ts_i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        if (threadIdx.x == 0) total = 0;
        __syncthreads();
        unsigned mine = 0;
        const ts_i64 end = min(n, (t + 1) * TS_TILE);
        for (ts_i64 i = t * TS_TILE + threadIdx.x; i < end; i += blockDim.x) {
            mine += ts_is_first(slot_of_row, first, i) ? 1u : 0u;
        }
        if (mine) atomicAdd(&total, mine);
        __syncthreads();
        if (threadIdx.x == 0) counts[t] = total;
        __syncthreads();
    }
}

// Step 2b (one block): `counts[0..tiles)` becomes its exclusive prefix sum and
// `counts[tiles]` the total, the number of groups.
extern "C" __global__ void ts_gb_scan(ts_i64* __restrict__ counts, ts_i64 tiles) {
    __shared__ ts_i64 buf[1024];
    __shared__ ts_i64 carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (ts_i64 base = 0; base < tiles; base += blockDim.x) {
        const ts_i64 i = base + threadIdx.x;
        const ts_i64 v = i < tiles ? counts[i] : 0;
        buf[threadIdx.x] = v;
        __syncthreads();
        for (unsigned o = 1; o < blockDim.x; o <<= 1) {
            const ts_i64 add = threadIdx.x >= o ? buf[threadIdx.x - o] : 0;
            __syncthreads();
            buf[threadIdx.x] += add;
            __syncthreads();
        }
        if (i < tiles) counts[i] = carry + buf[threadIdx.x] - v;
        __syncthreads();
        if (threadIdx.x == 0) carry += buf[blockDim.x - 1];
        __syncthreads();
    }
    if (threadIdx.x == 0) counts[tiles] = carry;
}

// The exclusive prefix sum of `v` over the block's threads in thread order, and in
// `total` the block's sum. Every thread of the block calls it (blockDim a multiple of 32,
// at most 1024); `warp_sums` is 32 words of shared memory.
static __device__ ts_i64 ts_block_exclusive(ts_i64 v, ts_i64* warp_sums, ts_i64* total) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned warps = blockDim.x >> 5;
    ts_i64 inclusive = v;
    for (int o = 1; o < 32; o <<= 1) {
        const ts_i64 y = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
        if ((int)lane >= o) inclusive += y;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    ts_i64 before = 0, all = 0;
    for (unsigned w = 0; w < warps; ++w) {
        before += w < warp ? warp_sums[w] : 0;
        all += warp_sums[w];
    }
    __syncthreads();
    *total = all;
    return before + inclusive - v;
}

// Step 2c: numbers each tile's first rows from its offset, in row order: the group of each
// slot, and the first row of each group (blockDim a multiple of 32, at most 1024).
extern "C" __global__ void ts_gb_number(ts_i64 n, const unsigned* __restrict__ slot_of_row,
                                        const ts_i64* __restrict__ first, const ts_i64* __restrict__ offsets,
                                        unsigned* __restrict__ group_of_slot, ts_i64* __restrict__ first_rows) {
    __shared__ ts_i64 warp_sums[32];
    __shared__ ts_i64 base;
    const ts_i64 tiles = (n + TS_TILE - 1) / TS_TILE;
    for (ts_i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        if (threadIdx.x == 0) base = offsets[t];
        __syncthreads();
        const ts_i64 end = min(n, (t + 1) * TS_TILE);
        for (ts_i64 r = t * TS_TILE; r < end; r += blockDim.x) {
            const ts_i64 i = r + threadIdx.x;
            const bool flag = i < end && ts_is_first(slot_of_row, first, i);
            ts_i64 round;
            const ts_i64 id = base + ts_block_exclusive(flag ? 1 : 0, warp_sums, &round);
            if (flag) {
                group_of_slot[slot_of_row[i]] = (unsigned)id;
                first_rows[id] = i;
            }
            __syncthreads();
            if (threadIdx.x == 0) base += round;
            __syncthreads();
        }
    }
}

// The identity of aggregation `op`'s state word.
static __device__ __forceinline__ ts_u64 ts_identity(int op) {
    switch (op) {
    case TS_AGG_MIN_INT:
    case TS_AGG_MIN_FLOAT: return 0x7FFFFFFFFFFFFFFFULL;
    case TS_AGG_MAX_INT:
    case TS_AGG_MAX_FLOAT: return 0x8000000000000000ULL;
    default: return 0;
    }
}

// A double's bits as an i64 that orders like the double (NaN excluded).
static __device__ __forceinline__ ts_i64 ts_ordered(double v) {
    const ts_i64 b = __double_as_longlong(v);
    return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFFLL);
}

// Row `i`'s contribution to `op` as a state word; false for a value it skips (null, NaN).
static __device__ __forceinline__ bool ts_word(const ts_col& c, ts_i64 i, int op, ts_u64* w) {
    if (op == TS_AGG_SIZE) {
        *w = 1;
        return true;
    }
    if (!ts_is_valid(c, i)) return false;
    if (op == TS_AGG_COUNT) {
        if (c.kind == TS_COL_F32 || c.kind == TS_COL_F64) {
            const double v = ts_float_at(c, i);
            if (v != v) return false;
        }
        *w = 1;
        return true;
    }
    if (c.kind == TS_COL_F32 || c.kind == TS_COL_F64) {
        const double v = ts_float_at(c, i);
        if (v != v) return false;
        *w = op == TS_AGG_SUM_FLOAT ? (ts_u64)__double_as_longlong(v) : (ts_u64)ts_ordered(v);
        return true;
    }
    const ts_i64 v = ts_int_at(c, i);
    *w = op == TS_AGG_SUM_FLOAT ? (ts_u64)__double_as_longlong((double)v) : (ts_u64)v;
    return true;
}

static __device__ __forceinline__ void ts_fold(ts_u64* p, int op, ts_u64 w) {
    switch (op) {
    case TS_AGG_SUM_FLOAT: atomicAdd((double*)p, __longlong_as_double((ts_i64)w)); break;
    case TS_AGG_MIN_INT:
    case TS_AGG_MIN_FLOAT: atomicMin((ts_i64*)p, (ts_i64)w); break;
    case TS_AGG_MAX_INT:
    case TS_AGG_MAX_FLOAT: atomicMax((ts_i64*)p, (ts_i64)w); break;
    default: atomicAdd(p, w); break;
    }
}

// Step 3: folds column `col` into `state` (one word per group, filled with the identity),
// in `groups` words of dynamic shared memory per block when `in_shared`.
extern "C" __global__ void ts_gb_agg(const ts_col* __restrict__ col, int op, ts_i64 n,
                                     const unsigned* __restrict__ slot_of_row,
                                     const unsigned* __restrict__ group_of_slot, ts_i64 groups,
                                     ts_u64* __restrict__ state, int in_shared) {
    extern __shared__ ts_u64 local[];
    const ts_u64 identity = ts_identity(op);
    const ts_col c = *col;
    if (in_shared) {
        for (ts_i64 g = threadIdx.x; g < groups; g += blockDim.x) local[g] = identity;
        __syncthreads();
    }
    ts_u64* into = in_shared ? local : state;
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        const unsigned s = slot_of_row[i];
        ts_u64 w;
        if (s == TS_NO_SLOT || !ts_word(c, i, op, &w)) continue;
        ts_fold(&into[group_of_slot[s]], op, w);
    }
    if (in_shared) {
        __syncthreads();
        for (ts_i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            if (local[g] != identity) ts_fold(&state[g], op, local[g]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Prefix sums of any length: ts_tile_sums, ts_gb_scan over the tile sums, ts_tile_scan.

// The sum of each tile of TS_TILE elements of `x` (one block per tile).
template <typename T>
static __device__ void ts_tile_sums_of(const T* __restrict__ x, ts_i64 n, ts_i64* __restrict__ sums) {
    __shared__ unsigned long long total;
    const ts_i64 tiles = (n + TS_TILE - 1) / TS_TILE;
    for (ts_i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        if (threadIdx.x == 0) total = 0;
        __syncthreads();
        ts_i64 mine = 0;
        const ts_i64 end = min(n, (t + 1) * TS_TILE);
        for (ts_i64 i = t * TS_TILE + threadIdx.x; i < end; i += blockDim.x) mine += (ts_i64)x[i];
        if (mine) atomicAdd(&total, (unsigned long long)mine);
        __syncthreads();
        if (threadIdx.x == 0) sums[t] = (ts_i64)total;
        __syncthreads();
    }
}

extern "C" __global__ void ts_tile_sums(const ts_i64* __restrict__ x, ts_i64 n, ts_i64* __restrict__ sums) {
    ts_tile_sums_of(x, n, sums);
}

extern "C" __global__ void ts_tile_sums32(const unsigned* __restrict__ x, ts_i64 n, ts_i64* __restrict__ sums) {
    ts_tile_sums_of(x, n, sums);
}

// `x` becomes its exclusive prefix sum, given each tile's offset (blockDim a multiple of 32;
// the sums fit in T).
template <typename T>
static __device__ void ts_tile_scan_of(T* __restrict__ x, ts_i64 n, const ts_i64* __restrict__ offsets) {
    __shared__ ts_i64 warp_sums[32];
    __shared__ ts_i64 base;
    const ts_i64 tiles = (n + TS_TILE - 1) / TS_TILE;
    for (ts_i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        if (threadIdx.x == 0) base = offsets[t];
        __syncthreads();
        const ts_i64 end = min(n, (t + 1) * TS_TILE);
        for (ts_i64 r = t * TS_TILE; r < end; r += blockDim.x) {
            const ts_i64 i = r + threadIdx.x;
            ts_i64 round;
            const ts_i64 before = ts_block_exclusive(i < end ? (ts_i64)x[i] : 0, warp_sums, &round);
            if (i < end) x[i] = (T)(base + before);
            __syncthreads();
            if (threadIdx.x == 0) base += round;
            __syncthreads();
        }
    }
}

extern "C" __global__ void ts_tile_scan(ts_i64* __restrict__ x, ts_i64 n, const ts_i64* __restrict__ offsets) {
    ts_tile_scan_of(x, n, offsets);
}

extern "C" __global__ void ts_tile_scan32(unsigned* __restrict__ x, ts_i64 n, const ts_i64* __restrict__ offsets) {
    ts_tile_scan_of(x, n, offsets);
}

// ---------------------------------------------------------------------------------------
// Hash join: the build side's rows per slot of the table in row order, then each probe
// row's matches. Row numbers are 32 bits (the host sends fewer than 2^30 build rows).
//
// The table's slot s is two words, read together (one 16-byte load, one memory sector):
// table[2s] the hash of its key (TS_EMPTY: a free slot) and table[2s + 1] its row count in
// the high 32 bits and in the low 32 its first row while the build side is inserted
// (TS_NO_ROW until its owner has set it), then the start of its rows' range in `rows`.
// Where the key is one column of integers, the hash is a bijection of the key (two
// splitmix64 finalizers), so equal hashes are equal keys and no build row is read to
// compare; a hash that would be TS_EMPTY is stored as TS_ALIAS, which therefore stands for
// two keys and is compared by rows, as are other keys whose hashes match.

#define TS_NO_ROW 0xFFFFFFFFu
#define TS_ALIAS 0xFFFFFFFFFFFFFFFEULL

// Every slot of `table` (2 · slots words) free.
extern "C" __global__ void ts_join_fill(ts_u64* __restrict__ table, ts_i64 slots) {
    ulonglong2* t = (ulonglong2*)table;
    for (ts_i64 s = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; s < slots; s += (ts_i64)gridDim.x * blockDim.x) {
        t[s] = make_ulonglong2(TS_EMPTY, (ts_u64)TS_NO_ROW);
    }
}

// Row i's stored hash, and whether equal stored hashes mean equal keys (`*exact`).
static __device__ __forceinline__ ts_u64 ts_join_hash(const ts_col* cols, int ncols, ts_i64 i, bool* exact) {
    ts_u64 h = ts_row_hash(cols, ncols, i);
    if (h == TS_EMPTY) h = TS_ALIAS;
    *exact = ncols == 1 && !ts_is_string(cols[0]) && h != TS_ALIAS;
    return h;
}

// The build side's rows into the table. A row that claims a free slot (its hash, by CAS)
// adds i + 1 to the slot's word, which turns TS_NO_ROW into i and carries one into the
// count; a row that finds its key adds one to the count. Each add returns the row's rank
// among its slot's rows (in no particular order). A row compared by rows waits for the
// slot's owner to have set its first row.
extern "C" __global__ void ts_join_insert(const ts_col* __restrict__ cols, int ncols, ts_i64 n,
                                          ts_u64* __restrict__ table, ts_u64 mask,
                                          unsigned* __restrict__ slot_of_row, unsigned* __restrict__ rank) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        if (!ts_keys_valid(cols, ncols, i)) {
            slot_of_row[i] = TS_NO_SLOT;
            continue;
        }
        bool exact;
        const ts_u64 h = ts_join_hash(cols, ncols, i, &exact);
        ts_u64 s = h & mask;
        unsigned r;
        for (;;) {
            ts_u64 held = table[2 * s];
            if (held == TS_EMPTY) {
                held = atomicCAS(&table[2 * s], TS_EMPTY, h);
                if (held == TS_EMPTY) {
                    r = (unsigned)(atomicAdd(&table[2 * s + 1], (ts_u64)i + 1) >> 32);
                    break;
                }
            }
            if (held == h) {
                bool same = exact;
                if (!same) {
                    ts_u64 word;
                    do {
                        word = *(volatile ts_u64*)&table[2 * s + 1];
                    } while ((unsigned)word == TS_NO_ROW);
                    same = ts_rows_equal(cols, (ts_i64)(word & 0xFFFFFFFFULL), cols, i, ncols);
                }
                if (same) {
                    r = (unsigned)(atomicAdd(&table[2 * s + 1], 1ULL << 32) >> 32);
                    break;
                }
            }
            s = (s + 1) & mask;
        }
        rank[i] = r;
        slot_of_row[i] = (unsigned)s;
    }
}

#define TS_RANGE_SLOTS 4

// Gives each slot's rows a range of `rows`, [start, start + count): a block's pass over
// 4 · 256 slots takes its ranges from `total` (zeroed) with one atomic, so ranges are in no
// particular order, and each slot's word becomes count << 32 | start. `most` (zeroed): the
// most rows of one slot. Launched with 256 threads per block.
extern "C" __global__ void ts_join_ranges(ts_u64* __restrict__ table, ts_i64 slots,
                                          unsigned* __restrict__ total, unsigned* __restrict__ most) {
    __shared__ unsigned warp_starts[8];
    __shared__ unsigned block_start;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const ts_i64 per_pass = (ts_i64)blockDim.x * TS_RANGE_SLOTS;
    unsigned mine = 0;
    for (ts_i64 b = blockIdx.x * per_pass; b < slots; b += (ts_i64)gridDim.x * per_pass) {
        const ts_i64 s0 = b + (ts_i64)threadIdx.x * TS_RANGE_SLOTS;
        unsigned c[TS_RANGE_SLOTS], sum = 0;
        for (int k = 0; k < TS_RANGE_SLOTS; ++k) {
            c[k] = s0 + k < slots ? (unsigned)(table[2 * (s0 + k) + 1] >> 32) : 0;
            sum += c[k];
            mine = max(mine, c[k]);
        }
        unsigned incl = sum;
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned v = __shfl_up_sync(0xFFFFFFFFu, incl, o);
            if (lane >= (unsigned)o) incl += v;
        }
        if (lane == 31) warp_starts[warp] = incl;
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned acc = 0;
            for (unsigned w = 0; w < (blockDim.x >> 5); ++w) {
                const unsigned t = warp_starts[w];
                warp_starts[w] = acc;
                acc += t;
            }
            block_start = acc ? atomicAdd(total, acc) : 0;
        }
        __syncthreads();
        unsigned at = block_start + warp_starts[warp] + incl - sum;
        for (int k = 0; k < TS_RANGE_SLOTS; ++k) {
            if (c[k]) table[2 * (s0 + k) + 1] = ((ts_u64)c[k] << 32) | at;
            at += c[k];
        }
        __syncthreads();
    }
    for (int o = 16; o > 0; o >>= 1) mine = max(mine, __shfl_down_sync(0xFFFFFFFFu, mine, o));
    if (lane == 0 && mine) atomicMax(most, mine);
}

// Each build row to its place in its slot's range of `rows`, by its rank: no atomics.
extern "C" __global__ void ts_join_place(ts_i64 n, const unsigned* __restrict__ slot_of_row,
                                         const unsigned* __restrict__ rank, const ts_u64* __restrict__ table,
                                         unsigned* __restrict__ rows) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        const unsigned s = slot_of_row[i];
        if (s != TS_NO_SLOT) rows[(unsigned)table[2 * (ts_u64)s + 1] + rank[i]] = (unsigned)i;
    }
}

// Sorts each slot's range of `rows` (insertion sort: the host sends only short ranges).
extern "C" __global__ void ts_join_sort(const ts_u64* __restrict__ table, ts_i64 slots, unsigned* __restrict__ rows) {
    for (ts_i64 s = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; s < slots; s += (ts_i64)gridDim.x * blockDim.x) {
        const ts_u64 word = table[2 * s + 1];
        const ts_i64 len = (ts_i64)(word >> 32);
        if (len < 2) continue;
        unsigned* r = rows + (unsigned)word;
        for (ts_i64 a = 1; a < len; ++a) {
            const unsigned v = r[a];
            ts_i64 b = a - 1;
            while (b >= 0 && r[b] > v) {
                r[b + 1] = r[b];
                --b;
            }
            r[b + 1] = v;
        }
    }
}

// Each probe row's first build row in `rows` (-1: none) and how many output rows it makes
// (its build rows; one with no build row when `keep_unmatched`, else none).
extern "C" __global__ void ts_join_probe(const ts_col* __restrict__ probe, const ts_col* __restrict__ build,
                                         int ncols, ts_i64 n, const ts_u64* __restrict__ table, ts_u64 mask,
                                         const unsigned* __restrict__ rows, int keep_unmatched,
                                         ts_i64* __restrict__ match_start, ts_u64* __restrict__ out_counts) {
    const ulonglong2* slots = (const ulonglong2*)table;
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        ts_i64 start = -1;
        ts_u64 count = keep_unmatched ? 1 : 0;
        if (ts_keys_valid(probe, ncols, i)) {
            bool exact;
            const ts_u64 h = ts_join_hash(probe, ncols, i, &exact);
            ts_u64 s = h & mask;
            for (;;) {
                const ulonglong2 slot = slots[s];
                if (slot.x == TS_EMPTY) break;
                // A row compared by rows is compared with the first of the slot's range.
                const unsigned at = (unsigned)slot.y;
                if (slot.x == h && (exact || ts_rows_equal(probe, i, build, (ts_i64)rows[at], ncols))) {
                    start = (ts_i64)at;
                    count = slot.y >> 32;
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        match_start[i] = start;
        out_counts[i] = count;
    }
}

// Writes every probe row's output rows: `offsets` (n + 1 words) is the output counts'
// exclusive prefix sum.
extern "C" __global__ void ts_join_emit(ts_i64 n, const ts_i64* __restrict__ match_start,
                                        const ts_u64* __restrict__ offsets, const unsigned* __restrict__ rows,
                                        unsigned* __restrict__ probe_out, unsigned* __restrict__ build_out) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        const ts_u64 at = offsets[i], len = offsets[i + 1] - at;
        const ts_i64 start = match_start[i];
        if (start < 0) {
            if (len) {
                probe_out[at] = (unsigned)i;
                build_out[at] = TS_NO_SLOT;
            }
            continue;
        }
        const unsigned* r = rows + start;
        for (ts_u64 k = 0; k < len; ++k) {
            probe_out[at + k] = (unsigned)i;
            build_out[at + k] = r[k];
        }
    }
}

// out[i] = src[idx[i]] for a column of T, 0 where idx[i] is TS_NO_SLOT (a left join's row
// without a match, null in the output).
template <typename T>
static __device__ __forceinline__ void ts_gather(const T* __restrict__ src, const unsigned* __restrict__ idx,
                                                 ts_i64 n, T* __restrict__ out) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x) {
        const unsigned r = idx[i];
        out[i] = r == TS_NO_SLOT ? (T)0 : src[r];
    }
}

extern "C" __global__ void ts_gather1(const unsigned char* src, const unsigned* idx, ts_i64 n, unsigned char* out) {
    ts_gather(src, idx, n, out);
}

extern "C" __global__ void ts_gather2(const unsigned short* src, const unsigned* idx, ts_i64 n, unsigned short* out) {
    ts_gather(src, idx, n, out);
}

extern "C" __global__ void ts_gather4(const unsigned* src, const unsigned* idx, ts_i64 n, unsigned* out) {
    ts_gather(src, idx, n, out);
}

extern "C" __global__ void ts_gather8(const ts_u64* src, const unsigned* idx, ts_i64 n, ts_u64* out) {
    ts_gather(src, idx, n, out);
}

// The gathered rows' validity as an Arrow bitmap, 32 rows a word: row i is valid when
// idx[i] names a row and `valid` (null: every row valid; `valid_offset` its bit of row 0)
// has that row's bit. One warp writes one word; the grid-stride step is a whole number of
// warps, so every lane of a warp takes the same turns.
extern "C" __global__ void ts_gather_valid(const unsigned char* __restrict__ valid, ts_i64 valid_offset,
                                           const unsigned* __restrict__ idx, ts_i64 n,
                                           unsigned* __restrict__ out) {
    const ts_i64 padded = (n + 31) & ~(ts_i64)31;
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < padded; i += (ts_i64)gridDim.x * blockDim.x) {
        bool v = false;
        if (i < n) {
            const unsigned r = idx[i];
            if (r != TS_NO_SLOT) {
                const ts_i64 b = valid_offset + r;
                v = valid == nullptr || ((valid[b >> 3] >> (b & 7)) & 1);
            }
        }
        const unsigned word = __ballot_sync(0xFFFFFFFFu, v);
        if ((threadIdx.x & 31) == 0) out[i >> 5] = word;
    }
}

// A string column's gathered rows, in three steps. ts_gather_str_len writes each output
// row's byte length (0 for none) into lens[i] (lens has n + 1 words: its exclusive prefix
// sum is then the output's offsets, the last word the total); `offs` are the column's
// offsets of row 0.., 4 bytes wide (Utf8) or 8 (LargeUtf8, `wide` set).
static __device__ __forceinline__ ts_i64 ts_str_offset(const void* offs, int wide, ts_i64 r) {
    return wide ? ((const ts_i64*)offs)[r] : (ts_i64)((const int*)offs)[r];
}

extern "C" __global__ void ts_gather_str_len(const void* __restrict__ offs, int wide,
                                             const unsigned* __restrict__ idx, ts_i64 n,
                                             ts_u64* __restrict__ lens) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i <= n; i += (ts_i64)gridDim.x * blockDim.x) {
        ts_u64 len = 0;
        if (i < n) {
            const unsigned r = idx[i];
            if (r != TS_NO_SLOT) len = (ts_u64)(ts_str_offset(offs, wide, (ts_i64)r + 1) - ts_str_offset(offs, wide, r));
        }
        lens[i] = len;
    }
}

// Copies each output row's bytes to its place (out_offs, the prefix sum above), one warp a
// row, the lanes taking every 32nd byte.
extern "C" __global__ void ts_gather_str_bytes(const unsigned char* __restrict__ bytes,
                                               const void* __restrict__ offs, int wide,
                                               const unsigned* __restrict__ idx, ts_i64 n,
                                               const ts_u64* __restrict__ out_offs,
                                               unsigned char* __restrict__ out) {
    const ts_i64 warps = ((ts_i64)gridDim.x * blockDim.x) >> 5;
    const unsigned lane = threadIdx.x & 31;
    for (ts_i64 i = (blockIdx.x * (ts_i64)blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        const unsigned r = idx[i];
        if (r == TS_NO_SLOT) continue;
        const ts_i64 from = ts_str_offset(offs, wide, r);
        const ts_u64 to = out_offs[i], len = out_offs[i + 1] - to;
        for (ts_u64 j = lane; j < len; j += 32) out[to + j] = bytes[from + j];
    }
}

// The output offsets as Utf8's 4-byte ones (the caller checked that the total fits).
extern "C" __global__ void ts_narrow_offsets(const ts_u64* __restrict__ wide_offs, ts_i64 n,
                                             int* __restrict__ out) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x)
        out[i] = (int)wide_offs[i];
}

// The rows a filter keeps, in row order: `scanned` is the exclusive prefix sum of the n + 1
// flags its predicate kernel wrote (1 for a kept row, 0 for the others and for the last
// word), so row i is kept when its sum steps up, and goes to place scanned[i].
extern "C" __global__ void ts_filter_place(const unsigned* __restrict__ scanned, ts_i64 n,
                                           unsigned* __restrict__ rows) {
    for (ts_i64 i = blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i < n; i += (ts_i64)gridDim.x * blockDim.x)
        if (scanned[i + 1] != scanned[i]) rows[scanned[i]] = (unsigned)i;
}
