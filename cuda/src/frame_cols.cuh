// Arrow columns as the device kernels read them: the `ts_col` descriptor (written by
// kernels/src/cuda/gpu/frame.rs), its kinds (kernels/src/cuda/frame_plan.rs's ColKind) and
// row readers. The first part of frame.cu and of every generated filter kernel
// (kernels/src/cuda/filter_gen.rs).

typedef long long ts_i64;
typedef unsigned long long ts_u64;

#define TS_COL_I8 0
#define TS_COL_I16 1
#define TS_COL_I32 2
#define TS_COL_I64 3
#define TS_COL_U8 4
#define TS_COL_U16 5
#define TS_COL_U32 6
#define TS_COL_U64 7
#define TS_COL_F32 8
#define TS_COL_F64 9
#define TS_COL_UTF8 10
#define TS_COL_LARGE_UTF8 11
#define TS_COL_BOOL 12

// One Arrow column on the device (five 8-byte words, as frame_plan.rs writes them).
struct ts_col {
    ts_i64 kind;
    const void* data;            // values, or a string column's bytes
    const void* offsets;         // a string column's offsets (i32 or i64), else null
    const unsigned char* valid;  // the validity bitmap, or null when every row is valid
    ts_i64 valid_offset;         // the bitmap's bit of row 0
};

static __device__ __forceinline__ bool ts_is_valid(const ts_col& c, ts_i64 i) {
    if (c.valid == nullptr) return true;
    const ts_i64 b = c.valid_offset + i;
    return (c.valid[b >> 3] >> (b & 7)) & 1;
}

// A boolean column's value (its bits start at bit 0 of `data`).
static __device__ __forceinline__ bool ts_bool_at(const ts_col& c, ts_i64 i) {
    return (((const unsigned char*)c.data)[i >> 3] >> (i & 7)) & 1;
}

// An integer column's value as i64 (UInt64 as its bits; a boolean as 0 or 1: a groupby key).
static __device__ __forceinline__ ts_i64 ts_int_at(const ts_col& c, ts_i64 i) {
    switch (c.kind) {
    case TS_COL_I8: return ((const signed char*)c.data)[i];
    case TS_COL_I16: return ((const short*)c.data)[i];
    case TS_COL_I32: return ((const int*)c.data)[i];
    case TS_COL_U8: return ((const unsigned char*)c.data)[i];
    case TS_COL_U16: return ((const unsigned short*)c.data)[i];
    case TS_COL_U32: return ((const unsigned*)c.data)[i];
    case TS_COL_BOOL: return ts_bool_at(c, i);
    default: return ((const ts_i64*)c.data)[i];
    }
}

static __device__ __forceinline__ double ts_float_at(const ts_col& c, ts_i64 i) {
    return c.kind == TS_COL_F32 ? (double)((const float*)c.data)[i] : ((const double*)c.data)[i];
}

static __device__ __forceinline__ bool ts_is_string(const ts_col& c) {
    return c.kind == TS_COL_UTF8 || c.kind == TS_COL_LARGE_UTF8;
}

static __device__ __forceinline__ const unsigned char* ts_str_at(const ts_col& c, ts_i64 i, ts_i64* len) {
    ts_i64 a, b;
    if (c.kind == TS_COL_UTF8) {
        const int* o = (const int*)c.offsets;
        a = o[i];
        b = o[i + 1];
    } else {
        const ts_i64* o = (const ts_i64*)c.offsets;
        a = o[i];
        b = o[i + 1];
    }
    *len = b - a;
    return (const unsigned char*)c.data + a;
}
