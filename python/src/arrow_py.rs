//! Arrow record batches handed to pyarrow through the Arrow C stream
//! interface: pyarrow takes the columns' buffers as they are, so a table
//! of a million verdicts makes no Python object per row.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;

/// `batches` (all of `schema`) as one `pyarrow.Table`.
pub fn table<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyAny>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let mut stream = Box::new(FFI_ArrowArrayStream::new(Box::new(reader)));
    // pyarrow moves the stream out of this struct (leaving it released),
    // so dropping the box afterwards frees nothing twice.
    let address = &mut *stream as *mut FFI_ArrowArrayStream as usize;
    let reader = py
        .import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("_import_from_c", (address,))?;
    let table = reader.call_method0("read_all");
    drop(stream);
    table
}
