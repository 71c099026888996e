//! Values crossing between Python and Rust: dtypes by NumPy name, NumPy arrays to tensors
//! (one copy into the tensor's buffer), host tensors to NumPy arrays (no copy: the NumPy
//! array's memory is the Rust vector, kept alive by the array's base object), scalars.

use crate::errors::{type_error, value_error};
use numpy::{Complex32, Complex64};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};
use tessera::tensor::{self, Tensor};
use tessera::{Complex, DType, Scalar, C128};
use tessera_kernels::{Buffer, HostTensor};

/// The dtype of a NumPy name (`"float64"`, `"int32"`, `"bool"`…).
pub(crate) fn parse_dtype(name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| {
        type_error(format!(
            "dtype {name} is not supported; Tessera has {}",
            dtype_names()
        ))
    })
}

/// Every dtype's NumPy name, comma-separated (for errors that list them).
fn dtype_names() -> String {
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    names.join(", ")
}

/// A Python scalar (bool, int, float, complex, or a NumPy scalar of those kinds) as a
/// Tessera scalar; `None` for anything else. Python ints, floats and complex numbers are
/// "weak" (NEP 50): they take the other operand's dtype where it can hold them.
pub(crate) fn scalar_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Some(Scalar::I64(v)));
        }
        // Above int64's range: a uint64 value (the only dtype that holds it).
        let v: u64 = obj
            .extract()
            .map_err(|_| value_error(format!("integer {obj} does not fit in int64 or uint64")))?;
        return Ok(Some(Scalar::U64(v)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::F64(obj.extract()?)));
    }
    if let Ok(z) = obj.cast::<PyComplex>() {
        return Ok(Some(Scalar::C128(C128::new(z.real(), z.imag()))));
    }
    Ok(None)
}

/// Copies a C-contiguous NumPy array of a Tessera dtype into a tensor.
pub(crate) fn numpy_to_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    macro_rules! try_dtype {
        ($($t:ty),*) => {$(
            if let Ok(a) = obj.cast::<PyArrayDyn<$t>>() {
                let shape = a.shape().to_vec();
                let values = a.readonly();
                let data = values
                    .as_slice()
                    .map_err(|e| value_error(format!("array is not C-contiguous: {e}")))?
                    .to_vec();
                return Ok(tensor::from_vec(data, &shape));
            }
        )*};
    }
    try_dtype!(f64, f32, i64, i32, u8, bool, i8, i16, u16, u32, u64);
    // NumPy's complex values are num-complex's; Tessera's have the same layout.
    macro_rules! try_complex {
        ($($t:ty),*) => {$(
            if let Ok(a) = obj.cast::<PyArrayDyn<$t>>() {
                let shape = a.shape().to_vec();
                let values = a.readonly();
                let data: Vec<_> = values
                    .as_slice()
                    .map_err(|e| value_error(format!("array is not C-contiguous: {e}")))?
                    .iter()
                    .map(|z| Complex::new(z.re, z.im))
                    .collect();
                return Ok(tensor::from_vec(data, &shape));
            }
        )*};
    }
    try_complex!(Complex64, Complex32);
    Err(type_error(format!(
        "cannot make a tessera array from {}; pass a NumPy array of {}",
        obj.get_type(),
        dtype_names()
    )))
}

/// A host tensor as a NumPy array that owns the tensor's vector (no copy).
pub(crate) fn host_to_numpy(py: Python<'_>, host: HostTensor) -> PyResult<Bound<'_, PyAny>> {
    let shape = host.shape().to_vec();
    macro_rules! hand_over {
        ($($variant:ident),*) => {
            match host.into_data() {
                $(Buffer::$variant(v) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),)*
                // Into num-complex's type, which NumPy takes: the same layout, so the
                // vector is converted in place.
                Buffer::C64(v) => {
                    let v: Vec<Complex32> = v.into_iter().map(|z| Complex32::new(z.re, z.im)).collect();
                    PyArray1::from_vec(py, v).reshape(shape)?.into_any()
                }
                Buffer::C128(v) => {
                    let v: Vec<Complex64> = v.into_iter().map(|z| Complex64::new(z.re, z.im)).collect();
                    PyArray1::from_vec(py, v).reshape(shape)?.into_any()
                }
            }
        };
    }
    Ok(hand_over!(
        Bool, U8, I32, I64, F32, F64, I8, I16, U16, U32, U64
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_round_trip() {
        for name in [
            "bool",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "float32",
            "float64",
            "complex64",
            "complex128",
        ] {
            assert_eq!(parse_dtype(name).ok().map(DType::name), Some(name));
        }
    }
}
